"""The Lambda path: deployed, API Gateway gets the whole window at once.

The API handler module is called directly, as Lambda would call it: an API Gateway payload-v2
event and a context offering no `response_stream`. The body must hold the whole SSE window.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from mcp_tasks_aws.local.apigw_emulator import LocalLambdaContext, build_event
from mcp_tasks_aws.local.stack import EmbeddedStack
from support.listen import (
    ACKNOWLEDGED,
    SUBSCRIPTION_ID,
    TASK_NOTIFICATION,
    PacedDispatch,
    assert_valid_message,
    listen_body,
    listen_headers,
    without_result_type,
)
from support.tasks import TaskClient

# Metrics are disabled locally; Powertools warns on each empty flush.
pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")
NewId = Callable[[], str]


def invoke(stack: EmbeddedStack, body: bytes) -> tuple[dict[str, Any], float]:
    """The API function's answer to one listen request, and how long it took."""
    event = build_event(method="POST", path="/mcp", headers=listen_headers(), body=body)
    context = LocalLambdaContext()
    assert context.response_stream is None  # what Lambda offers: nothing to stream to
    started = time.monotonic()
    answer: dict[str, Any] = stack.api_handler(event, context)
    return answer, time.monotonic() - started


def sse_messages(body: str) -> list[dict[str, Any]]:
    return [
        json.loads(line[len("data:") :]) for line in body.split("\n") if line.startswith("data:")
    ]


def test_the_lambda_answer_holds_the_whole_window(
    stack: EmbeddedStack, tasks: TaskClient, paced: PacedDispatch, new_id: NewId
) -> None:
    # A task whose leg starts 0.6 s late and then ends at once: one change, its completion.
    paced.leg_delay["slow_compute"] = 0.6
    task_id = tasks.create("slow_compute", {"seconds": 0, "label": "buffered"})
    rid = new_id()
    answer, took = invoke(stack, listen_body({"taskIds": [task_id]}, rid))
    got = tasks.get(task_id)

    assert answer["statusCode"] == 200
    assert answer["headers"]["content-type"] == "text/event-stream"
    assert answer["isBase64Encoded"] is False
    assert "streamed" not in answer
    messages = sse_messages(answer["body"])
    methods = [m.get("method") for m in messages]
    assert methods == [ACKNOWLEDGED, TASK_NOTIFICATION, TASK_NOTIFICATION, None]
    ack, snapshot, note, response = messages
    assert ack["params"] == {
        "notifications": {"taskIds": [task_id]},
        "_meta": {SUBSCRIPTION_ID: rid},
    }
    # First the task as it stood (working), then its change: the window closes on it.
    assert snapshot["params"]["status"] == "working"
    assert note["params"]["_meta"] == {SUBSCRIPTION_ID: rid}
    assert note["params"]["status"] == "completed"
    assert {k: v for k, v in note["params"].items() if k != "_meta"} == without_result_type(got)
    assert response == {
        "jsonrpc": "2.0",
        "id": rid,
        "result": {"resultType": "complete", "_meta": {SUBSCRIPTION_ID: rid}},
    }
    for message in messages:
        assert_valid_message(message)
    # One answer for the whole window: it came once the task had completed.
    assert took >= 0.3, took
    # Events are whole: each is `event: message` then one `data:` line, then a blank line.
    assert answer["body"].endswith("\n\n")
    assert answer["body"].count("event: message\n") == 4


def test_the_lambda_answer_to_a_terminal_task_is_ack_and_response(
    stack: EmbeddedStack, tasks: TaskClient, new_id: NewId
) -> None:
    task_id = tasks.create("slow_compute", {"seconds": 0, "label": "buffered-done"})
    tasks.wait_terminal(task_id)
    rid = new_id()
    answer, took = invoke(stack, listen_body({"taskIds": [task_id]}, rid))
    assert answer["statusCode"] == 200
    assert answer["headers"]["content-type"] == "text/event-stream"
    messages = sse_messages(answer["body"])
    assert [m.get("method") for m in messages] == [ACKNOWLEDGED, TASK_NOTIFICATION, None]
    # The task as it stands (its final state), and the window closes at once.
    assert messages[1]["params"]["status"] == "completed"
    assert messages[2]["id"] == rid
    assert took < 1.5, took


def test_a_buffered_window_does_not_end_on_progress_only_on_a_status_change(
    stack: EmbeddedStack, tasks: TaskClient, new_id: NewId
) -> None:
    # Given a 1.5-second task that reports progress every second while it works
    task_id = tasks.create("slow_compute", {"seconds": 1.5, "label": "buffered-progress"})
    # When API Gateway's buffered window is read (it arrives whole, once it ends)
    answer, _ = invoke(stack, listen_body({"taskIds": [task_id]}, new_id()))
    messages = sse_messages(answer["body"])
    changes = [m["params"] for m in messages[2:-1]]
    # Then a progress write did not end it: the window held on to the completion
    assert changes, messages
    assert changes[-1]["status"] == "completed"
    assert all(c["status"] == "working" for c in changes[:-1]), changes
    assert "result" in messages[-1]


def test_a_buffered_window_ends_when_the_task_asks(
    stack: EmbeddedStack, tasks: TaskClient, paced: PacedDispatch, new_id: NewId
) -> None:
    # Given a task whose leg starts late and then asks a question (it waits for the answer)
    paced.leg_delay["confirm_delete"] = 0.6
    task_id = tasks.create("confirm_delete", {"filename": "buffered.txt"})
    # When the buffered window is read
    answer, took = invoke(stack, listen_body({"taskIds": [task_id]}, new_id()))
    messages = sse_messages(answer["body"])
    # Then it ended on the new status, well before its time limit: the client must answer
    assert [m["params"]["status"] for m in messages[1:-1]] == ["working", "input_required"]
    assert took < 10, took
    tasks.cancel(task_id)
