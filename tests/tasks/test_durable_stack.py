"""Durable tools on the embedded stack: the demo's `durable_pipeline` run by AWS's in-process
durable runner (`local.durable`), through the real API, durable and reconcile handlers.

- it completes: its steps, its question (input_required holding the callback id, answered by
  tasks/update) and its sleep (working, "sleeping until ..."), each step run once however
  often the tool was replayed (the durable history says so);
- a declined question completes with what the tool says, never publishing;
- a cancel mid-sleep wins: the task is cancelled and its execution stopped;
- an execution that ends without ending its task (stopped behind the task's back) is settled
  by the reconciler: the task fails, saying so;
- a 2025-11-25 client gets its question on a `tasks/get` stream and its result from
  `tasks/result`, or cancels it; a client without tasks gets a task handle, as for any
  task-only tool.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_tasks_aws.local.stack import EmbeddedStack
from support.legacy import LegacyClient, questions
from support.mcp import McpClient, running_stack
from support.tasks import TaskClient, WorkerDispatch, elicit_answer, wait_until

TOOL = "durable_pipeline"


@pytest.fixture(scope="module")
def stack() -> Iterator[EmbeddedStack]:
    with running_stack(MCP_TASKS_TOOLS="demo") as running:
        yield running


@pytest.fixture(scope="module")
def tasks(stack: EmbeddedStack) -> TaskClient:
    return TaskClient(stack, WorkerDispatch(stack))


def asked(tasks: TaskClient, task_id: str) -> str:
    task = tasks.wait_input(task_id, timeout=20)
    (key,) = task["inputRequests"]
    return str(key)


def succeeded_steps(stack: EmbeddedStack, task_id: str) -> Counter[str]:
    history = stack.durable.history(task_id)
    return Counter(
        str(event.name)
        for event in history.events
        if event.event_type == "StepSucceeded" and str(event.name).startswith("step:")
    )


def test_it_completes_with_each_step_done_once(stack: EmbeddedStack, tasks: TaskClient) -> None:
    # Its sleep: 30 s of durable time, half a second here (the stack's clock runs 60 times faster).
    task_id = tasks.create(TOOL, {"dataset": "users", "batches": 3, "wait_seconds": 30})
    key = asked(tasks, task_id)
    record = tasks.store.get(task_id)
    assert record is not None
    assert record.run == "durable"
    assert record.task_token, "the park holds the durable callback id"
    assert stack.durable.status(task_id) == "RUNNING"
    reply = tasks.update(task_id, {key: elicit_answer({"publish": True})})
    assert "error" not in reply, reply
    done = tasks.wait_terminal(task_id, timeout=30)
    assert done["status"] == "completed", done
    text = done["result"]["content"][0]["text"]
    assert text.startswith("users: 3 batches migrated, published as "), text
    wait_until(lambda: stack.durable.status(task_id) == "SUCCEEDED", 10)
    steps = succeeded_steps(stack, task_id)
    # Replayed after the answer and after the sleep, yet every step ran once.
    assert steps == Counter(
        {
            "step:batch-1": 1,
            "step:batch-2": 1,
            "step:batch-3": 1,
            "step:publish": 1,
            "step:cleanup": 1,
        }
    )


def test_a_declined_question_completes_without_publishing(
    stack: EmbeddedStack, tasks: TaskClient
) -> None:
    task_id = tasks.create(TOOL, {"dataset": "orders", "batches": 1})
    key = asked(tasks, task_id)
    tasks.update(task_id, {key: {"action": "decline"}})
    done = tasks.wait_terminal(task_id, timeout=30)
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "orders: 1 batches migrated, not published."
    assert "step:publish" not in succeeded_steps(stack, task_id)


def test_a_cancel_mid_sleep_wins_and_stops_the_execution(
    stack: EmbeddedStack, tasks: TaskClient
) -> None:
    # An hour of durable time: a minute here, at the stack's default scale.
    task_id = tasks.create(TOOL, {"dataset": "events", "batches": 1, "wait_seconds": 3600})
    key = asked(tasks, task_id)
    tasks.update(task_id, {key: elicit_answer({"publish": True})})

    def sleeping() -> dict[str, Any] | None:
        task = tasks.get(task_id)
        return task if str(task.get("statusMessage", "")).startswith("sleeping until ") else None

    task = wait_until(sleeping, 20)
    assert task["status"] == "working"
    reply = tasks.cancel(task_id)
    assert "error" not in reply, reply
    wait_until(lambda: stack.durable.status(task_id) == "STOPPED", 10)
    final = tasks.get(task_id)
    assert final["status"] == "cancelled"
    assert "step:cleanup" not in succeeded_steps(stack, task_id)


def test_an_execution_stopped_behind_its_task_is_settled_by_the_reconciler(
    stack: EmbeddedStack, tasks: TaskClient
) -> None:
    task_id = tasks.create(TOOL, {"dataset": "logs", "batches": 1})
    asked(tasks, task_id)
    arn = stack.durable.arn_of(task_id)
    assert arn is not None
    stack.durable.runner._executor.stop_execution(arn)  # nobody tells the task
    failed = tasks.wait_terminal(task_id, timeout=15)
    assert failed["status"] == "failed"
    assert "durable execution ended without a result (stopped)" in failed["statusMessage"]


# -- the 2025-11-25 era, and clients without tasks ---------------------------------------------


def test_a_2025_11_25_client_answers_it_and_gets_its_result(stack: EmbeddedStack) -> None:
    """The question comes on a `tasks/get` stream (tied to the task), once; the answer resumes
    the durable execution; `tasks/result` ends with the tool's result."""
    legacy = LegacyClient(stack.api_app.transport())
    legacy.initialize()
    arguments = {"dataset": "legacy", "batches": 2, "wait_seconds": 30}
    params = {"name": TOOL, "arguments": arguments, "task": {}}
    task_id = str(legacy.result("tools/call", params)["task"]["taskId"])

    def asked_on_get() -> list[dict[str, Any]]:
        return questions(legacy.request("tasks/get", {"taskId": task_id}))

    (question,) = wait_until(asked_on_get, 20)
    assert question["method"] == "elicitation/create"
    assert legacy.answer(question["id"], elicit_answer({"publish": True})).status == 202

    def ended() -> bool:
        return legacy.result("tasks/get", {"taskId": task_id})["status"] == "completed"

    wait_until(ended, 30)
    final = legacy.result("tasks/result", {"taskId": task_id})
    text = final["content"][0]["text"]
    assert text.startswith("legacy: 2 batches migrated, published as "), text


def test_a_2025_11_25_client_creates_reads_and_cancels_it(stack: EmbeddedStack) -> None:
    legacy = LegacyClient(stack.api_app.transport())
    legacy.initialize()
    params = {"name": TOOL, "arguments": {"dataset": "legacy", "batches": 2}, "task": {}}
    task_id = str(legacy.result("tools/call", params)["task"]["taskId"])

    def waiting() -> bool:
        return legacy.result("tasks/get", {"taskId": task_id})["status"] == "input_required"

    wait_until(waiting, 20)
    assert stack.durable.status(task_id) == "RUNNING"
    assert legacy.result("tasks/cancel", {"taskId": task_id})["status"] == "cancelled"
    wait_until(lambda: stack.durable.status(task_id) == "STOPPED", 10)


def test_a_client_without_tasks_follows_a_handle_to_the_result(
    stack: EmbeddedStack, tasks: TaskClient
) -> None:
    """A task-only tool answers a client that did not opt in to tasks with a task handle
    (docs/handles.md), durable or not: followed here by the task's id."""
    client = McpClient(stack.api_app.transport())
    response = client.request(
        "tools/call",
        {"name": TOOL, "arguments": {"dataset": "handled", "batches": 1}},
        capabilities={"elicitation": {}},
        headers={"mcp-name": TOOL},
    )
    text = json.dumps(response.json)
    found = re.search(r"[0-9a-f]{32}", text)
    assert found is not None, text
    task_id = found.group(0)
    record = tasks.store.get(task_id)
    assert record is not None
    assert record.run == "durable"
    key = asked(tasks, task_id)
    tasks.update(task_id, {key: elicit_answer({"publish": False})})
    assert tasks.wait_terminal(task_id, timeout=30)["status"] == "completed"
