"""The `STREAMING` front door's ASGI app: HTTP in, the edge and transport, the answer streamed out.

Deployed, AWS's Lambda Web Adapter runs this app under uvicorn inside the API function
(`handlers/stream.py`, `run.sh`) and turns each API Gateway REST invocation into an HTTP
request to it; its response goes back through `InvokeWithResponseStream` as it is written. The
embedded stack serves the same app (`local.asgi` puts API Gateway's part around it). So each
request here:

1. becomes the payload-v2 event the edge reads (`edge.gate.Edge.handle`), with the caller as
   API Gateway's authorizer named it. The adapter passes the REST API's request context in
   the `x-amzn-request-context` header, always set by the adapter itself (a client's header of
   that name is replaced), and :func:`authorizer_of` translates its `identity` (AuthMode IAM),
   `authorizer.claims` (a Cognito authorizer, AuthMode JWT) and `authorizer.principalId` (a
   Lambda authorizer) into the shapes the HTTP API gives, so a caller is the same principal
   behind either door and a door switch keeps everyone's tasks;
2. runs with `streaming` on and a deadline: the function's own (the adapter's
   `x-amzn-lambda-context` header carries it) less the answer's margin, and at most
   `inline_deadline_s`: the streamed door's inline deadline, longer than API Gateway's 29 s;
3. is answered: whole, or (a listen window, a 2025-11-25 stream, an inline call once it made a
   notification) chunk by chunk, each written as it is made.

Traps of the streamed integration, handled here:
- **the follow-up invocation**: after a streamed response API Gateway invokes the function
  once more, with an event that is no HTTP request; the adapter posts it to its
  pass-through path (`AWS_LWA_PASS_THROUGH_PATH`), which this app acknowledges at once and
  never serves as MCP;
- **empty bodies**: a streamed response without a single body byte is never closed by API
  Gateway (the client waits, then gets a 502). Behind the streaming integration
  (`pad_empty_bodies`), a 202 (a notification's answer) gets a body of `{}` and a 204 (a
  2025-11-25 session's end) becomes 200 `{}`; CORS preflight never reaches the function
  (API Gateway answers it);
- **a client that leaves**: the app watches for the disconnect and raises `ClientGone` in the
  thread serving the request, at its next step: a listen window stops polling, an inline run
  stops its tool (`server.live`), and the function stops holding.

The readiness check of the adapter (`AWS_LWA_READINESS_CHECK_PATH`) is answered 200 once the
app is built: uvicorn serves only after the handler module built it, during init.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from mcp_tasks_aws.edge.apigw import RESPONSE_MARGIN_S
from mcp_tasks_aws.protocol.transport import HttpResponse
from mcp_tasks_aws.server.live import ClientGone, Interruptible

logger = logging.getLogger(__name__)

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
EdgeHandler = Callable[[dict[str, Any], Any], HttpResponse]

REQUEST_CONTEXT_HEADER: Final = "x-amzn-request-context"
LAMBDA_CONTEXT_HEADER: Final = "x-amzn-lambda-context"
PASS_THROUGH_PATH: Final = "/_lambda/events"  # noqa: S105 - a path, not a secret
"""Where the adapter posts invocations that are no HTTP request (the template sets
`AWS_LWA_PASS_THROUGH_PATH` to it)."""
READINESS_PATH: Final = "/_lambda/ready"
"""What the adapter polls until the app answers (`AWS_LWA_READINESS_CHECK_PATH`)."""
ACKNOWLEDGED: Final = b'{"acknowledged":true}'
_PADDING: Final = b"{}"


@dataclass(frozen=True)
class Invocation:
    """The Lambda context the edge reads: time left to a deadline, and a stream to write to.

    `response_stream` only says the answer streams (`edge.apigw.request_from_event`); this app
    writes the answer itself.
    """

    deadline: float
    """`time.monotonic()` at which the answer must be complete (the margin included)."""
    response_stream: object = True

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.deadline - time.monotonic()) * 1000))


def authorizer_of(request_context: dict[str, Any]) -> dict[str, Any] | None:
    """The payload-v2 `authorizer` for a REST API request context (payload v1), or None.

    - a Cognito user pool authorizer's `authorizer.claims` -> `jwt.claims`;
    - a Lambda authorizer's `authorizer.principalId` -> `lambda.principalId`;
    - IAM (`AWS_IAM` authorization): `identity.userArn` and `identity.accountId` -> `iam`.
    """
    authorizer = request_context.get("authorizer")
    if isinstance(authorizer, dict):
        # Empty fields are no authorizer: a method without one may still carry the key.
        claims = authorizer.get("claims")
        if isinstance(claims, dict) and claims:
            return {"jwt": {"claims": claims, "scopes": None}}
        if authorizer.get("principalId"):
            return {"lambda": {"principalId": authorizer["principalId"]}}
    identity = request_context.get("identity")
    if isinstance(identity, dict) and (identity.get("userArn") or identity.get("caller")):
        return {
            "iam": {
                "accountId": identity.get("accountId") or "",
                "userArn": identity.get("userArn") or identity.get("caller"),
                "callerId": identity.get("caller"),
            }
        }
    return None


def event_of(
    method: str, path: str, headers: dict[str, str], body: bytes, source_ip: str
) -> dict[str, Any]:
    """The payload-v2 event the edge reads, for an HTTP request the adapter forwarded."""
    context = _json_header(headers, REQUEST_CONTEXT_HEADER)
    request_context: dict[str, Any] = {
        "http": {"method": method, "path": path, "sourceIp": source_ip},
        "requestId": str(context.get("requestId", "")),
    }
    authorizer = authorizer_of(context)
    if authorizer is not None:
        request_context["authorizer"] = authorizer
    try:
        text, encoded = body.decode(), False
    except UnicodeDecodeError:
        text, encoded = base64.b64encode(body).decode(), True
    forwarded = {
        k: v for k, v in headers.items() if k not in (REQUEST_CONTEXT_HEADER, LAMBDA_CONTEXT_HEADER)
    }
    return {
        "version": "2.0",
        "rawPath": path,
        "headers": forwarded,
        "requestContext": request_context,
        "body": text,
        "isBase64Encoded": encoded,
    }


def _json_header(headers: dict[str, str], name: str) -> dict[str, Any]:
    raw = headers.get(name)
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _without_stage(path: str, request_context: dict[str, Any]) -> str:
    """The path as the function serves it: a REST API's stage (`/api/mcp`) left out."""
    stage = request_context.get("stage")
    prefix = f"/{stage}/" if isinstance(stage, str) and stage else None
    return path[len(prefix) - 1 :] if prefix and path.startswith(prefix) else path


def lambda_deadline(headers: dict[str, str]) -> float | None:
    """`time.monotonic()` at which Lambda stops the function, from the adapter's header."""
    context = _json_header(headers, LAMBDA_CONTEXT_HEADER)
    epoch_ms = context.get("deadline", context.get("deadline_ms"))
    if not isinstance(epoch_ms, int | float) or epoch_ms <= 0:
        return None
    return time.monotonic() + (epoch_ms / 1000 - time.time())


class StreamingApp:
    """Serves the edge at `paths` over HTTP, streaming what streams (see the module docstring).

    `handle` is the edge (`Edge.handle`); `inline_deadline_s` bounds an inline run;
    `pad_empty_bodies` is on behind the streaming integration (`AWS_LWA_INVOKE_MODE`).
    """

    def __init__(
        self,
        handle: EdgeHandler,
        *,
        inline_deadline_s: float,
        paths: frozenset[str] = frozenset({"/mcp"}),
        pad_empty_bodies: bool = False,
        pass_through_path: str = PASS_THROUGH_PATH,
        readiness_path: str = READINESS_PATH,
    ) -> None:
        self.handle = handle
        self.inline_deadline_s = inline_deadline_s
        self.paths = paths
        self.pad_empty_bodies = pad_empty_bodies
        self.pass_through_path = pass_through_path
        self.readiness_path = readiness_path
        self.follow_ups = 0
        """Pass-through invocations acknowledged (the follow-up after each stream)."""
        self._serving: set[Interruptible] = set()

    def close(self) -> None:
        """Stop every request still being served (a listen window, say), as when the function
        is shut down: each one's thread gets `ClientGone` at its next step."""
        for runner in list(self._serving):
            runner.interrupt(ClientGone)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # served with lifespan off; websockets are not served
        path = scope["path"]
        if path == self.readiness_path:
            await _complete(send, 200, {"content-type": "text/plain"}, b"ready")
            return
        body = await _read_body(receive)
        if path == self.pass_through_path:
            # The follow-up invocation after a stream (or any event that is no HTTP request):
            # acknowledged, never served as MCP. Its payload is not logged (it may hold a body).
            self.follow_ups += 1
            await _complete(send, 200, {"content-type": "application/json"}, ACKNOWLEDGED)
            return
        headers = combined_headers(scope["headers"])
        path = _without_stage(path, _json_header(headers, REQUEST_CONTEXT_HEADER))
        if path not in self.paths:
            await _complete(send, 404, {"content-type": "text/plain"}, b"Not Found")
            return
        client = scope.get("client") or ("127.0.0.1", 0)
        event = event_of(scope["method"], path, headers, body, str(client[0]))
        now = time.monotonic()
        deadline = now + self.inline_deadline_s + RESPONSE_MARGIN_S
        function_deadline = lambda_deadline(headers)
        if function_deadline is not None:
            deadline = min(deadline, function_deadline)
        await self._serve(event, Invocation(deadline), receive, send)

    async def _serve(
        self, event: dict[str, Any], invocation: Invocation, receive: Receive, send: Send
    ) -> None:
        loop = asyncio.get_running_loop()
        out: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

        def put(kind: str, value: Any = None) -> None:
            loop.call_soon_threadsafe(out.put_nowait, (kind, value))

        def work() -> None:
            # One thread both answers and iterates the answer's stream: a client that leaves
            # interrupts it wherever it is (waiting for a first notification, or between two).
            try:
                response = self.handle(event, invocation)
                put("start", response)
                stream: Iterator[bytes] | None = response.stream
                if stream is not None:
                    for chunk in stream:
                        put("chunk", chunk)
            except ClientGone:
                pass
            except Exception:
                logger.exception("serving a streamed request failed")
                put("failed")
            finally:
                put("end")

        runner = Interruptible(work, "front-door")
        watcher = asyncio.create_task(_watch_disconnect(receive, runner))
        self._serving.add(runner)
        runner.start()
        try:
            await self._relay(out, send, runner)
        finally:
            # Ended, or cancelled (the server stopping): nothing is read any more, so the work
            # stops too (a no-op once it ended).
            watcher.cancel()
            runner.interrupt(ClientGone)
            self._serving.discard(runner)

    async def _relay(
        self, out: asyncio.Queue[tuple[str, Any]], send: Send, runner: Interruptible
    ) -> None:
        started = False
        while True:
            kind, value = await out.get()
            try:
                if kind == "start":
                    started = True
                    await self._start(send, value)
                elif kind == "chunk" and value:
                    await send({"type": "http.response.body", "body": value, "more_body": True})
                elif kind == "failed" and not started:
                    started = True
                    await _complete(
                        send, 500, {"content-type": "application/json"}, _INTERNAL_ERROR
                    )
                elif kind == "end":
                    if started:
                        await send({"type": "http.response.body", "body": b"", "more_body": False})
                    return
            except (OSError, RuntimeError):  # the client is gone: stop the work, drop the rest
                runner.interrupt(ClientGone)
                return

    async def _start(self, send: Send, response: HttpResponse) -> None:
        status, headers = response.status, dict(response.headers)
        if response.stream is not None:
            start = {
                "type": "http.response.start",
                "status": status,
                "headers": encoded_headers(headers),
            }
            await send(start)
            return
        body = response.body
        if not body and self.pad_empty_bodies:
            # A streamed integration never ends a response without a body byte (see above).
            status = 200 if status == 204 else status
            headers["content-type"] = "application/json"
            body = _PADDING
        headers["content-length"] = str(len(body))
        await send(
            {"type": "http.response.start", "status": status, "headers": encoded_headers(headers)}
        )
        await send({"type": "http.response.body", "body": body, "more_body": True})


_INTERNAL_ERROR = json.dumps({"message": "Internal Server Error"}).encode()


async def _complete(send: Send, status: int, headers: dict[str, str], body: bytes) -> None:
    headers = {**headers, "content-length": str(len(body))}
    await send(
        {"type": "http.response.start", "status": status, "headers": encoded_headers(headers)}
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _read_body(receive: Receive) -> bytes:
    parts: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        parts.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    return b"".join(parts)


async def _watch_disconnect(receive: Receive, runner: Interruptible) -> None:
    """Once the body is read, `receive` answers only when the client disconnects."""
    with contextlib.suppress(Exception):
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                runner.interrupt(ClientGone)
                return


def combined_headers(raw: list[tuple[bytes, bytes]]) -> dict[str, str]:
    """Lower-case header names, duplicates joined with commas (as payload 2.0 gives them)."""
    headers: dict[str, str] = {}
    for name, value in raw:
        key, text = name.decode("latin-1").lower(), value.decode("latin-1")
        headers[key] = f"{headers[key]},{text}" if key in headers else text
    return headers


def encoded_headers(headers: dict[str, str]) -> list[tuple[bytes, bytes]]:
    return [(k.lower().encode("latin-1"), str(v).encode("latin-1")) for k, v in headers.items()]
