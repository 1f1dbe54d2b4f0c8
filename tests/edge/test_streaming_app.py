"""The streaming front door's ASGI app (`edge.streaming`), driven directly (no server): what API
Gateway's REST request context becomes, the deadline an inline run gets, the traps of a
streamed integration (the follow-up invocation, empty bodies) and a client that leaves."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from local.test_asgi import Exchange
from mcp_tasks_aws.edge.apigw import principal_of
from mcp_tasks_aws.edge.streaming import (
    LAMBDA_CONTEXT_HEADER,
    PASS_THROUGH_PATH,
    READINESS_PATH,
    REQUEST_CONTEXT_HEADER,
    StreamingApp,
    authorizer_of,
    event_of,
)
from mcp_tasks_aws.protocol.transport import HttpResponse
from mcp_tasks_aws.server.live import ClientGone


def scope(path: str = "/mcp", method: str = "POST", headers: dict[str, str] | None = None) -> Any:
    raw = [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    return {
        "type": "http",
        "method": method,
        "path": path,
        "headers": raw,
        "client": ("1.2.3.4", 9),
    }


def serve(app: StreamingApp, exchange: Exchange, **kwargs: Any) -> Exchange:
    asyncio.run(app(scope(**kwargs), exchange.receive, exchange.send))
    return exchange


class Recorder:
    """An edge that records what it was handed and answers `response`."""

    def __init__(self, response: HttpResponse | None = None) -> None:
        self.response = response or HttpResponse(200, {"content-type": "application/json"}, b"{}")
        self.events: list[dict[str, Any]] = []
        self.contexts: list[Any] = []

    def __call__(self, event: dict[str, Any], context: Any) -> HttpResponse:
        self.events.append(event)
        self.contexts.append(context)
        return self.response


# -- who the caller is --------------------------------------------------------------------------


def test_each_rest_authorizer_names_the_caller_the_http_api_would() -> None:
    # IAM: the REST context's identity is the HTTP API's `iam` authorizer
    rest_iam = {"identity": {"accountId": "123", "userArn": "arn:aws:iam::123:user/alice"}}
    http_iam = {"iam": {"accountId": "123", "userArn": "arn:aws:iam::123:user/alice"}}
    # A Cognito authorizer's claims are the JWT authorizer's
    claims = {"iss": "https://issuer", "sub": "alice", "client_id": "app", "scope": "a b"}
    rest_jwt = {"authorizer": {"claims": claims}}
    http_jwt = {"jwt": {"claims": claims, "scopes": None}}
    # A Lambda authorizer's principalId
    rest_lambda = {"authorizer": {"principalId": "alice"}}
    http_lambda = {"lambda": {"principalId": "alice"}}
    for rest, http in ((rest_iam, http_iam), (rest_jwt, http_jwt), (rest_lambda, http_lambda)):
        translated = {"requestContext": {"authorizer": authorizer_of(rest)}}
        assert principal_of(translated) == principal_of({"requestContext": {"authorizer": http}})
    # No authorizer (AuthMode NONE): the anonymous caller, whatever the identity's source IP,
    # and whatever empty fields a method without an authorizer carries
    assert authorizer_of({"identity": {"sourceIp": "1.2.3.4"}}) is None
    empty = {"authorizer": {"claims": {}, "principalId": None}, "identity": {"userArn": None}}
    assert authorizer_of(empty) is None


def test_the_request_context_comes_from_the_adapters_header_only() -> None:
    context = {"stage": "api", "authorizer": {"claims": {"sub": "alice", "iss": "i"}}}
    headers = {REQUEST_CONTEXT_HEADER: json.dumps(context), "accept": "*/*"}
    event = event_of("POST", "/mcp", headers, b"{}", "1.2.3.4")
    assert event["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] == "alice"
    # The adapter's headers do not travel on as request headers
    assert REQUEST_CONTEXT_HEADER not in event["headers"]
    assert event["headers"] == {"accept": "*/*"}
    # A body that is not text travels as base64, as API Gateway sends it
    binary = event_of("POST", "/mcp", {}, b"\xff\x00", "1.2.3.4")
    assert binary["isBase64Encoded"] is True


def test_the_rest_stage_is_left_out_of_the_path() -> None:
    recorder = Recorder()
    app = StreamingApp(recorder, inline_deadline_s=240)
    headers = {REQUEST_CONTEXT_HEADER: json.dumps({"stage": "api"})}
    assert serve(app, Exchange(), path="/api/mcp", headers=headers).status == 200
    assert recorder.events[0]["rawPath"] == "/mcp"
    assert serve(app, Exchange(), path="/api/other", headers=headers).status == 404


# -- how long an inline run may take --------------------------------------------------------------


def test_an_inline_run_gets_the_streamed_deadline_within_the_functions_time() -> None:
    recorder = Recorder()
    app = StreamingApp(recorder, inline_deadline_s=240)
    # The function has 250 s left: the streamed deadline (240 s) is well past API Gateway's 29
    serve(app, Exchange(), headers={LAMBDA_CONTEXT_HEADER: deadline_in(250)})
    left = recorder.contexts[0].get_remaining_time_in_millis() / 1000
    assert 239 < left <= 241.5
    # The function has 100 s left: its own time bounds the run
    serve(app, Exchange(), headers={LAMBDA_CONTEXT_HEADER: deadline_in(100)})
    assert 98 < recorder.contexts[1].get_remaining_time_in_millis() / 1000 <= 100
    # ... and the answer streams, so the edge reads `streaming` from the context
    assert recorder.contexts[1].response_stream is not None


def deadline_in(seconds: float) -> str:
    return json.dumps({"deadline": int((time.time() + seconds) * 1000)})


# -- the traps of a streamed integration ----------------------------------------------------------


def test_the_follow_up_invocation_is_acknowledged_and_never_served_as_mcp() -> None:
    recorder = Recorder()
    app = StreamingApp(recorder, inline_deadline_s=240)
    follow_up = Exchange(json.dumps({"some": "event"}).encode())
    serve(app, follow_up, path=PASS_THROUGH_PATH)
    assert follow_up.status == 200
    assert json.loads(follow_up.content) == {"acknowledged": True}
    assert recorder.events == []  # the edge never saw it
    assert app.follow_ups == 1


def test_the_readiness_path_answers_before_anything_else() -> None:
    recorder = Recorder()
    ready = serve(StreamingApp(recorder, inline_deadline_s=1), Exchange(), path=READINESS_PATH)
    assert ready.status == 200
    assert recorder.events == []


@pytest.mark.parametrize(("status", "padded_status"), [(202, 202), (204, 200)])
def test_an_empty_body_behind_the_streamed_integration_gets_one(
    status: int, padded_status: int
) -> None:
    empty = Recorder(HttpResponse(status))
    # Behind API Gateway's streamed integration: never an empty streamed body (it would hang)
    padded = serve(StreamingApp(empty, inline_deadline_s=1, pad_empty_bodies=True), Exchange())
    assert padded.status == padded_status
    assert padded.content == b"{}"
    # Served directly (make run): exactly the transport's answer, no body
    plain = serve(StreamingApp(empty, inline_deadline_s=1), Exchange())
    assert plain.status == status
    assert plain.content == b""


def test_a_streamed_answer_goes_out_chunk_by_chunk() -> None:
    sent_at: list[float] = []

    def chunks() -> Iterator[bytes]:
        for index in range(3):
            sent_at.append(time.monotonic())
            yield f"data: {index}\n\n".encode()
            time.sleep(0.2)

    app = StreamingApp(Recorder(HttpResponse(200, {}, stream=chunks())), inline_deadline_s=5)
    exchange = Exchange()

    async def send(message: dict[str, Any]) -> None:
        exchange.sent.append({**message, "at": time.monotonic()})

    asyncio.run(app(scope(), exchange.receive, send))
    bodies = [m for m in exchange.sent if m.get("body")]
    assert [m["body"] for m in bodies] == [b"data: 0\n\n", b"data: 1\n\n", b"data: 2\n\n"]
    # Each chunk left when it was made, not once the stream ended
    assert bodies[0]["at"] < sent_at[2]


def test_a_client_that_leaves_stops_the_stream_at_its_next_step() -> None:
    stopped = threading.Event()
    steps: list[int] = []

    def window() -> Iterator[bytes]:
        try:
            for index in range(100):  # a 20 s window, polling every 0.2 s
                steps.append(index)
                if index == 0:
                    yield b"data: ack\n\n"
                time.sleep(0.2)
            yield b"data: end\n\n"
        except ClientGone:
            stopped.set()
            raise

    app = StreamingApp(Recorder(HttpResponse(200, {}, stream=window())), inline_deadline_s=30)
    started = time.monotonic()
    serve(app, Exchange(leave_after=0.5))
    assert stopped.wait(2.0), "the window kept polling for a client that left"
    assert time.monotonic() - started < 3.0
    assert len(steps) < 15
