"""JSON-RPC 2.0 framing: classify an incoming message and build outgoing ones.

Batches are not part of MCP since 2025-06-18 and are refused as invalid requests.

Parsing refuses (-32700) what JSON's grammar allows but nothing downstream can hold: nesting
deeper than `MAX_DEPTH` (deep enough for any real request; much deeper would exhaust the
interpreter's recursion limit in whatever walks it next), and strings with lone UTF-16
surrogates (`"\\ud800"`), which are not Unicode text and cannot be encoded to UTF-8 later.
It also refuses the numbers no JSON reader shares: `NaN` and `Infinity` (which Python's reader
takes, though they are no JSON) and a number beyond a double's range (`1e309`, which Python
reads as infinity): either would reach a target written as `NaN` or `Infinity`.

Writing (`dumps`): a message never carries a bare `NaN` or `Infinity` either; a non-finite
float a tool or a target produced is written as `null`, as pydantic writes a nested one.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Final

from mcp_tasks_aws.protocol.errors import InvalidRequest, ParseError

RequestId = str | int


@dataclass(frozen=True)
class Request:
    id: RequestId
    method: str
    params: dict[str, Any]


@dataclass(frozen=True)
class Notification:
    method: str
    params: dict[str, Any]


@dataclass(frozen=True)
class ClientResponse:
    """A result or error the client sent: its answer to a server->client request (legacy
    sessions route it by its id; a stateless request has none to answer and acknowledges it)."""

    id: RequestId | None
    result: Any = None
    error: Any = None


Message = Request | Notification | ClientResponse


MAX_DEPTH = 64


class _OutOfRange(ValueError):
    pass


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _OutOfRange(text[:40])
    return value


def parse_json(body: bytes) -> Any:
    try:
        data = json.loads(body, parse_constant=_no_constant, parse_float=_finite_float)
    except _OutOfRange as exc:
        raise ParseError(f"Parse error: the number {exc} is beyond a double's range") from exc
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise ParseError("Parse error: the body is not valid JSON") from exc
    _check_parsed(data)
    return data


def dumps(message: Any) -> str:
    """`message` as compact JSON, any non-finite float in it written as `null`."""
    try:
        return json.dumps(message, separators=(",", ":"), allow_nan=False)
    except ValueError:
        return json.dumps(_finite(message), separators=(",", ":"), allow_nan=False)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def _check_parsed(data: Any) -> None:
    """Depth and text checks over a decoded document, without recursion."""
    pending: list[tuple[Any, int]] = [(data, 1)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, str):
            _check_text(value)
        elif isinstance(value, dict | list):
            if depth > MAX_DEPTH:
                raise ParseError(f"Parse error: JSON nested deeper than {MAX_DEPTH} levels")
            if isinstance(value, dict):
                for key in value:
                    _check_text(key)
                pending.extend((child, depth + 1) for child in value.values())
            else:
                pending.extend((child, depth + 1) for child in value)


def _check_text(text: str) -> None:
    if not text.isascii():
        try:
            text.encode()
        except UnicodeEncodeError as exc:
            raise ParseError("Parse error: a string holds a lone UTF-16 surrogate") from exc


def request_id_of(data: Any) -> RequestId | None:
    """The id of a possibly malformed message, if it has a valid one (for error replies)."""
    if isinstance(data, dict):
        rid = data.get("id")
        if isinstance(rid, str | int) and not isinstance(rid, bool):
            return rid
    return None


def classify(data: Any) -> Message:
    """Turn decoded JSON into a typed message, or raise InvalidRequest."""
    if isinstance(data, list):
        raise InvalidRequest("Invalid request: batches are not supported")
    if not isinstance(data, dict) or data.get("jsonrpc") != "2.0":
        raise InvalidRequest("Invalid request: not a JSON-RPC 2.0 message")
    method = data.get("method")
    params = data.get("params", {})
    if method is None:
        if "result" in data or "error" in data:
            return ClientResponse(request_id_of(data), data.get("result"), data.get("error"))
        raise InvalidRequest("Invalid request: no method")
    if not isinstance(method, str) or not method:
        raise InvalidRequest("Invalid request: method must be a string")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise InvalidRequest("Invalid request: params must be an object")
    if "id" not in data:
        return Notification(method, params)
    rid = request_id_of(data)
    if rid is None:
        raise InvalidRequest("Invalid request: id must be a string or an integer")
    return Request(rid, method, params)


def result_message(rid: RequestId, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def error_message(rid: RequestId | None, error: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "error": error}
    if rid is not None:
        message["id"] = rid
    return message


def notification_message(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def request_message(rid: RequestId, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A server->client request (legacy sessions send them on a response's SSE stream)."""
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def encoded_size(value: Any) -> int:
    """Bytes `value` takes in the function's response, once encoded twice.

    The transport writes messages as compact ASCII JSON (`json.dumps`, non-ASCII as `\\uXXXX`),
    and the Lambda runtime then encodes the API Gateway proxy response, whose `body` is that
    text as a JSON string: each quote and backslash gains an escape there. A quote-heavy result
    of 3 MB of JSON takes 6 MB of response, over Lambda's limit; this counts what it takes.
    """
    return encoded_text_size(json.dumps(value, separators=(",", ":")))


def encoded_text_size(text: str | bytes) -> int:
    """`encoded_size` of a value already written as compact ASCII JSON (a stored result)."""
    if isinstance(text, bytes):
        return len(text) + text.count(b'"') + text.count(b"\\")
    return len(text) + text.count('"') + text.count("\\")


MAX_RESULT_BYTES: Final = 4_000_000
"""The largest result a tool may return (inline, or as a task), in bytes as encoded in a response
(`protocol.jsonrpc.encoded_size`). Lambda answers at most 6 MB, and a `tasks/get` carries the
result as JSON inside the JSON string of the proxy response, where every quote and backslash is
escaped again (a result of quotes doubles): a larger result could never be read back, so the
task completes with a tool error saying so instead. The rest of a response (the task's fields,
the headers) fits in what is left."""
