"""JSON-RPC and MCP error codes, the protocol's exception types, and the one mapper from
exceptions to wire errors.

Invariants:
- every error that reaches the wire goes through :func:`to_error_object`;
- messages are ours, never a library's (a pydantic or boto3 message does not leak);
- each exception carries the HTTP status the 2026-07-28 transport prescribes for it.
"""

from __future__ import annotations

from typing import Any

# JSON-RPC 2.0 standard codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

# MCP 2026-07-28 transport and envelope codes.
HEADER_MISMATCH = -32020
"""An HTTP header (MCP-Protocol-Version, Mcp-Method, Mcp-Name) disagrees with the body."""
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
"""Serving the request needs a capability the client did not declare on this request."""
UNSUPPORTED_PROTOCOL_VERSION = -32022
"""The request names a protocol version this server does not speak."""


class McpError(Exception):
    """Base for every error that is answered as a JSON-RPC error object."""

    code: int = INTERNAL_ERROR
    http_status: int = 200

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


class ParseError(McpError):
    """The body is not valid JSON."""

    code = PARSE_ERROR
    http_status = 400


class InvalidRequest(McpError):
    """The body is JSON but not a valid JSON-RPC request, or the envelope is malformed."""

    code = INVALID_REQUEST
    http_status = 400


class MethodNotFound(McpError):
    """The method does not exist (or does not exist in this protocol version)."""

    code = METHOD_NOT_FOUND
    http_status = 404


class InvalidParams(McpError):
    """The params are malformed, or name something that does not exist for this caller."""

    code = INVALID_PARAMS


class InvalidMeta(InvalidParams):
    """`params._meta` is missing or lacks a required key (HTTP 400 in 2026-07-28)."""

    http_status = 400


class InternalError(McpError):
    """Something failed inside the server; the message never carries the cause."""

    code = INTERNAL_ERROR
    http_status = 500


class ServiceUnavailable(McpError):
    """A backend is throttling: nothing was changed, the client should retry after a while.

    Answered with HTTP 503 and `Retry-After` where the transport allows (Streamable HTTP).
    """

    code = INTERNAL_ERROR
    http_status = 503

    def __init__(self, retry_after_s: int = 1) -> None:
        super().__init__(
            f"The service is busy; retry after {retry_after_s} s",
            {"retryAfterSeconds": retry_after_s},
        )
        self.retry_after_s = retry_after_s


class InsufficientScope(McpError):
    """The caller's token lacks scopes the tool it calls needs (RFC 6750 `insufficient_scope`).

    The HTTP edge answers it, in either era, with 403 and a `WWW-Authenticate` challenge naming
    the scopes (a client steps its grant up from that), so the transport hands it on to the
    edge instead of answering it. Where no HTTP answer can be given any more (a resumed
    2025-11-25 stream) it is answered as a JSON-RPC error like any other.
    """

    code = INVALID_REQUEST
    http_status = 403

    def __init__(self, tool: str, needed: frozenset[str], missing: frozenset[str]) -> None:
        super().__init__(
            f"Forbidden: the tool {tool!r} needs the scope(s): {' '.join(sorted(missing))}",
            {"requiredScopes": sorted(needed)},
        )
        self.tool = tool
        self.needed = needed
        self.missing = missing


class HeaderMismatch(McpError):
    """A routing or version header disagrees with the body."""

    code = HEADER_MISMATCH
    http_status = 400


def capability_names(required: dict[str, Any]) -> list[str]:
    """The capabilities a `requiredCapabilities` object names (`sampling`, `extension X`)."""
    names = []
    for key, value in required.items():
        if key == "extensions" and isinstance(value, dict):
            names += [f"extension {name}" for name in value]
        else:
            names.append(str(key))
    return names


class MissingClientCapability(McpError):
    """The request needs a client capability that was not declared on it.

    The default message names it (`data.requiredCapabilities` carries it as an object).
    """

    code = MISSING_REQUIRED_CLIENT_CAPABILITY
    http_status = 400

    def __init__(self, required: dict[str, Any], message: str | None = None) -> None:
        named = " and ".join(capability_names(required)) or "(none named)"
        super().__init__(
            message or f"Missing required client capability: {named} (the client must declare it)",
            {"requiredCapabilities": required},
        )


class UnsupportedProtocolVersion(McpError):
    """The requested protocol version is not one this server speaks."""

    code = UNSUPPORTED_PROTOCOL_VERSION
    http_status = 400

    def __init__(self, requested: str, supported: list[str]) -> None:
        super().__init__(
            f"Unsupported protocol version: {requested}",
            {"requested": requested, "supported": supported},
        )


def to_error_object(exc: BaseException) -> tuple[dict[str, Any], int]:
    """Map any exception to a JSON-RPC error object and the HTTP status to answer with.

    Unknown exceptions become a bare internal error: their text may hold library or user data.
    """
    if isinstance(exc, McpError):
        error: dict[str, Any] = {"code": exc.code, "message": exc.message}
        if exc.data is not None:
            error["data"] = exc.data
        return error, exc.http_status
    return {"code": INTERNAL_ERROR, "message": "Internal error"}, 500


# -- the 2025-11-25 era's transport (sessions) ------------------------------------------------
# A legacy session lives in the `Mcp-Session-Id` header. What is wrong with it is said with the
# HTTP status the 2025-11-25 transport prescribes; the JSON-RPC code is -32600 throughout.


class LegacyTransportError(InvalidRequest):
    """A legacy request refused by the transport (its session, its response id): the HTTP
    status says what went wrong, unlike errors from a method, which a session answers 200."""


class SessionRequired(LegacyTransportError):
    """A legacy request (no 2026-07-28 `_meta`) outside a session: initialize first."""

    http_status = 400


class SessionNotFound(LegacyTransportError):
    """The session id is unknown, ended, expired, tampered with, or another caller's."""

    http_status = 404


class SessionNotAllowed(LegacyTransportError):
    """A session id where none may be: on a 2026-07-28 request, or on `initialize`."""

    http_status = 400


class UnknownResponse(LegacyTransportError):
    """A JSON-RPC response whose id is not one this server gave a request in this session."""

    http_status = 400


class StreamNotFound(LegacyTransportError):
    """A `Last-Event-ID` that names no stream this session can continue."""

    http_status = 404


class SessionVersionMismatch(LegacyTransportError):
    """`MCP-Protocol-Version` names another version than the one the session negotiated."""

    http_status = 400


class StreamNotAccepted(LegacyTransportError):
    """A call whose answer may have to stream (its questions travel on SSE), from a client
    that does not accept `text/event-stream`: refused before it runs."""

    http_status = 406
