"""SEP-2243 headers: the Base64 sentinel, `x-mcp-header` declarations, `Mcp-Param-*` checks.

The 2026-07-28 Streamable HTTP transport mirrors body values into headers so that gateways can
route on them. This module owns the rules both sides share, as pure functions:

- :func:`decode_header_value`: a header value as the body would carry it. A value wrapped as
  `=?base64?…?=` is strict standard Base64 of UTF-8 (bad padding, characters outside the
  alphabet or bytes that are not UTF-8 are refused); any other value is taken literally and
  may hold only visible ASCII, space and tab (RFC 9110 field values).
- :func:`param_headers_of`: the `x-mcp-header` declarations of a tool's `inputSchema`, checked
  against every constraint the spec puts on them (a non-empty RFC 9110 token, unique without
  regard to case, on a `string`, `integer` or `boolean` property reached from the root through
  `properties` keys only). A declaration anywhere else makes the schema invalid.
- :func:`check_param_headers`: every declared parameter against its `Mcp-Param-{Name}` header.
  A value in the body needs a header that decodes to it (integers compared as numbers); a value
  absent or `null` needs no header, and a header without a body value is a mismatch.

Every refusal raises :class:`HeaderMismatch` (-32020, HTTP 400). Messages name headers and
argument paths, never the values (they may be personal data).
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from mcp_tasks_aws.protocol.errors import HeaderMismatch

HEADER_KEYWORD = "x-mcp-header"
PARAM_HEADER_PREFIX = "Mcp-Param-"
SENTINEL_PREFIX = "=?base64?"
SENTINEL_SUFFIX = "?="

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_PLAIN_VALUE = re.compile(r"[\t\x20-\x7e]*")
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")
# Keywords whose subschemas are not reachable through `properties` alone.
_SUBSCHEMA_KEYWORDS = (
    "items",
    "prefixItems",
    "contains",
    "additionalProperties",
    "patternProperties",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "dependentSchemas",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "$defs",
    "definitions",
)
_SCHEMA_MAPS = ("patternProperties", "dependentSchemas", "$defs", "definitions")
HeaderKind = Literal["string", "integer", "boolean"]


class InvalidHeaderDeclaration(ValueError):
    """An `x-mcp-header` declaration breaks one of SEP-2243's constraints."""


@dataclass(frozen=True)
class ParamHeader:
    """One declared parameter: its header's name part, where its value is, and its type."""

    name: str
    path: tuple[str, ...]
    kind: HeaderKind

    @property
    def header(self) -> str:
        return f"{PARAM_HEADER_PREFIX}{self.name}"

    @property
    def where(self) -> str:
        return "arguments." + ".".join(self.path)


# -- values --------------------------------------------------------------------------------------


def decode_header_value(raw: str, header: str) -> str:
    """The value `raw` stands for; HeaderMismatch if it is malformed (see the module doc)."""
    if raw.startswith(SENTINEL_PREFIX) and raw.endswith(SENTINEL_SUFFIX) and len(raw) >= 11:
        payload = raw[len(SENTINEL_PREFIX) : -len(SENTINEL_SUFFIX)]
        if not _BASE64.fullmatch(payload):
            raise HeaderMismatch(f"Header mismatch: {header} is not valid Base64")
        try:
            return base64.b64decode(payload, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise HeaderMismatch(f"Header mismatch: {header} is not valid Base64") from exc
    if not _PLAIN_VALUE.fullmatch(raw):
        raise HeaderMismatch(f"Header mismatch: {header} contains invalid characters")
    return raw


# -- declarations --------------------------------------------------------------------------------


def _subschemas(schema: dict[str, Any]) -> Iterator[Any]:
    for keyword in _SUBSCHEMA_KEYWORDS:
        value = schema.get(keyword)
        if isinstance(value, list):
            yield from value
        elif isinstance(value, dict) and keyword in _SCHEMA_MAPS:
            yield from value.values()
        elif value is not None:
            yield value


def _declarations(
    schema: Any, path: tuple[str, ...], reachable: bool
) -> Iterator[tuple[tuple[str, ...], dict[str, Any], bool]]:
    """(path, property schema, reachable) for every schema carrying `x-mcp-header`."""
    if not isinstance(schema, dict):
        return
    if HEADER_KEYWORD in schema:
        yield path, schema, reachable and bool(path)
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for key, sub in properties.items():
            yield from _declarations(sub, (*path, str(key)), reachable)
    for sub in _subschemas(schema):
        yield from _declarations(sub, path, False)


def param_headers_of(input_schema: Mapping[str, Any]) -> list[ParamHeader]:
    """The schema's `x-mcp-header` declarations; InvalidHeaderDeclaration names what is wrong."""
    found: list[ParamHeader] = []
    seen: dict[str, str] = {}
    for path, prop, reachable in _declarations(dict(input_schema), (), True):
        where = ".".join(path) or "the schema root"
        name = prop[HEADER_KEYWORD]
        if not reachable:
            raise InvalidHeaderDeclaration(
                f"x-mcp-header on {where} is not reachable from the root through "
                "`properties` alone (not under items, $ref, anyOf, if/then/else, ...)"
            )
        if not isinstance(name, str) or not _TOKEN.fullmatch(name):
            raise InvalidHeaderDeclaration(
                f"x-mcp-header {name!r} on {where} is not an HTTP token (letters, digits "
                "and !#$%&'*+-.^_`|~, not empty)"
            )
        kind = prop.get("type")
        if kind not in ("string", "integer", "boolean"):
            raise InvalidHeaderDeclaration(
                f"x-mcp-header {name!r} is on {where}, whose type is {kind!r}: only string, "
                "integer and boolean parameters (not number, not optional) can be headers"
            )
        if name.casefold() in seen:
            raise InvalidHeaderDeclaration(
                f"x-mcp-header {name!r} on {where} repeats the one on {seen[name.casefold()]} "
                "(names are compared without regard to case)"
            )
        seen[name.casefold()] = where
        found.append(ParamHeader(name=name, path=path, kind=kind))
    return found


# -- checking a request --------------------------------------------------------------------------


def _value_at(arguments: Any, path: Sequence[str]) -> Any:
    value = arguments
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def _matches(decoded: str, value: Any, kind: HeaderKind) -> bool:
    if isinstance(value, bool):
        return decoded == ("true" if value else "false")
    if isinstance(value, int | float):
        # Integers compare as numbers: "42.0" and 42 are the same value. Header integers are
        # within ±(2**53 - 1) (the spec's safe range), where a float is exact.
        if not _NUMBER.fullmatch(decoded):
            return False
        parsed = float(decoded)
        return math.isfinite(parsed) and parsed == value
    if isinstance(value, str):
        return decoded == value
    return False  # an object or array where the schema wants a primitive never matches


def check_param_headers(
    headers: Mapping[str, str], arguments: Any, declared: Sequence[ParamHeader]
) -> None:
    """Every declared parameter against its header (`headers` keyed by lower-case name)."""
    for param in declared:
        raw = headers.get(param.header.lower())
        value = _value_at(arguments, param.path)
        if raw is None:
            if value is not None:
                raise HeaderMismatch(
                    f"Header mismatch: {param.header} is required when {param.where} is set"
                )
            continue
        decoded = decode_header_value(raw.strip(" \t"), param.header)
        if value is None:
            raise HeaderMismatch(
                f"Header mismatch: {param.header} is sent but {param.where} is not set"
            )
        if not _matches(decoded, value, param.kind):
            raise HeaderMismatch(f"Header mismatch: {param.header} does not match {param.where}")
