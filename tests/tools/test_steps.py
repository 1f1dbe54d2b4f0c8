"""`ctx.step`: a side effect before a question happens once, inline (across multi round-trip
rounds, recorded in requestState) and in a task (across legs, recorded on the task item)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_tasks_aws.local.stack import EmbeddedStack
from support import step_tools
from support.mcp import running_stack
from support.tasks import TaskClient, WorkerDispatch, elicit_answer

TOOL = "charge_then_confirm"


@pytest.fixture(scope="module")
def step_stack() -> Iterator[EmbeddedStack]:
    with running_stack(MCP_TASKS_TOOLS="support.step_tools") as running:
        yield running


@pytest.fixture(scope="module")
def client(step_stack: EmbeddedStack) -> TaskClient:
    dispatch = WorkerDispatch(step_stack)
    step_stack.aws.register("WorkerFunction", dispatch)
    return TaskClient(step_stack, dispatch)


def _call_inline(client: TaskClient, params: dict[str, Any]) -> dict[str, Any]:
    """tools/call without the tasks opt-in, so the tool answers inline (multi round-trip)."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    }
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": TOOL, **params, "_meta": meta},
    }
    status, answer = client.post(
        json.dumps(message).encode(), client.headers("tools/call", TOOL, None)
    )
    assert status == 200, answer
    result: dict[str, Any] = answer["result"]
    return result


def test_a_step_runs_once_across_multi_round_trip_rounds(client: TaskClient) -> None:
    # Given an inline call (no tasks opt-in) that charges, then asks
    first = _call_inline(client, {"arguments": {"label": "inline"}})
    assert first["resultType"] == "input_required"
    assert step_tools.side_effects["inline"] == 1
    # When the client retries with the answer and the sealed state
    second = _call_inline(
        client,
        {
            "arguments": {"label": "inline"},
            "requestState": first["requestState"],
            "inputResponses": {"confirm": elicit_answer({"ok": True})},
        },
    )
    # Then the tool completes with the first charge's receipt, and did not charge again
    assert second["content"][0]["text"] == "charge-inline-1; confirmed=True"
    assert step_tools.side_effects["inline"] == 1


def test_a_step_runs_once_across_the_legs_of_a_task(client: TaskClient) -> None:
    # Given a task that charged in its first leg and parked on its question
    task_id = client.create(TOOL, {"label": "task"})
    waiting = client.wait_input(task_id)
    assert list(waiting["inputRequests"]) == ["confirm"]
    assert step_tools.side_effects["task"] == 1
    # When the answer resumes it (the tool is replayed from the top in a second leg)
    client.update(task_id, {"confirm": elicit_answer({"ok": True})})
    done = client.wait_terminal(task_id)
    # Then the second leg used the recorded receipt instead of charging again
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "charge-task-1; confirmed=True"
    assert step_tools.side_effects["task"] == 1
    # (a second leg at least: under load a leg may be delivered again, as AWS may, and the
    # recorded receipt holds for it too)
    assert client.dispatch.legs[task_id] >= 2
