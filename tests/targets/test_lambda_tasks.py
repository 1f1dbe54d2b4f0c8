"""A Lambda target invoked as a task: the task's leg invokes the function (a worker leg, on
the in-memory domain), its arguments are checked before the task exists, and a function that
is missing or throttled at call time fails the task naming it and the AWS error code."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_tasks_aws.tasks.legs import LegRunner
from mcp_tasks_aws.tasks.memory import InMemoryTaskStore
from mcp_tasks_aws.tasks.service import TaskService
from mcp_tasks_aws.tools.registry import ToolSet
from support.domain import ALICE, CAPABILITIES, QueuedLegs, RecordingRunner
from support.legacy import task_transport
from support.mcp import McpClient
from support.targets import FakeCalls, bound, tool, write

TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


@pytest.fixture
def calls() -> FakeCalls:
    calls = FakeCalls()
    calls.functions["reindex"] = lambda event: {"indexed": len(event["text"])}
    return calls


@pytest.fixture
def toolset(tmp_path: Path, calls: FakeCalls) -> ToolSet:
    target = {"kind": "lambda", "function": "reindex", "invocation": "task"}
    payload = {"text": "${text}", "task": "${taskId}"}
    return bound(write(tmp_path, tool("reindex", {**target, "payload": payload})), calls)


def test_the_tasks_leg_invokes_the_function_with_the_task_id(
    toolset: ToolSet, calls: FakeCalls
) -> None:
    store, legs = InMemoryTaskStore(), QueuedLegs()
    service = TaskService(store, RecordingRunner(), direct_legs=legs)
    record = service.create(ALICE, toolset.tools["reindex"], {"text": "abcd"}, CAPABILITIES)
    assert record.status == "working"
    assert calls.calls == []  # nothing ran in the request
    LegRunner(store, RecordingRunner(), toolset).run_direct(legs.queued[0])
    ended = store.get(record.task_id)
    assert ended is not None
    assert ended.status == "completed"
    assert ended.result == {"content": [{"type": "text", "text": '{"indexed":4}'}]}
    assert calls.calls == [("invoke", ("reindex", None, {"text": "abcd", "task": record.task_id}))]


def test_a_missing_function_fails_the_task_naming_it_and_the_code(
    toolset: ToolSet, calls: FakeCalls
) -> None:
    calls.unavailable["reindex"] = "ResourceNotFoundException"
    store, legs = InMemoryTaskStore(), QueuedLegs()
    service = TaskService(store, RecordingRunner(), direct_legs=legs)
    record = service.create(ALICE, toolset.tools["reindex"], {"text": "abcd"}, CAPABILITIES)
    LegRunner(store, RecordingRunner(), toolset).run_direct(legs.queued[0])
    ended = store.get(record.task_id)
    assert ended is not None
    assert ended.status == "failed"
    assert ended.error == {
        "code": -32603,
        "message": "Tool reindex: Lambda function reindex: ResourceNotFoundException",
    }


def test_bad_arguments_are_refused_before_the_task_exists(toolset: ToolSet) -> None:
    store = InMemoryTaskStore()
    service = TaskService(store, RecordingRunner(), direct_legs=QueuedLegs())
    client = McpClient(task_transport(service, toolset))
    response = client.call_tool("reindex", {"text": 1}, capabilities=TASKS)
    assert client.error(response) == {
        "code": -32602,
        "message": "Invalid arguments for tool reindex: text: must be of type string",
    }
    assert store.list_by_owner("anonymous", limit=10).tasks == []
