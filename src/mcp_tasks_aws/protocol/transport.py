"""The Streamable HTTP transport of MCP 2026-07-28, independent of where HTTP comes from.

`HttpTransport.handle(HttpRequest) -> HttpResponse` owns everything between the HTTP request
and the JSON-RPC server: method and body-size limits, Origin validation (DNS-rebinding
protection), `Accept` negotiation, the `MCP-Protocol-Version` / `Mcp-Method` / `Mcp-Name`
header checks, and the HTTP status for each outcome. API Gateway events reduce to `HttpRequest`
(`edge.apigw`), and the embedded stack turns its HTTP into such events (`local.asgi`), so both
behave identically.

Custom headers (SEP-2243): `Mcp-Name` may carry the Base64 sentinel, and a `tools/call` must
carry an `Mcp-Param-{Name}` header matching each argument its tool declares with `x-mcp-header`
(`protocol.headers` owns those rules).

Status mapping: 200 for results and JSON-RPC errors about a valid request, 202 for
notifications, 400 for malformed requests and -32020/-32021/-32022, 403 for a foreign Origin,
404 for unknown methods, 405 for anything but POST, 406/415 for unusable content types, 413 for
bodies over the limit, 500 for internal errors. A tool call whose token lacks the tool's scopes
(`InsufficientScope`, either era) is not answered here: it propagates to the HTTP edge, which
owns the OAuth challenge (403, `WWW-Authenticate`).

Dual era: each POST is classified by `protocol.era.era_of`. A 2026-07-28 request follows the
rules above (and must not carry `Mcp-Session-Id`); a 2025-11-25 one goes to the `LegacyGate`
(sessions, `GET` resumption with `Last-Event-ID`, `DELETE`), whose method errors are answered
200 inside a session, as that transport does, and whose session errors carry their status
(400 without a session, 404 for an unknown one).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from mcp_tasks_aws.protocol.era import Era, era_of
from mcp_tasks_aws.protocol.errors import (
    HeaderMismatch,
    InsufficientScope,
    InvalidRequest,
    LegacyTransportError,
    McpError,
    MethodNotFound,
    ServiceUnavailable,
    SessionNotAllowed,
    UnsupportedProtocolVersion,
    to_error_object,
)
from mcp_tasks_aws.protocol.headers import ParamHeader, check_param_headers, decode_header_value
from mcp_tasks_aws.protocol.jsonrpc import (
    ClientResponse,
    Message,
    Notification,
    Request,
    classify,
    dumps,
    error_message,
    parse_json,
    request_id_of,
)

logger = logging.getLogger(__name__)

JSON = "application/json"
SSE = "text/event-stream"
SESSION_HEADER = "mcp-session-id"
LAST_EVENT_ID = "last-event-id"
# Methods whose Mcp-Name header must equal a param, and which param.
_NAME_PARAM = {
    "tools/call": "name",
    "prompts/get": "name",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
    "resources/read": "uri",
}


@dataclass(frozen=True)
class HttpRequest:
    method: str
    headers: dict[str, str]  # lower-cased names
    body: bytes
    principal: str = "anonymous"
    deadline: float | None = None
    """`time.monotonic()` by which the answer must be on its way (None: no limit)."""
    streaming: bool = False
    """Whether a streamed answer reaches the client as it is made (the embedded stack, a
    streaming front door) rather than whole once it ends (API Gateway in front of Lambda)."""
    granted_scopes: frozenset[str] | None = None
    """The scopes the caller's verified token grants; None when no token vouches for any
    (AuthMode NONE, IAM), and then tools' scopes are not enforced."""

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


@dataclass
class HttpResponse:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    stream: Iterator[bytes] | None = None
    """Set for streamed responses (subscriptions/listen): chunks to send in order."""

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None

    def read_all(self) -> bytes:
        """The whole body, consuming the stream if there is one (buffered delivery)."""
        if self.stream is not None:
            self.body, self.stream = b"".join(self.stream), None
        return self.body


class Served(NamedTuple):
    """What serving one request gives the transport (`McpServer.serve`, either era).

    `message` is the JSON-RPC response, or a stream of whole messages whose last one is the
    response; `notifications` go before a response (on its SSE stream); `headers` are HTTP
    headers the answer must carry (the `Mcp-Session-Id` an `initialize` issues).
    """

    message: dict[str, Any] | Iterator[Any]
    notifications: list[Any]
    headers: dict[str, str]


class RpcServer(Protocol):
    """The JSON-RPC side the transport drives (implemented by `McpServer`)."""

    def has_method(self, method: str) -> bool:
        """Whether the method exists (unknown methods answer -32601 before anything else)."""
        ...

    def parse_meta(self, request: Request) -> Any:
        """Validate `params._meta` (-32602 if malformed); the result has `.protocol_version`."""
        ...

    def param_headers(self, request: Request) -> Sequence[ParamHeader]:
        """The `x-mcp-header` parameters of the tool a `tools/call` names (none if unknown)."""
        ...

    def serve(
        self,
        request: Request,
        meta: Any,
        principal: str,
        *,
        deadline: float | None = None,
        streaming: bool = False,
        granted_scopes: frozenset[str] | None = None,
    ) -> Served:
        """Answer a 2026-07-28 request. Errors are raised as McpError; the transport answers
        them (but `InsufficientScope`, which the edge answers)."""
        ...


@dataclass(frozen=True)
class SseEvent:
    """One SSE event with its fields: a message, an `id` to resume from, a `retry` delay.

    Streams may yield these or plain messages; an event without data is a priming event
    (SEP-1699): it tells the client where the stream is before anything else arrives.
    """

    data: dict[str, Any] | None
    event_id: str | None = None
    retry_ms: int | None = None


@dataclass(frozen=True)
class SseComment:
    """An SSE comment line: bytes on the wire that every client ignores. A stream sends one
    to start its response before it has a message (`server.live`): API Gateway wants the
    first byte of a streamed answer in time."""

    text: str = "working"


class LegacyGate(Protocol):
    """The 2025-11-25 side of a dual-era endpoint (implemented by `legacy.endpoint`)."""

    def knows(self, method: str) -> bool:
        """Whether any protocol era serves the method (-32601 wins over everything else)."""
        ...

    def post(self, http: HttpRequest, message: Message) -> Served | None:
        """Serve a legacy POST, or None when
        there is nothing to answer (a notification or a client's response: 202).

        Session problems raise `LegacyTransportError`; method errors raise `McpError`.
        """
        ...

    def resume(self, http: HttpRequest, last_event_id: str) -> Iterator[Any]:
        """The stream a `GET` with `Last-Event-ID` continues."""
        ...

    def end(self, http: HttpRequest) -> None:
        """End the session `DELETE` names."""
        ...


def _json_response(status: int, message: dict[str, Any] | None) -> HttpResponse:
    body = b"" if message is None else dumps(message).encode()
    headers = {"content-type": JSON} if message is not None else {}
    return HttpResponse(status, headers, body)


def _sse_event(message: dict[str, Any] | SseEvent | SseComment) -> str:
    if isinstance(message, SseComment):
        return f": {message.text}\n\n"
    event = message if isinstance(message, SseEvent) else SseEvent(message)
    head = f"id: {event.event_id}\n" if event.event_id is not None else ""
    if event.retry_ms is not None:
        head += f"retry: {event.retry_ms}\n"
    if event.data is None:
        return f"{head}data: \n\n"
    # One JSON document per `data:` line: readers parse SSE line by line.
    return f"{head}event: message\ndata: {dumps(event.data)}\n\n"


_SSE_HEADERS = {"content-type": SSE, "cache-control": "no-cache"}


def _sse_response(messages: list[dict[str, Any]]) -> HttpResponse:
    events = "".join(_sse_event(m) for m in messages)
    return HttpResponse(200, dict(_SSE_HEADERS), events.encode())


_LOGGED_ID_CHARS = 64


def loggable_id(rid: Any) -> Any:
    """A request id as logs may carry it: ids are the client's, and may be huge."""
    text = str(rid)
    return rid if len(text) <= _LOGGED_ID_CHARS else text[:_LOGGED_ID_CHARS] + "..."


def _sse_stream(rid: Any, messages: Iterator[Any]) -> Iterator[bytes]:
    try:
        for message in messages:
            yield _sse_event(message).encode()
    except Exception as exc:
        # The headers are sent already: the error becomes the stream's last message.
        if not isinstance(exc, McpError):
            logger.exception("stream for request %s failed", loggable_id(rid))
        error, _ = to_error_object(exc)
        yield _sse_event(error_message(rid, error)).encode()


def _error(status: int, exc: McpError, rid: Any = None) -> HttpResponse:
    error, _ = to_error_object(exc)
    response = _json_response(status, error_message(rid, error))
    if isinstance(exc, ServiceUnavailable):
        response.headers["retry-after"] = str(exc.retry_after_s)
    return response


def accepts(accept: str | None) -> tuple[bool, bool]:
    """(json ok, sse ok) from an Accept header; a missing header accepts anything."""
    if not accept:
        return True, True
    kinds = {part.split(";")[0].strip().lower() for part in accept.split(",")}
    anything = "*/*" in kinds
    return (
        anything or JSON in kinds or "application/*" in kinds,
        anything or SSE in kinds or "text/*" in kinds,
    )


class HttpTransport:
    """One MCP endpoint over HTTP POST."""

    def __init__(
        self,
        server: RpcServer,
        *,
        allowed_origins: frozenset[str] = frozenset(),
        max_body_bytes: int = 1024 * 1024,
        supported_versions: list[str],
        on_request: Callable[[str, Any], None] | None = None,
        legacy: LegacyGate | None = None,
    ) -> None:
        self.server = server
        self.allowed_origins = allowed_origins
        self.max_body_bytes = max_body_bytes
        self.supported_versions = supported_versions
        self.on_request = on_request
        self.legacy = legacy
        """The 2025-11-25 side; None serves 2026-07-28 only (legacy requests then fail)."""

    def refuse(self, exc: McpError) -> HttpResponse:
        """The answer to a request that could not even be read (as a JSON-RPC error)."""
        return _error(exc.http_status, exc)

    def internal_error(self, rid: Any = None) -> HttpResponse:
        """The last-resort answer when serving failed in a way nothing else caught."""
        error, status = to_error_object(Exception())
        return _json_response(status, error_message(rid, error))

    def origin_allowed(self, origin: str | None) -> bool:
        # Requests without Origin come from non-browser clients; DNS rebinding needs a browser.
        return origin is None or origin in self.allowed_origins

    def handle(self, http: HttpRequest) -> HttpResponse:
        verb = http.method.upper()
        if verb in ("GET", "DELETE") and self.legacy is not None and http.header(SESSION_HEADER):
            return self._legacy_stream_or_end(http, verb)
        if verb != "POST":
            refused = _error(405, InvalidRequest("Method not allowed: use POST"))
            refused.headers["allow"] = "POST"
            return refused
        if not self.origin_allowed(http.header("origin")):
            return _error(403, InvalidRequest("Forbidden: Origin not allowed"))
        if len(http.body) > self.max_body_bytes:
            return _error(413, InvalidRequest("Request body too large"))
        content_type = (http.header("content-type") or "").split(";")[0].strip().lower()
        if content_type != JSON:
            return _error(415, InvalidRequest("Unsupported Media Type: send application/json"))
        json_ok, sse_ok = accepts(http.header("accept"))
        if not (json_ok or sse_ok):
            return _error(406, InvalidRequest("Not Acceptable: accept application/json"))

        data: Any = None
        try:
            data = parse_json(http.body)
            message = classify(data)
        except McpError as exc:
            return _error(exc.http_status, exc, request_id_of(data))
        era = era_of(getattr(message, "params", None), _header_value(http, "mcp-protocol-version"))
        in_session = http.header(SESSION_HEADER) is not None
        # A legacy notification or response outside a session is acknowledged as before.
        legacy = self.legacy is not None and era is Era.LEGACY
        if legacy and (isinstance(message, Request) or in_session):
            return self._legacy_post(http, message, json_ok, sse_ok)
        if isinstance(message, Notification | ClientResponse):
            return HttpResponse(202)

        known = self.server.has_method(message.method)
        if self.on_request is not None:
            # What the client sent is logged only once it is known to be small.
            self.on_request(message.method if known else "unknown", loggable_id(message.id))
        try:
            # Order matters and is what the spec's conformance suite checks: an unknown method
            # is -32601 whatever else is wrong; a malformed _meta is -32602 before headers are
            # compared; a header that disagrees with the body (-32020) wins over an
            # unsupported version (-32022).
            if not known:
                raise MethodNotFound(f"Method not found: {message.method[:_LOGGED_ID_CHARS]}")
            if self.legacy is not None and in_session:
                raise SessionNotAllowed(
                    "A 2026-07-28 request must not carry Mcp-Session-Id: sessions belong to "
                    "the 2025-11-25 protocol"
                )
            meta = self.server.parse_meta(message)
            version = meta.protocol_version
            self.check_headers(http, message, version)
            if version not in self.supported_versions:
                raise UnsupportedProtocolVersion(
                    version[:_LOGGED_ID_CHARS], self.supported_versions
                )
            served = self.server.serve(
                message,
                meta,
                http.principal,
                deadline=http.deadline,
                # Live only for a client that reads SSE: a JSON-only one gets the result alone.
                streaming=http.streaming and sse_ok,
                granted_scopes=http.granted_scopes,
            )
        except InsufficientScope:
            raise  # the edge answers it: 403 with its WWW-Authenticate challenge
        except McpError as exc:
            return _error(exc.http_status, exc, message.id)
        except Exception:
            logger.exception("unhandled error serving %s", message.method)
            return self.internal_error(message.id)

        return self._answer(message.id, served.message, served.notifications, json_ok, sse_ok)

    def _answer(
        self,
        rid: Any,
        response: dict[str, Any] | Iterator[Any],
        notifications: list[Any],
        json_ok: bool,
        sse_ok: bool,
    ) -> HttpResponse:
        if not isinstance(response, dict):  # a stream of messages (subscriptions/listen)
            if not sse_ok:
                return _error(
                    406, InvalidRequest("Not Acceptable: this method streams text/event-stream")
                )
            return HttpResponse(200, dict(_SSE_HEADERS), stream=_sse_stream(rid, response))
        if notifications and sse_ok:
            return _sse_response([*notifications, response])
        if not json_ok:
            return _sse_response([response])
        return _json_response(200, response)

    # -- the 2025-11-25 era ---------------------------------------------------------------------

    def _legacy_post(
        self, http: HttpRequest, message: Message, json_ok: bool, sse_ok: bool
    ) -> HttpResponse:
        assert self.legacy is not None
        rid = message.id if isinstance(message, Request) else None
        if isinstance(message, Request):
            known = self.legacy.knows(message.method)
            if self.on_request is not None:
                # As in 2026-07-28: what the client sent is logged only once it is known small.
                self.on_request(message.method if known else "unknown", loggable_id(message.id))
            # -32601 wins over everything else, as in 2026-07-28 (a method no era serves).
            if not known:
                unknown = MethodNotFound(f"Method not found: {message.method[:_LOGGED_ID_CHARS]}")
                return _error(404, unknown, rid)
        try:
            served = self.legacy.post(http, message)
        except InsufficientScope:
            raise  # the edge answers it, as in 2026-07-28 (not 200 inside the session)
        except LegacyTransportError as exc:
            return _error(exc.http_status, exc, rid)
        except ServiceUnavailable as exc:
            return _error(exc.http_status, exc, rid)  # busy: 503 + Retry-After, as in 2026-07-28
        except McpError as exc:
            # Inside a session a method's error is a JSON-RPC answer (200); a client's
            # response that cannot be taken is refused (400).
            return _error(200 if isinstance(message, Request) else 400, exc, rid)
        except Exception:
            logger.exception("unhandled error serving a legacy message")
            return self.internal_error(rid)
        if served is None:
            return HttpResponse(202)
        answer = self._answer(rid, served.message, served.notifications, json_ok, sse_ok)
        answer.headers.update(served.headers)
        return answer

    def _legacy_stream_or_end(self, http: HttpRequest, verb: str) -> HttpResponse:
        """`GET` (resume a stream) and `DELETE` (end the session) inside a legacy session."""
        assert self.legacy is not None
        if not self.origin_allowed(http.header("origin")):
            return _error(403, InvalidRequest("Forbidden: Origin not allowed"))
        last_event_id = _header_value(http, LAST_EVENT_ID)
        if verb == "GET" and not last_event_id:
            # No standalone server stream: notifications travel on each request's stream.
            refused = _error(405, InvalidRequest("Method not allowed: GET resumes a stream"))
            refused.headers["allow"] = "POST, DELETE"
            return refused
        if verb == "GET" and not accepts(http.header("accept"))[1]:
            return _error(406, InvalidRequest("Not Acceptable: accept text/event-stream"))
        try:
            if verb == "DELETE":
                self.legacy.end(http)
                return HttpResponse(204)
            assert last_event_id is not None
            stream = self.legacy.resume(http, last_event_id)
        except McpError as exc:
            known = isinstance(exc, (LegacyTransportError, ServiceUnavailable))
            status = exc.http_status if known else 400
            return _error(status, exc)
        except Exception:
            logger.exception("unhandled error serving a legacy %s", verb)
            return self.internal_error()
        return HttpResponse(200, dict(_SSE_HEADERS), stream=_sse_stream(None, stream))

    def check_headers(self, http: HttpRequest, request: Request, body_version: str) -> None:
        """Routing and version headers must be present and agree with the body (-32020)."""
        header_version = _header_value(http, "mcp-protocol-version")
        if header_version is not None and header_version != body_version:
            raise HeaderMismatch(
                "Header mismatch: MCP-Protocol-Version does not match params._meta protocolVersion"
            )
        header_method = _header_value(http, "mcp-method")
        if header_method != request.method:
            raise HeaderMismatch(
                "Header mismatch: the Mcp-Method header is required and must equal the method"
            )
        param = _NAME_PARAM.get(request.method)
        if param is not None:
            raw_name = _header_value(http, "mcp-name")
            # A name that is not plain ASCII travels in the Base64 sentinel (SEP-2243).
            name = decode_header_value(raw_name, "Mcp-Name") if raw_name is not None else None
            if name != request.params.get(param):
                raise HeaderMismatch(
                    "Header mismatch: the Mcp-Name header is required and must equal "
                    f"params.{param}"
                )
        if request.method == "tools/call":
            declared = self.server.param_headers(request)
            if declared:
                check_param_headers(http.headers, request.params.get("arguments"), declared)


def _header_value(http: HttpRequest, name: str) -> str | None:
    value = http.header(name)
    return value.strip() if value is not None else None
