"""Resources: static ones at a fixed URI, and templates (RFC 6570 level 1) that match many.

`@tools.resource("docs://readme")` registers a function returning a resource's contents
(`str` for text, `bytes` for binary); `@tools.resource("users://{id}/profile")` registers a
template whose variables become the function's arguments. Reading a URI tries the static
resources first, then the templates in registration order.

Invariants:
- a template's variables are exactly its function's parameters (checked at registration);
- a variable matches one path segment (`/`, `?` and `#` end it), percent-decoded;
- a URI that matches nothing, and a reader raising :class:`ResourceNotFound`, answer -32602
  with `data.uri` (SEP-2164); any other failure of a reader answers -32603 naming the URI,
  with the cause in the logs only.
"""

from __future__ import annotations

import base64
import logging
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from mcp_tasks_aws.protocol.errors import InvalidParams, McpError
from mcp_tasks_aws.tools.content import ContentError, check_binary_budget
from mcp_tasks_aws.tools.signature import ToolDefinitionError, signature_fields

logger = logging.getLogger(__name__)

_EXPRESSION = re.compile(r"\{([^{}]*)\}")
_VARNAME = re.compile(r"[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*")
_LITERAL = re.compile(r"[^{}\s\"<>\\^`|]*")


class ResourceNotFound(Exception):
    """Raise from a resource function when what the URI names does not exist."""


class UriTemplate:
    """An RFC 6570 level 1 template (`{var}` expressions only), matched against URIs."""

    def __init__(self, template: str) -> None:
        self.template = template
        pattern = ""
        variables: list[str] = []
        position = 0
        for match in _EXPRESSION.finditer(template):
            literal = template[position : match.start()]
            if not _LITERAL.fullmatch(literal):
                raise ValueError(f"{template!r}: {literal!r} is not allowed outside {{...}}")
            if position and not literal and variables:
                raise ValueError(f"{template!r}: two variables need something between them")
            name = match.group(1)
            if not _VARNAME.fullmatch(name):
                raise ValueError(
                    f"{template!r}: {{{name}}} is not a level 1 expression (only {{name}}; "
                    "operators such as + # / ? and lists are not supported)"
                )
            if name in variables:
                raise ValueError(f"{template!r}: {{{name}}} appears twice")
            variables.append(name)
            pattern += re.escape(literal) + f"(?P<v{len(variables) - 1}>[^/?#]*)"
            position = match.end()
        tail = template[position:]
        if not _LITERAL.fullmatch(tail):
            raise ValueError(f"{template!r}: {tail!r} is not allowed outside {{...}}")
        self.variables = tuple(variables)
        self._regex = re.compile(pattern + re.escape(tail))

    @staticmethod
    def is_template(uri: str) -> bool:
        return "{" in uri or "}" in uri

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables' values if `uri` is an expansion of this template, else None."""
        found = self._regex.fullmatch(uri)
        if found is None:
            return None
        try:
            return {
                name: unquote(found.group(f"v{i}"), errors="strict")
                for i, name in enumerate(self.variables)
            }
        except UnicodeDecodeError:
            return None


def _contents(uri: str, mime_type: str | None, value: Any) -> dict[str, Any]:
    content: dict[str, Any] = {"uri": uri}
    if mime_type:
        content["mimeType"] = mime_type
    if isinstance(value, bytes | bytearray):
        content["blob"] = base64.b64encode(value).decode("ascii")
    elif isinstance(value, str):
        content["text"] = value
    else:
        raise TypeError(f"a resource function returns str or bytes, not {type(value).__name__}")
    return content


def _listed(spec: ResourceSpec | ResourceTemplateSpec, address: dict[str, str]) -> dict[str, Any]:
    """A resource's or template's entry in its list: its address first, then what describes it."""
    entry: dict[str, Any] = {**address, "name": spec.name, "description": spec.description}
    if spec.mime_type:
        entry["mimeType"] = spec.mime_type
    if spec.title:
        entry["title"] = spec.title
    return entry


@dataclass
class ResourceSpec:
    """One static resource: a URI whose contents a function returns (text or bytes)."""

    fn: Any
    uri: str
    name: str
    description: str
    mime_type: str | None
    title: str | None = None

    def to_wire(self) -> dict[str, Any]:
        return _listed(self, {"uri": self.uri})

    def call(self, variables: dict[str, str]) -> Any:
        return self.fn()


@dataclass
class ResourceTemplateSpec:
    """A family of resources: URIs matching a template, read by a function of its variables."""

    fn: Any
    template: UriTemplate
    name: str
    description: str
    mime_type: str | None
    title: str | None = None

    def __post_init__(self) -> None:
        fields, context_param = signature_fields(self.fn, {}, kind="resource", name=self.name)
        if context_param is not None or set(fields) != set(self.template.variables):
            raise ToolDefinitionError(
                f"resource template {self.template.template!r}: the function's parameters "
                f"({', '.join(fields) or 'none'}) must be exactly the template's variables "
                f"({', '.join(self.template.variables) or 'none'})"
            )

    @property
    def uri_template(self) -> str:
        return self.template.template

    def to_wire(self) -> dict[str, Any]:
        return _listed(self, {"uriTemplate": self.uri_template})

    def call(self, variables: dict[str, str]) -> Any:
        return self.fn(**variables)


def not_found(uri: str) -> InvalidParams:
    return InvalidParams(f"Resource not found: {uri}", {"uri": uri})


def read(
    spec: ResourceSpec | ResourceTemplateSpec, uri: str, variables: dict[str, str]
) -> dict[str, Any]:
    """A ReadResourceResult's `contents` for `uri` (see the module doc for errors)."""
    try:
        value = spec.call(variables)
        if hasattr(value, "__await__"):
            import asyncio  # only async readers pay for an event loop

            value = asyncio.run(_awaited(value))
        contents = [_contents(uri, spec.mime_type, value)]
        check_binary_budget(contents, f"resource {uri}")
    except ResourceNotFound as exc:
        raise not_found(uri) from exc
    except McpError:
        raise
    except ContentError as exc:
        raise McpError(str(exc), {"uri": uri}) from exc
    except Exception as exc:
        logger.exception("reading resource %s raised %s", uri, type(exc).__name__)
        raise McpError(f"Resource {uri} could not be read", {"uri": uri}) from exc
    return {"contents": contents}


async def _awaited(value: Any) -> Any:
    return await value
