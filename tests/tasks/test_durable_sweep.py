"""The sweeper and durable tasks on the embedded stack (sweeping at once: stranded after 0 s):
a durable task whose execution runs is adopted (its leg moves on, it keeps running and ends),
one whose execution never started is failed. The tools are `bench/durable_tools.py`'s."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mcp_tasks_aws.local.stack import EmbeddedStack
from support.mcp import running_stack
from support.tasks import TaskClient, WorkerDispatch, wait_until


@pytest.fixture(scope="module")
def stack() -> Iterator[EmbeddedStack]:
    with running_stack(
        MCP_TASKS_TOOLS="bench/durable_tools.py", MCP_TASKS_STRANDED_AFTER_S="0"
    ) as running:
        yield running


@pytest.fixture(scope="module")
def tasks(stack: EmbeddedStack) -> TaskClient:
    return TaskClient(stack, WorkerDispatch(stack))


def test_a_running_durable_task_is_adopted_not_failed(
    stack: EmbeddedStack, tasks: TaskClient
) -> None:
    # Two seconds here (durable time runs 60 times faster): room enough to sweep it mid-sleep.
    task_id = tasks.create("durable_nap", {"nap_seconds": 120})

    def sleeping() -> dict[str, Any] | None:
        task = tasks.get(task_id)
        return task if str(task.get("statusMessage", "")).startswith("sleeping until") else None

    wait_until(sleeping, 10)
    before = tasks.store.get(task_id)
    assert before is not None
    assert before.leg == 0  # never parked: a sweeper candidate
    swept = stack.sweep()
    assert swept["failed"] == 0
    after = tasks.store.get(task_id)
    assert after is not None
    assert after.leg == 1  # adopted: out of the candidates
    assert tasks.wait_terminal(task_id, timeout=30)["status"] == "completed"


def test_a_durable_task_whose_start_was_lost_is_failed(
    stack: EmbeddedStack, tasks: TaskClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stack.durable, "start", lambda name, payload: None)  # lost on the way
    task_id = tasks.create("durable_plain", {})
    assert stack.durable.status(task_id) is None
    swept = stack.sweep()
    assert swept["failed"] >= 1
    failed = tasks.get(task_id)
    assert failed["status"] == "failed"
