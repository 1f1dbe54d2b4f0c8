"""Fixtures of the durable-task tests on the embedded stack (helpers live in support.tasks):
the conformance tools on a stack per module, its worker routable per task, a client, and each
test taking `path` run once on each path; without a stack, `flow`: a declared workflow's
tool over the in-memory domain; and `either_store`: each store, the in-memory twin and
DynamoDB on moto, in turn."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_tasks_aws.local.stack import EmbeddedStack
from mcp_tasks_aws.tasks.memory import InMemoryTaskStore
from mcp_tasks_aws.tasks.ports import TaskStore
from support.mcp import running_stack
from support.targets import Flow, flow_of
from support.tasks import PATHS, TaskClient, WorkerDispatch, on_path


@pytest.fixture
def flow(tmp_path: Path) -> Flow:
    """A declared Standard machine's tool over the in-memory domain (`support.targets`)."""
    return flow_of(tmp_path)


@pytest.fixture(params=["memory", "dynamodb"])
def either_store(request: pytest.FixtureRequest) -> Iterator[TaskStore]:
    """The in-memory twin, then the DynamoDB store (on moto, its table from template.yaml)."""
    if request.param == "memory":
        yield InMemoryTaskStore()
    else:
        yield request.getfixturevalue("dynamo_store")


@pytest.fixture(scope="module")
def stack() -> Iterator[EmbeddedStack]:
    with running_stack(MCP_TASKS_TOOLS="conformance") as running:
        yield running


@pytest.fixture(scope="module")
def dispatch(stack: EmbeddedStack) -> WorkerDispatch:
    worker = WorkerDispatch(stack)
    stack.aws.register("WorkerFunction", worker)
    return worker


@pytest.fixture(scope="module")
def tasks(stack: EmbeddedStack, dispatch: WorkerDispatch) -> TaskClient:
    return TaskClient(stack, dispatch)


@pytest.fixture(params=PATHS)
def path(request: pytest.FixtureRequest, tasks: TaskClient) -> Iterator[str]:
    """The test runs once on each path (see `on_path`)."""
    with on_path(tasks.stack, request.param) as chosen:
        yield chosen
