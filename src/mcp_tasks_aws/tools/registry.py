"""The tool and prompt registry: plain Python functions become MCP tools and prompts.

`ToolSet.tool` derives a tool's `inputSchema` from its type hints (through pydantic), its
description from its docstring, and its `outputSchema` from its return annotation. Schemas and
validators are built on first use, not at import, so a Lambda cold start pays only for the
tools it touches.

Invariants:
- every tool and prompt has a description (registration fails without one);
- a tool's `ToolContext` parameter is injected, never part of its input schema;
- the task policy is the server's decision, declared here per tool.
"""

from __future__ import annotations

import base64
import inspect
import re
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import Any, TypeVar, overload

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, create_model
from pydantic.fields import FieldInfo

from mcp_tasks_aws.tools.context import ToolContext

F = TypeVar("F", bound=Callable[..., Any])

_NAME_PATTERN = re.compile(r"[A-Za-z0-9_.\-]{1,128}")


class TaskPolicy(StrEnum):
    """How a tool runs when called."""

    INLINE = "inline"
    """Always answers within the call (multi round-trip input allowed)."""
    OPTIONAL = "optional"
    """Becomes a task when the request opts in to the Tasks extension; inline otherwise."""
    REQUIRED = "required"
    """Only runs as a task; a request without the opt-in is refused with -32021."""


@dataclass(frozen=True)
class ToolResult:
    """Full control over a tool's answer: content blocks, structured content, error flag."""

    content: list[dict[str, Any]] = field(default_factory=list)
    structured_content: Any = None
    is_error: bool = False

    def to_wire(self) -> dict[str, Any]:
        result: dict[str, Any] = {"content": self.content}
        if self.structured_content is not None:
            result["structuredContent"] = self.structured_content
        if self.is_error:
            result["isError"] = True
        return result


class ToolError(Exception):
    """Raise from a tool to answer with `isError: true` and exactly this message."""


def text_result(text: str, *, is_error: bool = False) -> dict[str, Any]:
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if is_error:
        result["isError"] = True
    return result


def _docstring_parts(fn: Any) -> tuple[str, dict[str, str]]:
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


def _signature_fields(fn: Any, param_docs: dict[str, str]) -> tuple[dict[str, Any], str | None]:
    """pydantic field definitions for the function's parameters, and the context param name."""
    hints = typing.get_type_hints(fn, include_extras=True)
    fields: dict[str, Any] = {}
    context_param: str | None = None
    for name, param in inspect.signature(fn).parameters.items():
        annotation = hints.get(name, Any)
        if annotation is ToolContext:
            context_param = name
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"{fn.__name__}: *args/**kwargs cannot be described to a client")
        default = ... if param.default is inspect.Parameter.empty else param.default
        description = param_docs.get(name)
        fields[name] = (
            annotation,
            Field(default, description=description) if description else default,
        )
    return fields, context_param


@dataclass
class _FunctionSpec:
    """What tools and prompts share: a described function whose signature is read lazily."""

    fn: Any
    name: str
    description: str
    title: str | None
    param_docs: dict[str, str]

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.fn)


@dataclass
class ToolSpec(_FunctionSpec):
    """One registered tool."""

    task: TaskPolicy
    ttl_ms: int | None
    poll_interval_ms: int | None
    annotations: dict[str, Any] | None
    prelude: bool = False
    scopes: frozenset[str] = frozenset()
    """OAuth scopes a caller's token must grant to call the tool (checked at the HTTP edge)."""

    @cached_property
    def _signature(self) -> tuple[type[BaseModel], str | None]:
        fields, context_param = _signature_fields(self.fn, self.param_docs)
        model = create_model(
            f"{self.name}_arguments",
            __config__=ConfigDict(extra="ignore"),
            **fields,
        )
        return model, context_param

    @property
    def arguments_model(self) -> type[BaseModel]:
        return self._signature[0]

    @property
    def context_param(self) -> str | None:
        return self._signature[1]

    @cached_property
    def input_schema(self) -> dict[str, Any]:
        schema = self.arguments_model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            if isinstance(prop, dict):
                prop.pop("title", None)
        schema["type"] = "object"
        schema.setdefault("properties", {})
        return schema

    @cached_property
    def _return(self) -> tuple[TypeAdapter[Any] | None, dict[str, Any] | None, bool]:
        """(adapter, outputSchema, wrapped) for a structured return; (None, None, False) if not."""
        annotation = typing.get_type_hints(self.fn).get("return", inspect.Signature.empty)
        if annotation in (inspect.Signature.empty, str, type(None), ToolResult, Any):
            return None, None, False
        adapter: TypeAdapter[Any] = TypeAdapter(annotation)
        schema = adapter.json_schema(mode="serialization")
        if schema.get("type") == "object":
            return adapter, schema, False
        wrapped = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
        return adapter, wrapped, True

    @property
    def output_schema(self) -> dict[str, Any] | None:
        return self._return[1]

    def to_wire(self) -> dict[str, Any]:
        tool: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
        }
        if self.title:
            tool["title"] = self.title
        if self.output_schema is not None:
            tool["outputSchema"] = self.output_schema
        if self.annotations:
            tool["annotations"] = self.annotations
        return tool

    def structure(self, value: Any) -> dict[str, Any]:
        """Turn what the function returned into a CallToolResult (without `resultType`)."""
        if isinstance(value, ToolResult):
            return value.to_wire()
        adapter, _, wrapped = self._return
        if adapter is None:
            if value is None:
                return {"content": []}
            if isinstance(value, str):
                return text_result(value)
            adapter = TypeAdapter(type(value))
        data = adapter.dump_python(value, mode="json", by_alias=True)
        text = adapter.dump_json(value, by_alias=True).decode()
        structured = {"result": data} if wrapped else data
        result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
        if isinstance(structured, dict):
            result["structuredContent"] = structured
        return result


@dataclass
class PromptSpec(_FunctionSpec):
    """One registered prompt: a function of string arguments returning messages."""

    @cached_property
    def _signature(self) -> tuple[list[dict[str, Any]], str | None]:
        fields, context_param = _signature_fields(self.fn, self.param_docs)
        arguments = []
        for name, (_, default) in fields.items():
            required = default is ... or (isinstance(default, FieldInfo) and default.is_required())
            argument: dict[str, Any] = {"name": name, "required": required}
            if name in self.param_docs:
                argument["description"] = self.param_docs[name]
            arguments.append(argument)
        return arguments, context_param

    @property
    def arguments(self) -> list[dict[str, Any]]:
        return self._signature[0]

    @property
    def context_param(self) -> str | None:
        return self._signature[1]

    def to_wire(self) -> dict[str, Any]:
        prompt: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "arguments": self.arguments,
        }
        if self.title:
            prompt["title"] = self.title
        return prompt

    def structure(self, value: Any) -> dict[str, Any]:
        """Turn what the function returned into a GetPromptResult (without `resultType`)."""
        if isinstance(value, str):
            messages = [{"role": "user", "content": {"type": "text", "text": value}}]
            return {"messages": messages}
        if isinstance(value, list):
            return {"messages": value}
        if isinstance(value, dict) and "messages" in value:
            return value
        raise TypeError(f"prompt {self.name!r} returned {type(value).__name__}")


@dataclass
class ResourceSpec:
    """One static resource: a URI whose contents a function returns (text or bytes)."""

    fn: Any
    uri: str
    name: str
    description: str
    mime_type: str

    def to_wire(self) -> dict[str, Any]:
        return {
            "uri": self.uri,
            "name": self.name,
            "description": self.description,
            "mimeType": self.mime_type,
        }

    def read(self) -> dict[str, Any]:
        value = self.fn()
        content: dict[str, Any] = {"uri": self.uri, "mimeType": self.mime_type}
        if isinstance(value, bytes):
            content["blob"] = base64.b64encode(value).decode()
        else:
            content["text"] = str(value)
        return {"contents": [content]}


class ToolSet:
    """A collection of tools and prompts: what one server serves.

    A tools module creates one at module level, named `tools`, and decorates its functions::

        tools = ToolSet()

        @tools.tool
        def add(a: int, b: int) -> int:
            \"\"\"Add two numbers.\"\"\"
            return a + b
    """

    def __init__(self, name: str = "mcp-tasks-aws", version: str = "0.1.0") -> None:
        self.name = name
        self.version = version
        self.tools: dict[str, ToolSpec] = {}
        self.prompts: dict[str, PromptSpec] = {}
        self.resources: dict[str, ResourceSpec] = {}

    @overload
    def tool(self, fn: F) -> F: ...

    @overload
    def tool(
        self,
        *,
        name: str | None = None,
        description: str | None = None,
        title: str | None = None,
        task: TaskPolicy | str = TaskPolicy.INLINE,
        ttl_ms: int | None = None,
        poll_interval_ms: int | None = None,
        annotations: dict[str, Any] | None = None,
        prelude: bool = False,
        scopes: Iterable[str] = (),
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        fn: Any = None,
        *,
        name: str | None = None,
        description: str | None = None,
        title: str | None = None,
        task: TaskPolicy | str = TaskPolicy.INLINE,
        ttl_ms: int | None = None,
        poll_interval_ms: int | None = None,
        annotations: dict[str, Any] | None = None,
        prelude: bool = False,
        scopes: Iterable[str] = (),
    ) -> Any:
        """Register a function as a tool (usable bare or with keyword options).

        `task` is the tool's task policy; `ttl_ms` and `poll_interval_ms` override the server's
        defaults for its tasks. With `prelude=True`, the code before `await ctx.run_as_task()`
        runs inline during the call (asking questions through multi round-trip results) and
        the rest runs as the task. `scopes` are the OAuth scopes a caller's token must grant
        (AuthMode OAUTH or JWT); a token without them gets 403 `insufficient_scope`.
        """
        if isinstance(scopes, str):
            raise TypeError("scopes: give a list of scope names, not one string")
        needed = frozenset(scopes)

        def register(func: Any) -> Any:
            tool_name = name or func.__name__
            text, param_docs = _describe("tool", tool_name, func, description, self.tools)
            self.tools[tool_name] = ToolSpec(
                fn=func,
                name=tool_name,
                description=text,
                title=title,
                task=TaskPolicy(task),
                ttl_ms=ttl_ms,
                poll_interval_ms=poll_interval_ms,
                annotations=annotations,
                param_docs=param_docs,
                prelude=prelude,
                scopes=needed,
            )
            return func

        return register(fn) if fn is not None else register

    @overload
    def prompt(self, fn: F) -> F: ...

    @overload
    def prompt(
        self, *, name: str | None = None, description: str | None = None, title: str | None = None
    ) -> Callable[[F], F]: ...

    def prompt(
        self,
        fn: Any = None,
        *,
        name: str | None = None,
        description: str | None = None,
        title: str | None = None,
    ) -> Any:
        """Register a function as a prompt (usable bare or with keyword options)."""

        def register(func: Any) -> Any:
            prompt_name = name or func.__name__
            text, param_docs = _describe("prompt", prompt_name, func, description, self.prompts)
            self.prompts[prompt_name] = PromptSpec(
                fn=func, name=prompt_name, description=text, title=title, param_docs=param_docs
            )
            return func

        return register(fn) if fn is not None else register

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        description: str | None = None,
        mime_type: str = "text/plain",
    ) -> Callable[[F], F]:
        """Register a function returning a resource's contents (str or bytes) under `uri`."""

        def register(func: F) -> F:
            summary, _ = _docstring_parts(func)
            text = description or summary
            if not text:
                raise ValueError(f"resource {uri!r} needs a description (docstring)")
            self.resources[uri] = ResourceSpec(
                fn=func, uri=uri, name=name or func.__name__, description=text, mime_type=mime_type
            )
            return func

        return register


def _describe(
    kind: str, name: str, func: Any, description: str | None, registered: dict[str, Any]
) -> tuple[str, dict[str, str]]:
    """Check a new tool's or prompt's name; return its description and parameter docs."""
    _check_name(name)
    if name in registered:
        raise ValueError(f"{kind} {name!r} is registered twice")
    summary, param_docs = _docstring_parts(func)
    text = description or summary
    if not text:
        raise ValueError(f"{kind} {name!r} needs a description (docstring)")
    return text, param_docs


def _check_name(name: str) -> None:
    if not _NAME_PATTERN.fullmatch(name):
        raise ValueError(f"invalid tool or prompt name {name!r}")
