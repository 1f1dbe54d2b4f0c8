"""An ASGI app that serves one Lambda handler the way an API Gateway HTTP API route does.

The embedded stack runs it under uvicorn, which owns HTTP itself: framing (`Content-Length`
and chunked bodies, malformed lengths answered 400), keep-alive, the listen backlog, `HEAD`
without a body. What this adapter adds is API Gateway's part:

- its routes (`/mcp`, and the protected-resource metadata in AuthMode OAUTH); anything else
  is 404;
- bodies over API Gateway's payload limit are 413 before the function runs;
- duplicate headers are combined with commas, as payload format 2.0 does (two `Origin`
  headers become one value that no allow-list matches);
- the request becomes a payload-v2 event (`apigw_emulator.build_event`) and the handler runs
  in a worker thread with a Lambda context whose time left counts down from the function's
  timeout;
- at that timeout the handler is interrupted (see `lambda_runtime`) and the client gets what
  API Gateway sends for a failed invocation, `500 {"message":"Internal Server Error"}`; a
  response already streaming is ended;
- a handler that streams (a listen window) writes to the context's `response_stream`, and each
  chunk goes out as it is written; when the client leaves, the next write raises
  `BrokenPipeError` in the handler, which ends the window;
- when the stack stops (`close`), what the function still runs is stopped, as Lambda ends its
  environments: each request in flight ends as an interrupted invocation does (API Gateway's
  500, or the end of a stream already started), and a request that arrives meanwhile gets
  the same. That is an expected path, so it is ended quietly; a request uvicorn still
  cancels at the end of its graceful shutdown (a function that did not stop in time) ends the
  same way rather than as the app's failure, with its traceback.

With `access_log`, each request ends in one line (`access_line`): the JSON-RPC method, the
tool, prompt, resource or task it names, the HTTP status (and the JSON-RPC error code, if the
answer is one) and the time taken. Never arguments, answers or headers (tokens live there).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from mcp_tasks_aws.edge.streaming import combined_headers, encoded_headers
from mcp_tasks_aws.local.apigw_emulator import (
    LocalLambdaContext,
    build_event,
    unverified_jwt_claims,
)
from mcp_tasks_aws.local.lambda_runtime import HandlerCall

logger = logging.getLogger("mcp_tasks_aws.local")

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Handler = Callable[[dict[str, Any], Any], Any]

API_GATEWAY_MAX_BODY = 10 * 1024 * 1024
"""HTTP API's payload limit: larger requests never reach the function."""
_INTERNAL_ERROR = json.dumps({"message": "Internal Server Error"}).encode()
_SEND_TIMEOUT_S = 30.0
_CLOSE_WAIT_S = 3.0


class _ResponseStream:
    """The `response_stream` a handler writes to from its thread; sends happen on the loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, send: Send) -> None:
        self._loop = loop
        self._send = send
        self.started = False
        self.ended = False
        self.gone = threading.Event()

    def begin(self, status: int, headers: dict[str, str]) -> None:
        self.started = True
        start = {
            "type": "http.response.start",
            "status": status,
            "headers": encoded_headers(headers),
        }
        self._from_thread(start)

    def write(self, chunk: bytes) -> None:
        self._from_thread({"type": "http.response.body", "body": chunk, "more_body": True})

    def _from_thread(self, message: Message) -> None:
        if self.gone.is_set():
            raise BrokenPipeError("the client closed the connection")
        try:
            sent = asyncio.run_coroutine_threadsafe(self.send(message), self._loop)
            sent.result(timeout=_SEND_TIMEOUT_S)
        except (RuntimeError, TimeoutError) as exc:  # the server stopped under the stream
            raise BrokenPipeError("the server is stopping") from exc

    async def send(self, message: Message) -> None:
        if self.ended:
            raise BrokenPipeError("the response has ended")
        if message["type"] == "http.response.body" and not message.get("more_body"):
            self.ended = True
        await self._send(message)

    async def end(self) -> None:
        if not self.ended:
            await self.send({"type": "http.response.body", "body": b"", "more_body": False})


class ApiGatewayFront:
    """What both emulated front doors share: the function they serve and its timeout, API
    Gateway's routes, authorizer and payload limit, and one access line per request.

    `jwt_authorizer` stands for a route with API Gateway's JWT authorizer in front (the event
    then carries the bearer token's claims); off, the function sees the raw header only.
    """

    def __init__(
        self,
        handler: Any,
        *,
        timeout_s: float,
        paths: frozenset[str] = frozenset({"/mcp"}),
        jwt_authorizer: bool = True,
        max_body_bytes: int = API_GATEWAY_MAX_BODY,
        access_log: Callable[[str], None] | None = None,
    ) -> None:
        self.handler = handler
        self.access_log = access_log
        self.timeout_s = timeout_s
        self.paths = paths
        self.jwt_authorizer = jwt_authorizer
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # uvicorn runs with lifespan off; websockets are not served
        if self.access_log is None:
            await self._serve(scope, receive, send, None)
            return
        started = time.monotonic()
        seen = _Seen(send)
        try:
            await self._serve(scope, receive, seen.send, seen)
        finally:
            elapsed_ms = (time.monotonic() - started) * 1000
            self.access_log(
                access_line(scope["method"], scope["path"], seen.request, seen, elapsed_ms)
            )

    async def _serve(self, scope: Scope, receive: Receive, send: Send, seen: _Seen | None) -> None:
        raise NotImplementedError

    async def _admitted_body(
        self, scope: Scope, receive: Receive, send: Send, seen: _Seen | None
    ) -> bytes | None:
        """The body of a request API Gateway lets through; None once it answered instead
        (404 off its routes, 413 over its payload limit)."""
        if scope["path"] not in self.paths:
            await _plain(send, 404, b"Not Found: the endpoint is /mcp")
            return None
        body = await _read_body(receive, self.max_body_bytes)
        if seen is not None:
            seen.request = body
        if body is None:
            await _plain(send, 413, json.dumps({"message": "Request Entity Too Large"}).encode())
        return body

    def close(self) -> None:
        """Stop whatever the function still runs, as Lambda ends its environments."""


class LambdaHttpApp(ApiGatewayFront):
    """Serves `handler` at `paths` with the function's timeout, as the HTTP API would
    (the `BUFFERED` front door)."""

    def __init__(self, handler: Handler, *, max_concurrency: int = 64, **front: Any) -> None:
        super().__init__(handler, **front)  # `ApiGatewayFront`'s settings
        self._executor = ThreadPoolExecutor(max_concurrency, thread_name_prefix="lambda-api")
        self._running: set[HandlerCall] = set()
        self._lock = threading.Lock()
        self._closed = False

    def close(self) -> None:
        """Stop every handler still running (a listen window, say), as Lambda would end its
        environments, and wait a moment for them: none may outlive the stack's AWS."""
        with self._lock:
            self._closed = True
            running = list(self._running)
        for call in running:
            call.interrupt()
        self._executor.shutdown(wait=False, cancel_futures=True)
        deadline = time.monotonic() + _CLOSE_WAIT_S
        while self._running and time.monotonic() < deadline:
            time.sleep(0.01)

    async def _serve(self, scope: Scope, receive: Receive, send: Send, seen: _Seen | None) -> None:
        body = await self._admitted_body(scope, receive, send, seen)
        if body is None:
            return
        query = scope.get("query_string", b"").decode("latin-1")
        client = scope.get("client") or ("127.0.0.1", 0)
        event = build_event(
            method=scope["method"],
            path=scope["path"] + (f"?{query}" if query else ""),
            headers=combined_headers(scope["headers"]),
            body=body,
            source_ip=str(client[0]),
            jwt_authorizer=self.jwt_authorizer,
        )
        stream = _ResponseStream(asyncio.get_running_loop(), send)
        watcher = asyncio.create_task(_watch_disconnect(receive, stream))
        try:
            await self._invoke(event, stream)
        finally:
            watcher.cancel()

    async def _invoke(self, event: dict[str, Any], stream: _ResponseStream) -> None:
        context = LocalLambdaContext(response_stream=stream, timeout_s=self.timeout_s)
        call = HandlerCall(self.handler, event, context)
        future = self._started(call)
        if future is None:  # the stack is stopping: its server may still take a request
            await _fail(stream)
            return
        try:
            result = await asyncio.wait_for(asyncio.shield(future), self.timeout_s)
        except TimeoutError:
            call.interrupt()
            logger.warning("the API function timed out after %.0f s", self.timeout_s)
            await _fail(stream)
            return
        except asyncio.CancelledError:
            # uvicorn's graceful shutdown ran out with this request in flight: the stack is
            # stopping. The function stops as Lambda would stop it, and the answer ends here
            # (raised on, uvicorn would log the cancellation as the app's failure).
            call.interrupt()
            await _stopped(stream)
            return
        except (BrokenPipeError, ConnectionError):
            return  # the client left mid-stream
        except Exception:
            logger.exception("the API function failed")
            await _fail(stream)
            return
        if stream.started:
            await _quietly(stream.end())
            return
        if not isinstance(result, dict):  # interrupted: the stack is stopping
            await _fail(stream)
            return
        await _send_result(stream, result)

    def _started(self, call: HandlerCall) -> asyncio.Future[Any] | None:
        """The function's run of `call` in a worker thread; None once the app is closed."""
        if self._closed:
            return None
        try:
            return asyncio.get_running_loop().run_in_executor(self._executor, self._tracked(call))
        except RuntimeError:  # closed meanwhile: its executor takes nothing new
            return None

    def _tracked(self, call: HandlerCall) -> Callable[[], Any]:
        def run() -> Any:
            with self._lock:
                self._running.add(call)
            try:
                return call()
            finally:
                with self._lock:
                    self._running.discard(call)

        return run


class _Seen:
    """What an access line needs of one exchange: the request body, the status, an error."""

    def __init__(self, send: Send) -> None:
        self.request: bytes | None = None
        self.status: int | None = None
        self.error_code: int | None = None
        self.streamed = False
        self.send = _SeenSend(self, send)


class _SeenSend:
    """`send`, noting the status and (for a JSON answer) the JSON-RPC error code on the way."""

    def __init__(self, seen: _Seen, send: Send) -> None:
        self.seen = seen
        self._send = send
        self._json = False

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.seen.status = int(message["status"])
            headers = dict(message.get("headers") or [])
            content_type = headers.get(b"content-type", b"").decode("latin-1")
            self._json = content_type.startswith("application/json")
            self.seen.streamed = content_type.startswith("text/event-stream")
        elif message["type"] == "http.response.body" and self._json and message.get("body"):
            self.seen.error_code = _error_code(message["body"])
        await self._send(message)


def _error_code(body: bytes) -> int | None:
    try:
        answer = json.loads(body)
    except ValueError:
        return None
    error = answer.get("error") if isinstance(answer, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, int) else None


def _names(message: Any) -> str:
    """`method name` of one JSON-RPC message (its tool, prompt, resource or task)."""
    if not isinstance(message, dict):
        return "?"
    method = message.get("method")
    if not isinstance(method, str):
        return "response" if "id" in message else "?"
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    assert isinstance(params, dict)
    named = params.get("name") or params.get("uri") or params.get("taskId")
    return f"{method} {named}" if isinstance(named, str) else method


def access_line(
    http_method: str, path: str, request: bytes | None, seen: _Seen, elapsed_ms: float
) -> str:
    """`POST tools/call sparkline -> 200 in 12 ms` (see the module docstring)."""
    what = path
    if request:
        try:
            message = json.loads(request)
        except ValueError:
            what = "(not JSON)"
        else:
            what = f"batch of {len(message)}" if isinstance(message, list) else _names(message)
    status = "-" if seen.status is None else str(seen.status)
    if seen.error_code is not None:
        status += f" error {seen.error_code}"
    elif seen.streamed:
        status += " stream"
    return f"{http_method} {what} -> {status} in {elapsed_ms:.0f} ms"


async def _fail(stream: _ResponseStream) -> None:
    if stream.started:
        await _quietly(stream.end())
    else:
        await _quietly(
            _complete(stream.send, 500, {"content-type": "application/json"}, _INTERNAL_ERROR)
        )


async def _stopped(stream: _ResponseStream) -> None:
    """End the answer of a request cancelled by the server stopping, without a traceback."""
    _uncancel()
    await _fail(stream)


def _uncancel() -> None:
    """Take back the cancellation this task is handling, to finish its answer instead: uvicorn
    cancels a request's task only when it stops, and waits for nothing after that."""
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()


async def _send_result(stream: _ResponseStream, result: dict[str, Any]) -> None:
    payload = result.get("body") or ""
    if result.get("isBase64Encoded"):
        import base64

        data = base64.b64decode(payload)
    else:
        data = payload.encode() if isinstance(payload, str) else bytes(payload)
    headers = {str(k).lower(): str(v) for k, v in (result.get("headers") or {}).items()}
    await _quietly(_complete(stream.send, int(result["statusCode"]), headers, data))


async def _complete(send: Send, status: int, headers: dict[str, str], body: bytes) -> None:
    headers = {**headers, "content-length": str(len(body))}
    await send(
        {"type": "http.response.start", "status": status, "headers": encoded_headers(headers)}
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _plain(send: Send, status: int, body: bytes) -> None:
    await _complete(send, status, {"content-type": "text/plain"}, body)


async def _quietly(sending: Awaitable[None]) -> None:
    # A client that is gone has nothing left to be told.
    with contextlib.suppress(BrokenPipeError, ConnectionError):
        await sending


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    """The whole request body, or None once it exceeds `limit` (the rest is not read)."""
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        parts.append(chunk)
        if not message.get("more_body"):
            break
    return b"".join(parts)


async def _watch_disconnect(receive: Receive, stream: _ResponseStream) -> None:
    """Once the body is read, `receive` answers only when the client disconnects."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            stream.gone.set()
            return


class _Answer:
    """`send` for an app whose invocation may end before it answered (or finished answering):
    `end` completes what it left."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.started = False
        self.ended = False

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started = True
        elif message["type"] == "http.response.body" and not message.get("more_body"):
            self.ended = True
        await self._send(message)

    async def end(self) -> None:
        if self.ended:
            return
        if not self.started:
            await _complete(self.send, 500, {"content-type": "application/json"}, _INTERNAL_ERROR)
            return
        await self.send({"type": "http.response.body", "body": b"", "more_body": False})


class RestStreamingApp(ApiGatewayFront):
    """The `STREAMING` front door as API Gateway's REST API puts it in front of the app.

    The app (`edge.streaming.StreamingApp`, what the Lambda Web Adapter serves deployed) runs
    here as it is; this layer does what API Gateway and the adapter do around it:
    - its routes (else 404) and its 10 MB payload limit (413 before the function runs);
    - CORS preflight (`OPTIONS`) answered here, never by the function (a mock integration
      deployed: a streamed empty body would hang);
    - the adapter's `x-amzn-request-context` (the REST request context: its stage, and with
      `jwt_authorizer` the bearer JWT's claims as a Cognito authorizer passes them, unverified
      here) and `x-amzn-lambda-context` (the deadline: the function's timeout from now)
      replace whatever the client sent under those names;
    - at the function's timeout the response ends, as Lambda ends the invocation; a request
      still in flight when the stack stops ends too (the app stops its work on `close`), and
      one that ended before it answered is API Gateway's 500.
    """

    stage = "api"
    """The REST API's stage: the function sees it in the request context (and the path)."""

    def close(self) -> None:
        """Stop what the app still serves (a listen window, say), as Lambda would end its
        environments: none may outlive the stack's AWS."""
        close = getattr(self.handler, "close", None)
        if close is not None:
            close()

    async def _serve(self, scope: Scope, receive: Receive, send: Send, seen: _Seen | None) -> None:
        if scope["method"] == "OPTIONS" and scope["path"] in self.paths:
            await _complete(send, 204, {"allow": "GET, POST, DELETE, OPTIONS"}, b"")
            return
        body = await self._admitted_body(scope, receive, send, seen)
        if body is None:
            return
        headers = [
            (name, value)
            for name, value in scope["headers"]
            if name.lower() not in (b"x-amzn-request-context", b"x-amzn-lambda-context")
        ]
        context = self._request_context(combined_headers(scope["headers"]), scope)
        deadline_ms = int((time.time() + self.timeout_s) * 1000)
        headers.append((b"x-amzn-request-context", json.dumps(context).encode("latin-1")))
        headers.append((b"x-amzn-lambda-context", json.dumps({"deadline": deadline_ms}).encode()))
        forwarded = {**scope, "headers": headers, "path": f"/{self.stage}{scope['path']}"}
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        answer = _Answer(send)
        try:
            await asyncio.wait_for(self.handler(forwarded, replay, answer.send), self.timeout_s)
        except TimeoutError:
            logger.warning("the API function timed out after %.0f s", self.timeout_s)
        except asyncio.CancelledError:
            # uvicorn's graceful shutdown ran out with this request in flight (the app stopped
            # its work on the way out): the stack is stopping, an expected end.
            _uncancel()
        # Lambda ends the invocation: so does this. A function stopped before it answered
        # (the stack stopping) is API Gateway's 500, as for a failed invocation.
        await _quietly(answer.end())

    def _request_context(self, headers: dict[str, str], scope: Scope) -> dict[str, Any]:
        client = scope.get("client") or ("127.0.0.1", 0)
        context: dict[str, Any] = {
            "stage": self.stage,
            "path": f"/{self.stage}{scope['path']}",
            "requestId": str(uuid.uuid4()),
            "identity": {"sourceIp": str(client[0])},
        }
        claims = unverified_jwt_claims(headers.get("authorization"))
        if self.jwt_authorizer and claims is not None:
            context["authorizer"] = {
                "claims": {k: v if isinstance(v, str) else json.dumps(v) for k, v in claims.items()}
            }
        return context
