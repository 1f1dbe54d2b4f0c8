"""From a Python function to what a client sees: its description, parameters and schemas.

This module owns reading a decorated function: the summary and `Args:` of its Google-style
docstring, its parameters as pydantic fields (the `ToolContext` one left out), the pydantic
model that validates a call's arguments, and the JSON Schemas derived from both.

Invariants:
- a definition that cannot be described raises :class:`ToolDefinitionError` naming the tool
  and, when one is to blame, the parameter (never a pydantic error at request time);
- `x-mcp-header` declarations are checked against SEP-2243 wherever the schema comes from.
"""

from __future__ import annotations

import inspect
import re
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PydanticUserError, TypeAdapter, create_model

from mcp_tasks_aws.protocol.headers import (
    HEADER_KEYWORD,
    InvalidHeaderDeclaration,
    ParamHeader,
    param_headers_of,
)
from mcp_tasks_aws.tools.context import ToolContext

_NAME_PATTERN = re.compile(r"[A-Za-z0-9_.\-]{1,128}")


class ToolDefinitionError(ValueError):
    """A tool, prompt, resource or completer is defined in a way no client could use."""


def Header(name: str) -> Any:
    """Mirror a tool parameter into the `Mcp-Param-{name}` HTTP header (SEP-2243).

    Use it in the parameter's annotation: `region: Annotated[str, Header("Region")]`. Gateways
    and load balancers can then route on the value without reading the body; the server checks
    that the header matches the argument. Only `str`, `int` and `bool` parameters qualify, and
    the value is visible to every intermediary: never use it for secrets or personal data.
    """
    return Field(json_schema_extra={HEADER_KEYWORD: name})


def check_name(kind: str, name: str) -> None:
    if not _NAME_PATTERN.fullmatch(name):
        raise ToolDefinitionError(
            f"invalid {kind} name {name!r}: use 1-128 letters, digits, '_', '-' or '.'"
        )


def docstring_parts(fn: Any) -> tuple[str, dict[str, str]]:
    """(summary, {param: description}) from a Google-style docstring."""
    doc = inspect.getdoc(fn) or ""
    summary_lines: list[str] = []
    params: dict[str, str] = {}
    section = "summary"
    current: str | None = None
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped in ("Args:", "Arguments:", "Parameters:"):
            section = "args"
            continue
        if stripped.endswith(":") and stripped[:-1] in ("Returns", "Raises", "Yields", "Example"):
            section = "other"
            continue
        if section == "summary":
            summary_lines.append(line)
        elif section == "args" and stripped:
            match = re.match(r"^(\w+)(?:\s*\([^)]*\))?:\s*(.*)$", stripped)
            if match and line.startswith(("    ", "\t")) and not line.startswith("        "):
                current = match.group(1)
                params[current] = match.group(2)
            elif current:
                params[current] = f"{params[current]} {stripped}".strip()
    return "\n".join(summary_lines).strip(), params


def signature_fields(
    fn: Any, param_docs: dict[str, str], *, kind: str = "tool", name: str | None = None
) -> tuple[dict[str, Any], str | None]:
    """pydantic field definitions for the function's parameters, and the context param name."""
    label = f"{kind} {name or fn.__name__!r}"
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:  # a forward reference that does not resolve, say
        raise ToolDefinitionError(f"{label}: its type hints cannot be read ({exc})") from exc
    fields: dict[str, Any] = {}
    context_param: str | None = None
    for param_name, param in inspect.signature(fn).parameters.items():
        annotation = hints.get(param_name, Any)
        if annotation is ToolContext:
            context_param = param_name
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(
                f"{label}: *{param_name} cannot be described to a client; name each parameter"
            )
        default = ... if param.default is inspect.Parameter.empty else param.default
        description = param_docs.get(param_name)
        fields[param_name] = (
            annotation,
            Field(default, description=description) if description else default,
        )
    return fields, context_param


def _culprit(fields: dict[str, Any]) -> tuple[str, Any] | None:
    """The first parameter whose type pydantic cannot validate or describe."""
    for param_name, (annotation, _) in fields.items():
        try:
            TypeAdapter(annotation).json_schema()
        except (PydanticUserError, TypeError):
            return param_name, annotation
    return None


def _type_name(annotation: Any) -> str:
    return getattr(annotation, "__qualname__", None) or repr(annotation)


def arguments_model(
    label: str, model_name: str, fields: dict[str, Any]
) -> tuple[type[BaseModel], dict[str, Any]]:
    """The model validating a call's arguments, and its JSON Schema (titles dropped).

    ToolDefinitionError names the parameter whose type cannot be validated or described.
    """
    try:
        model = create_model(model_name, __config__=ConfigDict(extra="ignore"), **fields)
        schema = model.model_json_schema()
    except (PydanticUserError, TypeError) as exc:
        culprit = _culprit(fields)
        if culprit is None:
            raise ToolDefinitionError(f"{label}: its parameters cannot be described") from exc
        param_name, annotation = culprit
        raise ToolDefinitionError(
            f"{label}: parameter {param_name!r} is typed {_type_name(annotation)}, which has no "
            "JSON Schema; use JSON types (str, int, float, bool, list, dict), Literal, an Enum, "
            "a pydantic model, a dataclass or a TypedDict"
        ) from exc
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    schema["type"] = "object"
    schema.setdefault("properties", {})
    return model, schema


def output_adapter(label: str, annotation: Any) -> tuple[TypeAdapter[Any], dict[str, Any], bool]:
    """(adapter, outputSchema, wrapped) for a structured return annotation."""
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(annotation)
        schema = adapter.json_schema(mode="serialization")
    except (PydanticUserError, TypeError) as exc:
        raise ToolDefinitionError(
            f"{label}: its return type {_type_name(annotation)} has no JSON Schema; return "
            "str, content (Image, Audio, ...), a ToolResult, or a JSON-describable type"
        ) from exc
    if schema.get("type") == "object":
        return adapter, schema, False
    wrapped = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
    return adapter, wrapped, True


def header_params(label: str, input_schema: dict[str, Any]) -> list[ParamHeader]:
    """The schema's `x-mcp-header` parameters; ToolDefinitionError if one breaks SEP-2243."""
    try:
        return param_headers_of(input_schema)
    except InvalidHeaderDeclaration as exc:
        raise ToolDefinitionError(f"{label}: {exc}") from exc


def check_handwritten_schema(label: str, schema: Any, fields: dict[str, Any]) -> dict[str, Any]:
    """A hand-written `inputSchema`, checked against the function it describes.

    It must be a JSON object schema whose `properties` name every parameter, and whose
    `required` lists every parameter without a default (the function could not run without
    it). The schema is passed to clients exactly as written.
    """
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise ToolDefinitionError(f'{label}: input_schema must be a dict with "type": "object"')
    properties = schema.get("properties") or {}
    if not isinstance(properties, dict):
        raise ToolDefinitionError(f"{label}: input_schema's properties must be an object")
    required = set(schema.get("required") or [])
    for param_name, (_, default) in fields.items():
        if param_name not in properties:
            raise ToolDefinitionError(
                f"{label}: parameter {param_name!r} is not among input_schema's properties"
            )
        needed = default is ... or (hasattr(default, "is_required") and default.is_required())
        if needed and param_name not in required:
            raise ToolDefinitionError(
                f"{label}: parameter {param_name!r} has no default, so input_schema must list "
                "it in required"
            )
    return schema
