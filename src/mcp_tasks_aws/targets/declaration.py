"""The managed-tools declaration: one YAML (or JSON) file, checked, loaded into models.

A declaration names existing AWS resources and how each becomes an MCP tool; the file format
is `declaration.schema.json` (shipped beside this module), and `docs/managed.md` walks through
it. Loading runs three checks, in order, and the first problem found is raised as ONE line
naming the file, the tool and the field (:class:`DeclarationError`), never a traceback:

1. the JSON Schema of the format (unknown fields, an unknown target kind, a missing name);
2. what a schema cannot say: ARNs of the right service and shape, tool schemas that are JSON
   Schema 2020-12 objects, URL placeholders that are arguments, auth with what it needs, a
   task policy the target can honour;
3. across tools: no two tools with one name, OpenAPI operations expanded (each needs an
   `operationId`; see `targets.openapi`).

A declared `inputSchema` names what reaches the target (a Lambda event, an execution's input,
a request body): `served_input_schema` is the schema the tool is listed and checked with, the
declared one closed to other arguments (`additionalProperties: false`, so a call naming one is
refused -32602 naming it) unless it says itself what it does with them (`additionalProperties`
or `unevaluatedProperties` at its root). Arguments a composed schema names (`allOf`, `anyOf`,
`oneOf`, `if`/`then`/`else`, `dependentSchemas`, local `$ref`s) are among the declared ones.

What comes out is a :class:`Declaration` of pydantic models, every path resolved against the
declaration's folder. Nothing here calls AWS or builds a tool: `targets.tools` does that.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from functools import cache
from pathlib import Path
from typing import Any, Final

from mcp_tasks_aws.targets.models import (
    COMPLETE_SECRET_NAME,
    FUNCTION_ARN,
    FUNCTION_NAME,
    JSON_SCHEMA_2020_12,
    REGION_PATTERN,
    SECRET_ARN,
    STATE_MACHINE_ARN,
    TARGET_KINDS,
    Auth,
    AwsPlace,
    Declaration,
    DeclarationError,
    HttpTarget,
    LambdaTarget,
    LocalUse,
    OpenApiSource,
    StateMachineTarget,
    ToolDeclaration,
    read_document,
)
from mcp_tasks_aws.targets.openapi import operation_tools

SCHEMA_FILE: Final = Path(__file__).with_name("declaration.schema.json")
_QUALIFIED_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}(?::(?:\$LATEST|[A-Za-z0-9_-]{1,128}))?")

__all__ = [
    "Declaration",
    "DeclarationError",
    "ToolDeclaration",
    "check_schema",
    "check_tool",
    "load_declaration",
    "served_input_schema",
]


# -- loading ---------------------------------------------------------------------------------


@cache
def _format_validator() -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))


def load_declaration(path: str | Path, base: Path | None = None) -> Declaration:
    """Read, check and load the declaration at `path` (relative to `base`, else the current
    directory); DeclarationError says in one line what is wrong, and where."""
    where = Path(path)
    if not where.is_absolute():
        where = (base or Path.cwd()) / where
    file = str(path)
    try:
        data = read_document(where)
    except FileNotFoundError:
        raise DeclarationError(file, "file", "no such file") from None
    except OSError as exc:
        raise DeclarationError(file, "file", f"cannot be read ({_first_line(exc)})") from None
    except Exception as exc:  # JSON or YAML syntax (yaml.YAMLError is no ValueError)
        raise DeclarationError(file, "file", f"is not YAML or JSON ({_first_line(exc)})") from None
    if not isinstance(data, dict):
        raise DeclarationError(file, "file", "must hold a mapping (version, tools, ...)")
    _check_format(file, data)
    folder = where.parent
    tools = [_tool(file, folder, raw) for raw in data.get("tools", [])]
    for index, source in enumerate(data.get("openapi", [])):
        tools += _openapi_tools(file, folder, index, source)
    seen: set[str] = set()
    for tool in tools:
        if tool.name in seen:
            raise DeclarationError(file, "name", "two tools have this name", tool=tool.name)
        seen.add(tool.name)
    return Declaration(
        path=where,
        name=data.get("name"),
        aws=AwsPlace.model_validate(data.get("aws", {})),
        local=LocalUse.model_validate(data.get("local", {})),
        tools=tuple(tools),
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:200]


def _check_format(file: str, data: dict[str, Any]) -> None:
    from jsonschema.exceptions import best_match

    error = best_match(_format_validator().iter_errors(data))
    if error is None:
        return
    path = list(error.absolute_path)
    tool: str | None = None
    if len(path) >= 2 and path[0] in ("tools", "openapi") and isinstance(path[1], int):
        entry = data[path[0]][path[1]]
        named = entry.get("name") if isinstance(entry, dict) else None
        if path[0] == "tools":
            tool = named if isinstance(named, str) else f"#{path[1] + 1}"
        else:
            tool = f"openapi #{path[1] + 1}"
        path = path[2:]
    field = ".".join(str(part) for part in path) or "(top level)"
    raise DeclarationError(file, field, _problem(error, field), tool=tool)


def _problem(error: Any, field: str) -> str:
    keyword, expected, instance = error.validator, error.validator_value, error.instance
    if field.endswith("kind") and keyword in ("enum", "const"):
        return f"unknown target kind {instance!r} (one of: {', '.join(TARGET_KINDS)})"
    if keyword == "enum":
        return f"{instance!r} is not one of: {', '.join(str(v) for v in expected)}"
    if keyword == "required" and isinstance(instance, dict):
        missing = [name for name in expected if name not in instance]
        return "missing " + ", ".join(repr(name) for name in missing)
    if keyword == "additionalProperties" and isinstance(instance, dict):
        known = set(error.schema.get("properties", {}))
        return "unknown field " + ", ".join(repr(k) for k in instance if k not in known)
    if keyword == "type":
        return f"must be of type {expected}"
    if keyword == "pattern":
        return f"{instance!r} does not match {expected}"
    if keyword == "const":
        return f"must be {expected!r}"
    return _first_line(error)


def _beside(folder: Path, reference: Any) -> Path:
    """A file the declaration references, `..` read as written (as `make build` stages it:
    scripts/sam_tools.py), not through whatever folder a link names."""
    return Path(os.path.normpath(folder / str(reference)))


def _tool(file: str, folder: Path, raw: dict[str, Any]) -> ToolDeclaration:
    target = dict(raw["target"])
    if target.get("kind") == "stateMachine" and "definition" in target:
        target["definition"] = _beside(folder, target["definition"])
    tool = ToolDeclaration.model_validate({**raw, "target": target})
    check_tool(file, tool)
    return tool


def check_tool(file: str, tool: ToolDeclaration) -> None:
    """What the format's schema cannot say about one tool (see the module docstring)."""

    def fail(field: str, problem: str) -> DeclarationError:
        return DeclarationError(file, field, problem, tool=tool.name)

    check_schema(file, tool.name, "inputSchema", tool.input_schema)
    try:
        served_input_schema(tool.input_schema)
    except _UnreadableRef as exc:
        raise fail(
            f"inputSchema.{exc.where}",
            f"{exc.ref!r} cannot be read here to know which arguments the target takes: refer "
            "inside the schema (#/$defs/...), or say additionalProperties or "
            "unevaluatedProperties at its root",
        ) from None
    if tool.output_schema is not None:
        check_schema(file, tool.name, "outputSchema", tool.output_schema)
    target = tool.target
    policy = tool.task_policy
    if isinstance(target, LambdaTarget):
        if not (
            FUNCTION_NAME.fullmatch(target.function) or FUNCTION_ARN.fullmatch(target.function)
        ):
            raise fail(
                "target.function",
                f"{target.function!r} is neither a function name nor a Lambda function ARN "
                "(arn:aws:lambda:REGION:ACCOUNT:function:NAME[:QUALIFIER])",
            )
        if target.invocation == "task" and policy == "inline":
            raise fail("task", "a Lambda target invoked as a task cannot be inline")
    elif isinstance(target, StateMachineTarget):
        if not STATE_MACHINE_ARN.fullmatch(target.arn):
            raise fail(
                "target.arn",
                f"{target.arn!r} is not a state machine ARN "
                "(arn:aws:states:REGION:ACCOUNT:stateMachine:NAME)",
            )
        if target.type == "STANDARD" and policy != "required":
            raise fail("task", "a Standard state machine runs only as a task: use required")
    else:
        _check_http(file, tool, target)


HEADERS_OF_THE_CONNECTION = frozenset(
    {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "upgrade",
        "expect",
    }
)
"""Headers that frame or route the request: one a tool's argument (or a declaration) set could
send a body of another length than it says, or the request to another host."""


def _check_http(file: str, tool: ToolDeclaration, target: HttpTarget) -> None:
    def fail(field: str, problem: str) -> DeclarationError:
        return DeclarationError(file, field, problem, tool=tool.name)

    if not target.url.startswith(("https://", "http://")):
        raise fail("target.url", f"{target.url!r} is not an http(s) URL")
    for header in [*target.headers, *target.header_arguments]:
        if header.lower() in HEADERS_OF_THE_CONNECTION:
            raise fail(
                "target.headerArguments" if header in target.header_arguments else "target.headers",
                f"{header!r} is set by the HTTP client from the request itself",
            )
    properties = tool.input_schema.get("properties", {})
    for name in [*target.placeholders, *target.query, *target.header_arguments.values()]:
        if name not in properties:
            raise fail("target.url", f"{{{name}}} is not one of inputSchema's properties")
    _check_auth(file, tool.name, "target.auth", target.auth)
    if target.auth.type == "sigv4" and target.auth.region is None:
        host = target.url.split("/")[2]
        if not re.search(rf"\.{REGION_PATTERN}\.", host):
            raise fail("target.auth.region", "sigv4 needs it: the URL names no AWS region")


def _check_auth(file: str, tool: str, field: str, auth: Auth) -> None:
    if auth.type in ("apiKey", "bearer"):
        if auth.secret_arn is None:
            raise DeclarationError(file, f"{field}.secretArn", f"{auth.type} needs it", tool=tool)
        secret = SECRET_ARN.fullmatch(auth.secret_arn)
        if secret is None:
            raise DeclarationError(
                file,
                f"{field}.secretArn",
                f"{auth.secret_arn!r} is not a Secrets Manager secret ARN",
                tool=tool,
            )
        if not COMPLETE_SECRET_NAME.fullmatch(secret["name"]):
            raise DeclarationError(
                file,
                f"{field}.secretArn",
                f"{auth.secret_arn!r} is a partial secret ARN: give the complete one, ending in "
                f"the 6 characters Secrets Manager adds to the name ({secret['name']}-AbCdEf); "
                "IAM matches only that",
                tool=tool,
            )
    if auth.function is not None:
        if auth.type != "sigv4" or auth.service != "lambda":
            raise DeclarationError(
                file,
                f"{field}.function",
                "only sigv4 for service lambda (a function URL) names a function",
                tool=tool,
            )
        # NAME:QUALIFIER names an alias's URL.
        if not (_QUALIFIED_NAME.fullmatch(auth.function) or FUNCTION_ARN.fullmatch(auth.function)):
            raise DeclarationError(
                file,
                f"{field}.function",
                f"{auth.function!r} is neither a function name nor a Lambda function ARN",
                tool=tool,
            )


def check_schema(file: str, tool: str, field: str, schema: dict[str, Any]) -> None:
    """A tool's input or output schema must be a JSON Schema 2020-12 object schema."""
    declared = schema.get("$schema")
    if declared is not None and str(declared).rstrip("#") != JSON_SCHEMA_2020_12:
        raise DeclarationError(
            file, f"{field}.$schema", f"{declared!r} is not JSON Schema 2020-12", tool=tool
        )
    if schema.get("type") != "object":
        raise DeclarationError(file, f"{field}.type", 'must be "object"', tool=tool)
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        inner = ".".join(str(p) for p in exc.absolute_path)
        where = f"{field}.{inner}" if inner else field
        raise DeclarationError(
            file, where, f"not valid JSON Schema 2020-12 ({exc.validator} failed)", tool=tool
        ) from None


def _openapi_tools(
    file: str, folder: Path, index: int, raw: dict[str, Any]
) -> list[ToolDeclaration]:
    source = OpenApiSource.model_validate({**raw, "document": _beside(folder, raw["document"])})
    _check_auth(file, f"openapi #{index + 1}", "auth", source.auth)
    tools = operation_tools(file, source)
    for tool in tools:
        check_tool(file, tool)
    return tools


# -- which arguments a declared schema takes ---------------------------------------------------

_SAYS_WHAT_ELSE: Final = ("additionalProperties", "unevaluatedProperties")
_IN_PLACE: Final = ("allOf", "anyOf", "oneOf")
_CONDITIONAL: Final = ("if", "then", "else")


class _UnreadableRef(Exception):
    def __init__(self, where: str, ref: str) -> None:
        super().__init__(where)
        self.where = where
        self.ref = ref


def served_input_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The declared `inputSchema` as the tool is listed and checked (module docstring): closed
    to arguments it does not name, those of its subschemas at the root's level listed among
    its `properties` (as `{}`: the subschemas still say what they must be)."""
    if any(keyword in schema for keyword in _SAYS_WHAT_ELSE):
        return schema
    names: dict[str, None] = {}
    patterns: dict[str, None] = {}
    _collect(schema, schema, "", names, patterns, set())
    served = dict(schema)
    properties = dict(schema.get("properties") or {})
    for name in names:
        properties.setdefault(name, {})
    if properties:
        served["properties"] = properties
    declared_patterns = dict(schema.get("patternProperties") or {})
    for pattern in patterns:
        declared_patterns.setdefault(pattern, {})
    if declared_patterns:
        served["patternProperties"] = declared_patterns
    served["additionalProperties"] = False
    return served


def _collect(
    node: Any,
    root: dict[str, Any],
    where: str,
    names: dict[str, None],
    patterns: dict[str, None],
    followed: set[str],
) -> None:
    """The property names and patterns `node` declares for the object it describes itself."""
    if not isinstance(node, dict):
        return
    here = f"{where}." if where else ""
    names.update(dict.fromkeys(str(n) for n in (node.get("properties") or {})))
    patterns.update(dict.fromkeys(str(p) for p in (node.get("patternProperties") or {})))
    for keyword in _IN_PLACE:
        for index, sub in enumerate(node.get(keyword) or []):
            _collect(sub, root, f"{here}{keyword}.{index}", names, patterns, followed)
    for keyword in _CONDITIONAL:
        _collect(node.get(keyword), root, f"{here}{keyword}", names, patterns, followed)
    for name, sub in (node.get("dependentSchemas") or {}).items():
        _collect(sub, root, f"{here}dependentSchemas.{name}", names, patterns, followed)
    ref = node.get("$ref")
    if isinstance(ref, str) and ref not in followed:
        followed.add(ref)
        target = _local(root, ref)
        if target is None:
            raise _UnreadableRef(f"{here}$ref", ref)
        _collect(target, root, f"{here}$ref", names, patterns, followed)


def _local(root: dict[str, Any], ref: str) -> Any:
    """What a local `$ref` (`#`, `#/$defs/x`) points at in `root`; None for any other."""
    if ref != "#" and not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/") if ref != "#" else []:
        part = urllib.parse.unquote(part).replace("~1", "/").replace("~0", "~")
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return None
    return node
