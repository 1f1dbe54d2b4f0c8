"""OpenAPI 3.0 and 3.1 documents as HTTP tools: each operation with an `operationId` is one.

- The tool's name is the `operationId` (held to the rule of every tool name: 1-128 letters,
  digits, `_`, `-`, `.`; one that breaks it is refused unless `operations` leaves it out);
  its title the summary; its description the description (or the summary, or `METHOD /path`).
- `inputSchema`: one property per parameter (`in: path`, `query`, `header`; cookies are
  refused), and `body` for a JSON request body (`application/json`), each required as the
  document says.
- `outputSchema`: the JSON schema of the first 2xx response, when it is an object schema
  (else the answer is JSON text).
- `$ref`s inside the document are inlined (a cyclic one is refused); OpenAPI 3.0's schema
  dialect (`nullable`, boolean `exclusiveMinimum`, `example`) is rewritten as JSON Schema
  2020-12, which 3.1 already is.
- Annotations follow the method: GET and HEAD read only, PUT idempotent, DELETE destructive.

A problem is a `DeclarationError` naming the document, the operation and the field.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from mcp_tasks_aws.targets.models import (
    DeclarationError,
    HttpTarget,
    ToolDeclaration,
    read_document,
)

if TYPE_CHECKING:
    from mcp_tasks_aws.targets.models import OpenApiSource

METHODS: Final = ("get", "put", "post", "delete", "patch", "head")
_ANNOTATIONS: Final = {
    "get": {"readOnlyHint": True},
    "head": {"readOnlyHint": True},
    "put": {"idempotentHint": True},
    "delete": {"destructiveHint": True},
}
_OPENAPI_ONLY: Final = ("example", "xml", "externalDocs", "discriminator", "nullable")
BODY: Final = "body"
IGNORED_HEADERS: Final = frozenset({"accept", "content-type", "authorization"})
"""Header parameters the OpenAPI specification says to ignore (3.0 and 3.1, Parameter Object):
the target's own `accept` and `content-type`, and its `auth`, set those."""


def operation_tools(file: str, source: OpenApiSource) -> list[ToolDeclaration]:
    """The tools of `source`'s document (only `source.operations`, when given)."""
    document_file = str(source.document)
    try:
        document = read_document(Path(source.document))
    except FileNotFoundError:
        raise DeclarationError(file, "openapi.document", f"{document_file}: no such file") from None
    except Exception as exc:
        raise DeclarationError(
            file, "openapi.document", f"{document_file} is not YAML or JSON ({exc})"
        ) from None
    if not isinstance(document, dict) or not str(document.get("openapi", "")).startswith(
        ("3.0", "3.1")
    ):
        raise DeclarationError(document_file, "openapi", "not an OpenAPI 3.0 or 3.1 document")
    refs = _Refs(document_file, document)
    base = source.base_url or _server_url(document_file, document)
    tools = []
    found = set()
    for path, item in (document.get("paths") or {}).items():
        item = refs.resolve(item, f"paths.{path}")
        shared = item.get("parameters", [])
        for method in METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            where = f"{method.upper()} {path}"
            operation_id = operation.get("operationId")
            if not operation_id:
                raise DeclarationError(
                    document_file,
                    f"paths.{path}.{method}.operationId",
                    "missing (each operation becomes a tool named by its operationId)",
                    tool=where,
                )
            found.add(str(operation_id))  # what `operations` may name: text
            if source.operations is not None and operation_id not in source.operations:
                continue
            _check_name(document_file, f"paths.{path}.{method}.operationId", where, operation_id)
            tools.append(_tool(document_file, refs, base, path, method, operation, shared, source))
    for wanted in source.operations or ():
        if wanted not in found:
            raise DeclarationError(
                file, "openapi.operations", f"{document_file} has no operation {wanted!r}"
            )
    return tools


def _check_name(file: str, field: str, where: str, operation_id: Any) -> None:
    """An operationId names a tool: text (YAML reads `operationId: [a]` as a list), and the
    rule every tool name follows (`tools.signature`)."""
    from mcp_tasks_aws.tools.signature import ToolDefinitionError, check_name

    if not isinstance(operation_id, str):
        problem = f"{operation_id!r} is not text (each operation becomes a tool named by it)"
        raise DeclarationError(file, field, problem, tool=where)
    try:
        check_name("tool", operation_id)
    except ToolDefinitionError as exc:
        problem = f"{exc} (or leave the operation out with operations)"
        raise DeclarationError(file, field, problem, tool=where) from None


def _server_url(file: str, document: dict[str, Any]) -> str:
    servers = document.get("servers") or []
    if not servers or not isinstance(servers[0], dict) or "url" not in servers[0]:
        raise DeclarationError(file, "servers", "no server URL: give baseUrl in the declaration")
    url = str(servers[0]["url"])
    for name, variable in (servers[0].get("variables") or {}).items():
        url = url.replace("{" + name + "}", str(variable.get("default", "")))
    if not url.startswith(("http://", "https://")):
        raise DeclarationError(
            file, "servers.0.url", f"{url!r} is relative: give baseUrl in the declaration"
        )
    return url.rstrip("/")


def _tool(
    file: str,
    refs: _Refs,
    base: str,
    path: str,
    method: str,
    operation: dict[str, Any],
    shared: list[Any],
    source: OpenApiSource,
) -> ToolDeclaration:
    operation_id = str(operation["operationId"])
    here = f"paths.{path}.{method}"
    parameters: dict[tuple[str, str], dict[str, Any]] = {}
    for index, raw in enumerate([*shared, *operation.get("parameters", [])]):
        parameter = refs.resolve(raw, f"{here}.parameters.{index}")
        parameters[(str(parameter.get("name")), str(parameter.get("in")))] = parameter
    properties: dict[str, Any] = {}
    required: list[str] = []
    query: list[str] = []
    headers: dict[str, str] = {}
    for (name, place), parameter in parameters.items():
        if place == "header" and name.lower() in IGNORED_HEADERS:
            continue  # OpenAPI: such a definition "SHALL be ignored"
        field = f"{here}.parameters.{name}"
        if place not in ("path", "query", "header"):
            raise DeclarationError(
                file, field, f"parameters in {place!r} are not supported", tool=operation_id
            )
        if name in properties:
            raise DeclarationError(file, field, "two parameters share this name", tool=operation_id)
        schema = refs.schema(parameter.get("schema") or {}, f"{field}.schema")
        if parameter.get("description"):
            schema = {**schema, "description": str(parameter["description"])}
        properties[name] = schema
        if parameter.get("required") or place == "path":
            required.append(name)
        if place == "query":
            query.append(name)
        elif place == "header":
            headers[name] = name
    body_argument = None
    if "requestBody" in operation:
        body = refs.resolve(operation["requestBody"], f"{here}.requestBody")
        content = body.get("content") or {}
        media = content.get("application/json")
        if media is None:
            raise DeclarationError(
                file,
                f"{here}.requestBody.content",
                "only application/json request bodies are supported",
                tool=operation_id,
            )
        if BODY in properties:
            raise DeclarationError(
                file,
                f"{here}.parameters.{BODY}",
                "clashes with the request body",
                tool=operation_id,
            )
        schema = refs.schema(media.get("schema") or {}, f"{here}.requestBody.schema")
        if body.get("description"):
            schema = {**schema, "description": str(body["description"])}
        properties[BODY] = schema
        body_argument = BODY
        if body.get("required"):
            required.append(BODY)
    input_schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        input_schema["required"] = required
    summary = operation.get("summary")
    description = operation.get("description") or summary or f"{method.upper()} {path}"
    return ToolDeclaration.model_validate(
        {
            "name": operation_id,
            "title": summary,
            "description": str(description),
            "inputSchema": input_schema,
            "outputSchema": _output_schema(file, refs, here, operation),
            "annotations": _ANNOTATIONS.get(method),
            "task": source.task,
            "ttlMs": source.ttl_ms,
            "pollIntervalMs": source.poll_interval_ms,
            "maxPollIntervalMs": source.max_poll_interval_ms,
            "scopes": source.scopes,
            "target": HttpTarget.model_validate(
                {
                    "kind": "http",
                    "method": method.upper(),
                    "url": base + path,
                    "query": query,
                    "headerArguments": headers,
                    "bodyArgument": body_argument,
                    "auth": source.auth,
                    "timeoutSeconds": source.timeout_seconds,
                }
            ),
        }
    )


def _output_schema(
    file: str, refs: _Refs, here: str, operation: dict[str, Any]
) -> dict[str, Any] | None:
    responses = operation.get("responses") or {}
    for status in sorted(str(code) for code in responses):
        if not status.startswith("2"):
            continue
        response = refs.resolve(responses.get(status, responses.get(_as_int(status))), here)
        media = (response.get("content") or {}).get("application/json")
        if media is None or "schema" not in media:
            return None
        schema = refs.schema(media["schema"], f"{here}.responses.{status}.schema")
        return schema if schema.get("type") == "object" else None
    return None


def _as_int(status: str) -> Any:
    return int(status) if status.isdigit() else status


class _Refs:
    """Inlines `$ref`s of one document and rewrites OpenAPI 3.0 schemas as 2020-12."""

    def __init__(self, file: str, document: dict[str, Any]) -> None:
        self.file = file
        self.document = document
        self.dialect_30 = str(document.get("openapi", "")).startswith("3.0")

    def _target(self, ref: str, field: str) -> Any:
        if not ref.startswith("#/"):
            raise DeclarationError(self.file, field, f"only local $refs are supported: {ref!r}")
        node: Any = self.document
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or part not in node:
                raise DeclarationError(self.file, field, f"$ref {ref!r} points at nothing")
            node = node[part]
        return node

    def resolve(self, node: Any, field: str) -> Any:
        """`node` with a top-level `$ref` followed (objects that are not schemas)."""
        seen: set[str] = set()
        while isinstance(node, dict) and "$ref" in node:
            ref = str(node["$ref"])
            if ref in seen:
                raise DeclarationError(self.file, field, f"$ref {ref!r} is cyclic")
            seen.add(ref)
            node = self._target(ref, field)
        return node if isinstance(node, dict) else {}

    def schema(self, schema: Any, field: str, seen: tuple[str, ...] = ()) -> dict[str, Any]:
        """A self-contained JSON Schema 2020-12 copy of an OpenAPI schema."""
        if not isinstance(schema, dict):
            return {}
        if "$ref" in schema:
            ref = str(schema["$ref"])
            if ref in seen:
                raise DeclarationError(self.file, field, f"$ref {ref!r} is recursive")
            return self.schema(self._target(ref, field), field, (*seen, ref))
        result: dict[str, Any] = {}
        for key, value in schema.items():
            if key in _OPENAPI_ONLY:
                continue
            if key in ("properties", "patternProperties", "$defs", "definitions"):
                result[key] = {
                    name: self.schema(sub, f"{field}.{name}", seen) for name, sub in value.items()
                }
            elif key in ("items", "additionalProperties", "not", "contains") and isinstance(
                value, dict
            ):
                result[key] = self.schema(value, f"{field}.{key}", seen)
            elif key in ("allOf", "anyOf", "oneOf", "prefixItems") and isinstance(value, list):
                result[key] = [self.schema(sub, f"{field}.{key}", seen) for sub in value]
            else:
                result[key] = copy.deepcopy(value)
        if self.dialect_30:
            result = _from_openapi_30(schema, result)
        return result


def _from_openapi_30(original: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    if original.get("nullable") is True and isinstance(schema.get("type"), str):
        schema["type"] = [schema["type"], "null"]
    for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if schema.get(bound) is True and limit in schema:
            schema[bound] = schema.pop(limit)
        elif schema.get(bound) is False:
            schema.pop(bound)
    return schema
