"""Fixtures of the `subscriptions/listen` tests (helpers live in support.listen): the embedded
stack with the deployed listen window, its worker paced per tool, a client, and listen ids."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

import pytest

from mcp_tasks_aws.local.stack import EmbeddedStack
from support.listen import PacedDispatch
from support.mcp import running_stack
from support.tasks import TaskClient


@pytest.fixture(scope="package")
def stack() -> Iterator[EmbeddedStack]:
    """The conformance tools on the embedded stack, the listen window as deployed (20 s),
    polled every 100 ms (deployed: 500 ms) so a change is seen test-sized soon."""
    with running_stack(MCP_TASKS_TOOLS="conformance", MCP_TASKS_LISTEN_POLL_MS="100") as running:
        yield running


@pytest.fixture(scope="package")
def dispatch(stack: EmbeddedStack) -> PacedDispatch:
    worker = PacedDispatch(stack)
    stack.aws.register("WorkerFunction", worker)
    return worker


@pytest.fixture
def paced(dispatch: PacedDispatch) -> Iterator[PacedDispatch]:
    """The dispatch, its leg delays cleared after the test."""
    yield dispatch
    dispatch.leg_delay.clear()
    dispatch.by_task.clear()


@pytest.fixture(scope="package")
def tasks(stack: EmbeddedStack, dispatch: PacedDispatch) -> TaskClient:
    return TaskClient(stack, dispatch)


@pytest.fixture
def new_id() -> Callable[[], str]:
    """Distinct listen request ids (strings, so an id echoed as another type would show)."""
    counter = itertools.count(1)
    return lambda: f"listen-{next(counter)}"
