"""The ASGI adapter in front of the embedded API function, driven directly (no server): the
function's timeout, streamed responses, a client that leaves mid-stream, API Gateway's
answers for failures."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

from mcp_tasks_aws.local.asgi import LambdaHttpApp, RestStreamingApp


class Exchange:
    """One HTTP exchange as ASGI sees it: a request body in, messages out."""

    def __init__(self, body: bytes = b"{}", *, leave_after: float | None = None) -> None:
        self.body = body
        self.sent: list[dict[str, Any]] = []
        self.leave_after = leave_after
        self._body_sent = False

    async def receive(self) -> dict[str, Any]:
        if not self._body_sent:
            self._body_sent = True
            return {"type": "http.request", "body": self.body, "more_body": False}
        if self.leave_after is None:
            await asyncio.sleep(3600)
        else:
            await asyncio.sleep(self.leave_after)
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)

    @property
    def status(self) -> int:
        return int(self.sent[0]["status"])

    @property
    def content(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.sent[1:])


def serve(app: LambdaHttpApp, exchange: Exchange, path: str = "/mcp") -> None:
    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "query_string": b"",
        "headers": [(b"content-type", b"application/json")],
        "client": ("127.0.0.1", 5000),
    }
    try:
        asyncio.run(app(scope, exchange.receive, exchange.send))
    finally:
        app.close()


def test_a_handler_past_its_timeout_is_stopped_and_answered_500() -> None:
    # Given a function with a 0.3 s timeout whose handler never returns on its own
    stopped = threading.Event()

    def stuck(event: dict[str, Any], context: Any) -> Any:
        try:
            while True:
                time.sleep(0.01)
        finally:
            stopped.set()

    exchange = Exchange()
    started = time.monotonic()
    serve(LambdaHttpApp(stuck, timeout_s=0.3), exchange)
    # Then the client gets API Gateway's answer at the timeout, and the handler is stopped
    assert time.monotonic() - started < 2
    assert exchange.status == 500
    assert json.loads(exchange.content) == {"message": "Internal Server Error"}
    assert stopped.wait(2)


def test_the_context_counts_down_from_the_function_timeout() -> None:
    seen: list[int] = []

    def handler(event: dict[str, Any], context: Any) -> Any:
        seen.append(context.get_remaining_time_in_millis())
        return {"statusCode": 204, "headers": {}, "body": ""}

    exchange = Exchange()
    serve(LambdaHttpApp(handler, timeout_s=7), exchange)
    assert exchange.status == 204
    assert 6_000 < seen[0] <= 7_000


def test_a_raising_handler_is_answered_like_api_gateway() -> None:
    def broken(event: dict[str, Any], context: Any) -> Any:
        raise RuntimeError("boom")

    exchange = Exchange()
    serve(LambdaHttpApp(broken, timeout_s=5), exchange)
    assert exchange.status == 500
    assert b"boom" not in exchange.content


def test_a_streamed_response_goes_out_chunk_by_chunk() -> None:
    def streaming(event: dict[str, Any], context: Any) -> Any:
        sink = context.response_stream
        sink.begin(200, {"content-type": "text/event-stream"})
        for part in (b"one", b"two"):
            sink.write(part)
        return {"statusCode": 200, "headers": {}, "body": "", "streamed": True}

    exchange = Exchange()
    serve(LambdaHttpApp(streaming, timeout_s=5), exchange)
    assert exchange.status == 200
    bodies = [m for m in exchange.sent if m["type"] == "http.response.body"]
    assert [m["body"] for m in bodies] == [b"one", b"two", b""]
    assert [m["more_body"] for m in bodies] == [True, True, False]


def test_a_client_that_leaves_ends_the_stream_in_the_handler() -> None:
    # Given a handler streaming every 50 ms for up to 5 s, and a client that leaves at 0.2 s
    ended = threading.Event()

    def streaming(event: dict[str, Any], context: Any) -> Any:
        sink = context.response_stream
        sink.begin(200, {"content-type": "text/event-stream"})
        try:
            for _ in range(100):
                sink.write(b"tick")
                time.sleep(0.05)
        except BrokenPipeError:
            ended.set()
            raise
        return {"statusCode": 200, "headers": {}, "body": "", "streamed": True}

    started = time.monotonic()
    serve(LambdaHttpApp(streaming, timeout_s=10), Exchange(leave_after=0.2))
    # Then the handler's next write fails and the window ends early
    assert ended.wait(2)
    assert time.monotonic() - started < 3


def test_other_paths_and_oversized_bodies_never_reach_the_handler() -> None:
    calls: list[Any] = []

    def handler(event: dict[str, Any], context: Any) -> Any:
        calls.append(event)
        return {"statusCode": 200, "headers": {}, "body": ""}

    elsewhere = Exchange()
    serve(LambdaHttpApp(handler, timeout_s=5), elsewhere, path="/other")
    oversized = Exchange(b"x" * 101)
    serve(LambdaHttpApp(handler, timeout_s=5, max_body_bytes=100), oversized)
    assert (elsewhere.status, oversized.status) == (404, 413)
    assert calls == []


class Busy:
    """A function that works for 10 s unless it is stopped, polling as a listen window does."""

    def __init__(self) -> None:
        self.started, self.stopped = threading.Event(), threading.Event()

    def __call__(self, event: dict[str, Any], context: Any) -> Any:
        self.started.set()
        try:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                time.sleep(0.05)  # stands for a store read the stopped stack can no longer serve
        finally:
            self.stopped.set()
        return {"statusCode": 200, "headers": {}, "body": ""}


def test_closing_the_app_stops_handlers_still_running() -> None:
    # Given a listen-like handler that would keep polling for 10 s
    window = Busy()
    app = LambdaHttpApp(window, timeout_s=30)
    exchange = Exchange()
    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": [], "query_string": b""}
    server = threading.Thread(
        target=lambda: asyncio.run(app(scope, exchange.receive, exchange.send)), daemon=True
    )
    server.start()
    assert window.started.wait(5)
    # When the stack stops (its server first, then the app), Then the handler ends with it
    began = time.monotonic()
    app.close()
    assert window.stopped.wait(1)
    assert time.monotonic() - began < 4


def cancelled_mid_request(app: Any, exchange: Exchange, started: threading.Event) -> None:
    """Serve one request and cancel it once the function runs, as uvicorn does to the requests
    still in flight when its graceful shutdown runs out; raises what the app raises."""

    async def main() -> None:
        scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": []}
        request = asyncio.create_task(
            app({**scope, "query_string": b""}, exchange.receive, exchange.send)
        )
        assert await asyncio.to_thread(started.wait, 5)
        request.cancel()
        await request

    try:
        asyncio.run(main())
    finally:
        app.close()


def test_a_request_cancelled_by_the_server_stopping_ends_with_a_500_not_an_error() -> None:
    # Given a function that would run for 10 s
    busy = Busy()
    # When the server cancels the request, Then the app answers it and returns (no
    # CancelledError for uvicorn to log as the app's failure), and the function is stopped
    exchange = Exchange()
    cancelled_mid_request(LambdaHttpApp(busy, timeout_s=30), exchange, busy.started)
    assert exchange.status == 500
    assert json.loads(exchange.content) == {"message": "Internal Server Error"}
    assert busy.stopped.wait(2)


def test_a_request_after_the_app_closed_is_answered_500_without_reaching_the_function() -> None:
    calls: list[Any] = []

    def handler(event: dict[str, Any], context: Any) -> Any:
        calls.append(event)
        return {"statusCode": 200, "headers": {}, "body": ""}

    app = LambdaHttpApp(handler, timeout_s=5)
    app.close()  # the stack is stopping: its server has not closed its socket yet
    exchange = Exchange()
    serve(app, exchange)
    assert exchange.status == 500
    assert calls == []


def test_the_streaming_door_ends_a_request_the_server_cancels_with_a_500() -> None:
    # Given the streaming door in front of an app that answers nothing for 10 s
    started = threading.Event()

    async def silent(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        started.set()
        await asyncio.sleep(10)

    exchange = Exchange()
    cancelled_mid_request(RestStreamingApp(silent, timeout_s=30), exchange, started)
    # Then the client gets API Gateway's answer for an invocation that ended unanswered
    assert exchange.status == 500
    assert json.loads(exchange.content) == {"message": "Internal Server Error"}
