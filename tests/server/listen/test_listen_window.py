"""A short window (800 ms, polled every 100 ms): with nothing to deliver, the stream ends with
the listen response about when the window ends, and carries no notification.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mcp_tasks_aws.local.apigw_emulator import LocalLambdaContext, build_event
from mcp_tasks_aws.local.stack import EmbeddedStack
from support.listen import NO_TASKS_CAPABILITIES, listen, listen_body, listen_headers
from support.mcp import running_stack
from support.tasks import TaskClient, WorkerDispatch

# Metrics are disabled locally; Powertools warns on each empty flush.
pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")
NewId = Callable[[], str]
WINDOW_S = 0.8
SHORT_ENV = {
    "MCP_TASKS_TOOLS": "conformance",
    "MCP_TASKS_LISTEN_WINDOW_MS": "800",
    "MCP_TASKS_LISTEN_POLL_MS": "100",
}


@pytest.fixture(scope="module")
def short() -> Iterator[EmbeddedStack]:
    with running_stack(**SHORT_ENV) as running:
        yield running


@pytest.fixture(scope="module")
def short_tasks(short: EmbeddedStack) -> TaskClient:
    return TaskClient(short, WorkerDispatch(short))


def test_the_window_ends_with_the_response_and_nothing_else(
    short: EmbeddedStack, short_tasks: TaskClient, new_id: NewId
) -> None:
    # Waits for an answer nobody gives: nothing changes in 0.8 s.
    task_id = short_tasks.create("confirm_delete", {"filename": "long.txt"})
    short_tasks.wait_input(task_id)
    try:
        rid = new_id()
        listened = listen(short, {"taskIds": [task_id]}, rid=rid, deadline_s=5)
        listened.check()
        assert listened.acked() == {"taskIds": [task_id]}
        assert listened.notifications == []
        ack_at = listened.timed[0][0]
        assert ack_at < WINDOW_S / 2, ack_at
        assert WINDOW_S - 0.05 <= listened.ended_at < WINDOW_S + 1.0, listened.ended_at
        # Still waiting: the window simply ran out; the client would listen again.
        assert listened.snapshot[0]["params"]["status"] == "input_required"
        assert short_tasks.get(task_id)["status"] == "input_required"
    finally:
        short_tasks.cancel(task_id)


def test_list_changed_alone_needs_no_tasks_opt_in(short: EmbeddedStack, new_id: NewId) -> None:
    rid = new_id()
    listened = listen(
        short, {"toolsListChanged": True}, rid=rid, capabilities=NO_TASKS_CAPABILITIES
    )
    listened.check()
    assert listened.acked() == {"toolsListChanged": True}
    assert listened.notifications == []
    assert WINDOW_S - 0.05 <= listened.ended_at < WINDOW_S + 1.0, listened.ended_at


def test_a_buffered_window_with_nothing_to_deliver(short: EmbeddedStack, new_id: NewId) -> None:
    rid = new_id()
    body = listen_body({"promptsListChanged": True}, rid)
    event = build_event(method="POST", path="/mcp", headers=listen_headers(), body=body)
    started = time.monotonic()
    answer: dict[str, Any] = short.api_handler(event, LocalLambdaContext())
    took = time.monotonic() - started
    assert answer["statusCode"] == 200
    assert answer["headers"]["content-type"] == "text/event-stream"
    messages = [
        json.loads(line[len("data:") :])
        for line in answer["body"].split("\n")
        if line.startswith("data:")
    ]
    assert [m.get("method") for m in messages] == [
        "notifications/subscriptions/acknowledged",
        None,
    ]
    assert messages[0]["params"]["notifications"] == {"promptsListChanged": True}
    assert messages[1]["id"] == rid
    assert WINDOW_S - 0.05 <= took < WINDOW_S + 1.0, took
