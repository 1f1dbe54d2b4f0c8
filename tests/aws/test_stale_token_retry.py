"""A task-token call whose first copy landed but whose answer was lost, resent by the SDK as its
row of `aws.call_policies` allows (`REPEATABLE`), meets the token its own first copy spent:
Step Functions answers the resent copy `TaskTimedOut`, as for a state that stopped waiting.
That refusal must not be read as a stale token (issue 26, items 2 and 8): a declared
workflow's task would then say that an answer it delivered was not ("the answer was recorded
but not delivered"). Against a real endpoint on 127.0.0.1 that answers the first copy after
the client stopped waiting, and the second with `TaskTimedOut`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from mcp_tasks_aws.aws.clients import Clients
from mcp_tasks_aws.aws.stepfunctions import send_task_failure, send_task_success
from support.endpoints import endpoint_session, serving

SCALE = 0.05
"""The repeatable read timeout (5 s) becomes 0.25 s."""


class TokenEndpoint(ThreadingHTTPServer):
    """Step Functions' task-token calls: copies in `lost` land and answer after the client
    gave up; every other copy is refused `TaskTimedOut` (its token is spent, or timed out)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.received: list[str] = []
        self.lost: set[int] = set()


class _Handler(BaseHTTPRequestHandler):
    server: TokenEndpoint

    def log_message(self, *_: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        operation = (self.headers.get("x-amz-target") or "").rpartition(".")[2]
        self.server.received.append(operation)
        copy = len(self.server.received)
        if copy in self.server.lost:
            time.sleep(0.6)  # it landed; its answer comes after the client gave up
            status, answer = 200, {}
        else:
            status = 400
            answer = {
                "__type": "TaskTimedOut",
                "message": "Task Timed Out: 'Provided task does not exist anymore'",
            }
        raw = json.dumps(answer).encode()
        try:
            self.send_response(status)
            self.send_header("content-type", "application/x-amz-json-1.0")
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)
        except OSError:
            pass


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[TokenEndpoint]:
    server = TokenEndpoint()
    with serving(server, monkeypatch):
        yield server


@pytest.fixture
def sfn(endpoint: TokenEndpoint) -> Any:
    return Clients(endpoint_session(), time_scale=SCALE).get("stepfunctions")


def test_an_answer_whose_first_copy_landed_unheard_is_not_read_as_stale(
    endpoint: TokenEndpoint, sfn: Any
) -> None:
    endpoint.lost.add(1)
    assert send_task_success(sfn, "token", {"approve": True}) is True
    assert endpoint.received == ["SendTaskSuccess", "SendTaskSuccess"]


def test_a_refusal_whose_first_copy_landed_unheard_is_not_read_as_stale(
    endpoint: TokenEndpoint, sfn: Any
) -> None:
    endpoint.lost.add(1)
    assert send_task_failure(sfn, "token", "McpDeclined", "The user declined") is True
    assert endpoint.received == ["SendTaskFailure", "SendTaskFailure"]


def test_a_token_refused_at_the_first_copy_is_stale(endpoint: TokenEndpoint, sfn: Any) -> None:
    # The check can fail both ways: a token that was dead before this call is stale.
    assert send_task_success(sfn, "token", {"approve": True}) is False
    assert send_task_failure(sfn, "token", "McpDeclined", "The user declined") is False
    assert endpoint.received == ["SendTaskSuccess", "SendTaskFailure"]
