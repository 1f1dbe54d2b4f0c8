"""The listen stream over HTTP: ordering, full-task payloads, early and terminal closes,
reconnecting, list-changed routing, and the ack arriving while the window is still open.

The stack runs the deployed window (20 s), polled every 100 ms: every stream here ends early,
because something was delivered or every listed task is terminal.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable
from typing import Any

import pytest

from mcp_tasks_aws.local.stack import EmbeddedStack
from mcp_tasks_aws.protocol.progress import parse_status
from support.listen import (
    NO_TASKS_CAPABILITIES,
    PROMPTS_CHANGED,
    SUBSCRIPTION_ID,
    TASK_NOTIFICATION,
    TOOLS_CHANGED,
    Background,
    PacedDispatch,
    as_get,
    listen,
    listen_until_terminal,
    method_note,
    task_note,
    without_result_type,
)
from support.tasks import TaskClient, wait_until

# Metrics are disabled locally; Powertools warns on each empty flush.
pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")
NewId = Callable[[], str]
WINDOW_S = 20.0  # the deployed default the package stack runs with
# A request that would get logs and progress anywhere else: never on a listen stream.
CHATTY_META = {"io.modelcontextprotocol/logLevel": "debug", "progressToken": "listen-progress"}


def test_ordering_ack_then_snapshot_then_changes_then_the_response(
    stack: EmbeddedStack, tasks: TaskClient, paced: PacedDispatch, new_id: NewId
) -> None:
    done = tasks.create("slow_compute", {"seconds": 0, "label": "done"})
    tasks.wait_terminal(done)
    paced.leg_delay["slow_compute"] = 0.6  # the running one ends 0.6 s from now, nothing before
    running = tasks.create("slow_compute", {"seconds": 0, "label": "running"})
    rid = new_id()
    listened = listen(stack, {"taskIds": [done, running]}, rid=rid, meta_extra=CHATTY_META)
    listened.check()
    assert sorted(listened.acked()["taskIds"]) == sorted([done, running])
    methods = [m.get("method") for m in listened.messages]
    assert methods == [
        "notifications/subscriptions/acknowledged",
        TASK_NOTIFICATION,
        TASK_NOTIFICATION,
        TASK_NOTIFICATION,
        None,
    ]
    times = [at for at, _ in listened.timed]
    assert times == sorted(times)
    # The snapshot shows both as they stood; the one change is the running task's completion.
    snapshot = {n["params"]["taskId"]: n["params"]["status"] for n in listened.snapshot}
    assert snapshot == {done: "completed", running: "working"}
    [note] = listened.notifications
    assert (note["params"]["taskId"], note["params"]["status"]) == (running, "completed")
    assert note["params"]["_meta"] == {SUBSCRIPTION_ID: rid}
    # Delivery closes the window early.
    assert listened.ended_at < WINDOW_S / 4, listened.ended_at


def test_a_new_status_message_is_a_change(
    stack: EmbeddedStack, tasks: TaskClient, new_id: NewId
) -> None:
    # Given a task that reports progress (its statusMessage) every second while it works
    task_id = tasks.create("slow_compute", {"seconds": 4, "label": "progress"})
    reported = wait_until(lambda: tasks.get(task_id).get("statusMessage"), timeout=5)
    # When a listen opens (and the client closes it at the first change)
    listened = listen(stack, {"taskIds": [task_id]}, rid=new_id(), until=task_note())
    listened.check()
    # Then the next report is sent although the status stays working: tasks/get shows it
    [note] = listened.notifications
    assert note["params"]["status"] == "working"
    # slow_compute reports "1/4 · progress": numbers first (see mcp_tasks_aws.protocol.progress)
    assert parse_status(note["params"]["statusMessage"]).message == "progress"
    assert note["params"]["lastUpdatedAt"] > listened.snapshot[0]["params"]["lastUpdatedAt"]
    assert parse_status(reported).message == "progress"
    assert listened.ended_at < WINDOW_S / 4, listened.ended_at
    tasks.cancel(task_id)


@pytest.mark.parametrize(
    ("tool", "arguments", "status", "outcome"),
    [
        ("slow_compute", {"seconds": 0.5, "label": "full"}, "completed", "result"),
        ("failing_job", {}, "completed", "result"),  # a tool error is a completed result
        ("protocol_error_job", {}, "failed", "error"),
    ],
)
def test_a_task_notification_is_the_full_task_as_tasks_get_shows_it(
    stack: EmbeddedStack,
    tasks: TaskClient,
    paced: PacedDispatch,
    new_id: NewId,
    tool: str,
    arguments: dict[str, Any],
    status: str,
    outcome: str,
) -> None:
    paced.leg_delay["protocol_error_job"] = 0.6  # it fails at once otherwise
    task_id = tasks.create(tool, arguments)
    note, _ = listen_until_terminal(stack, task_id, new_id)
    got = tasks.get(task_id)
    assert note["params"]["status"] == status
    assert outcome in note["params"]
    assert "resultType" not in note["params"]
    assert as_get(note) == without_result_type(got)


def test_a_cancelled_task_is_notified_with_its_final_state(
    stack: EmbeddedStack, tasks: TaskClient, new_id: NewId
) -> None:
    task_id = tasks.create("slow_compute", {"seconds": 2, "label": "to-cancel"})
    background = Background(stack, {"taskIds": [task_id]}, rid=new_id())
    background.wait_ack()
    assert "error" not in tasks.cancel(task_id)
    listened = background.join()
    got = tasks.get(task_id)
    listened.check()
    [note] = listened.notifications
    assert note["params"]["status"] == "cancelled"
    assert as_get(note) == without_result_type(got)


def test_reconnect_input_required_then_answer_then_completed(
    stack: EmbeddedStack, tasks: TaskClient, paced: PacedDispatch, new_id: NewId
) -> None:
    # Each leg starts late, so both listens open while the task is still working.
    paced.leg_delay["confirm_delete"] = 0.8
    task_id = tasks.create("confirm_delete", {"filename": "notes.txt"})

    # The stream stays open while the task waits: the client closes it once it has the question.
    first = listen(stack, {"taskIds": [task_id]}, rid=new_id(), until=task_note("input_required"))
    asked = tasks.get(task_id)
    first.check()
    [note] = first.notifications
    assert note["method"] == TASK_NOTIFICATION
    assert note["params"]["status"] == "input_required"
    assert as_get(note) == without_result_type(asked)
    [(key, request)] = note["params"]["inputRequests"].items()
    assert request["method"] == "elicitation/create"
    assert first.ended_at < WINDOW_S / 4, "the question must arrive at once"

    answer = {key: {"action": "accept", "content": {"confirm": True}}}
    assert "error" not in tasks.update(task_id, answer)

    second = listen(stack, {"taskIds": [task_id]}, rid=new_id())
    done = tasks.get(task_id)
    second.check()
    assert second.acked() == {"taskIds": [task_id]}
    [final] = second.notifications
    assert final["params"]["status"] == "completed"
    assert final["params"]["result"]["content"][0]["text"] == "Deleted notes.txt."
    assert as_get(final) == without_result_type(done)


def test_a_stream_stays_open_from_progress_to_completion(
    stack: EmbeddedStack, tasks: TaskClient, new_id: NewId
) -> None:
    # Given a 1.6-second task that reports "0/1.6" and "1/1.6" on its way
    task_id = tasks.create("slow_compute", {"seconds": 1.6, "label": "open"})
    # When one listen follows it on a transport that streams (what a client that never
    # listens again after a close, such as the official TypeScript client, depends on)
    listened = listen(stack, {"taskIds": [task_id]}, rid=new_id())
    listened.check()
    # Then that one stream carries every change up to completed, then closes by itself
    statuses = [n["params"]["status"] for n in [*listened.snapshot, *listened.notifications]]
    assert statuses[-1] == "completed", statuses
    assert statuses.count("working") >= 2, statuses
    assert not listened.closed_by_client


def test_a_stream_carries_the_question_and_then_the_result(
    stack: EmbeddedStack, tasks: TaskClient, paced: PacedDispatch, new_id: NewId
) -> None:
    # Given a listen open on a task that will ask a question
    paced.leg_delay["confirm_delete"] = 0.5
    task_id = tasks.create("confirm_delete", {"filename": "open.txt"})
    asked = threading.Event()
    keys: list[str] = []

    def answer_when_asked(message: dict[str, Any]) -> None:
        params = message.get("params") or {}
        if params.get("status") == "input_required" and not asked.is_set():
            keys.extend(params["inputRequests"])
            asked.set()

    results: list[Any] = []
    listener = threading.Thread(
        target=lambda: results.append(
            listen(stack, {"taskIds": [task_id]}, rid=new_id(), on_message=answer_when_asked)
        ),
        daemon=True,
    )
    listener.start()
    # When the client answers while the stream is still open
    assert asked.wait(10), "the question never came"
    [key] = keys
    answer = {key: {"action": "accept", "content": {"confirm": True}}}
    assert "error" not in tasks.update(task_id, answer)
    listener.join(15)
    # Then the same stream brings the result
    [listened] = results
    listened.check()
    statuses = [n["params"]["status"] for n in listened.notifications]
    assert "input_required" in statuses
    assert statuses[-1] == "completed", statuses


@pytest.mark.parametrize("ending", ["completed", "cancelled"])
def test_a_listen_on_a_terminal_task_closes_right_after_the_ack(
    stack: EmbeddedStack, tasks: TaskClient, new_id: NewId, ending: str
) -> None:
    if ending == "completed":
        task_id = tasks.create("slow_compute", {"seconds": 0, "label": "terminal"})
    else:
        task_id = tasks.create("confirm_delete", {"filename": "kept.txt"})
        assert "error" not in tasks.cancel(task_id)
    assert tasks.wait_terminal(task_id)["status"] == ending
    rid = new_id()
    listened = listen(stack, {"taskIds": [task_id]}, rid=rid)
    listened.check()
    assert listened.acked() == {"taskIds": [task_id]}
    assert listened.notifications == []
    assert listened.ended_at < 3.0, f"closed after {listened.ended_at:.2f} s, window {WINDOW_S} s"


def test_list_changed_reaches_only_the_matching_filter(
    stack: EmbeddedStack, tasks: TaskClient, new_id: NewId
) -> None:
    tools_rid, prompts_rid, plain_rid = new_id(), new_id(), new_id()
    # A list watch stays open to its time limit: each client closes once it heard a change.
    heard = method_note(TOOLS_CHANGED)
    tools = Background(stack, {"toolsListChanged": True}, rid=tools_rid, until=heard)
    prompts = Background(
        stack, {"promptsListChanged": True}, rid=prompts_rid, until=method_note(PROMPTS_CHANGED)
    )
    # list-changed needs no Tasks opt-in.
    plain = Background(
        stack,
        {"toolsListChanged": True},
        rid=plain_rid,
        capabilities=NO_TASKS_CAPABILITIES,
        until=heard,
    )
    for listener in (tools, prompts, plain):
        listener.wait_ack()

    assert tasks.result("tools/call", {"name": "test_trigger_tool_change", "arguments": {}})
    for listener, rid in ((tools, tools_rid), (plain, plain_rid)):
        listened = listener.join()
        listened.check()
        assert listened.acked() == {"toolsListChanged": True}
        assert listened.notifications == [
            {"jsonrpc": "2.0", "method": TOOLS_CHANGED, "params": {"_meta": {SUBSCRIPTION_ID: rid}}}
        ]

    assert tasks.result("tools/call", {"name": "test_trigger_prompt_change", "arguments": {}})
    listened = prompts.join()
    listened.check()
    assert listened.acked() == {"promptsListChanged": True}
    # The tool change came first, and was not this filter's business.
    assert listened.notifications == [
        {
            "jsonrpc": "2.0",
            "method": PROMPTS_CHANGED,
            "params": {"_meta": {SUBSCRIPTION_ID: prompts_rid}},
        }
    ]


def test_a_list_change_is_not_sent_to_a_task_only_listen(
    stack: EmbeddedStack, tasks: TaskClient, new_id: NewId
) -> None:
    task_id = tasks.create("slow_compute", {"seconds": 1.2, "label": "task-only"})
    background = Background(stack, {"taskIds": [task_id]}, rid=new_id())
    background.wait_ack()
    assert tasks.result("tools/call", {"name": "test_trigger_tool_change", "arguments": {}})
    listened = background.join()
    listened.check()
    # Every change of the task up to its end (progress, then completed), and nothing else.
    assert {n["method"] for n in listened.notifications} == {TASK_NOTIFICATION}
    assert listened.notifications[-1]["params"]["status"] == "completed"


def test_the_ack_is_streamed_before_the_window_ends(
    stack: EmbeddedStack, tasks: TaskClient, paced: PacedDispatch, new_id: NewId
) -> None:
    window = 1.4  # the task changes only after this long: the window stays open meanwhile
    paced.leg_delay["slow_compute"] = window
    task_id = tasks.create("slow_compute", {"seconds": 0, "label": f"s-{secrets.token_hex(2)}"})
    listened = listen(stack, {"taskIds": [task_id]}, rid=new_id())
    listened.check()
    assert listened.headers.get("transfer-encoding") == "chunked"
    first_data, last_data = listened.timed[0][0], listened.timed[-1][0]
    assert first_data < window / 2, f"the ack took {first_data:.2f} s"
    assert last_data - first_data > window / 2, (first_data, last_data)
