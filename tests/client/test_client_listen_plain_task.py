"""A listen window may send a task without its payload (a plain `Task`: the server bounds a
window's bytes); the client then reads the task with `tasks/get` and the wait ends with the
whole result or answers the questions, as it would have from the full notification.

The embedded stack's listener is told to keep no room for payloads, so every notification it
sends is plain; 700 ms windows, a task that ends mid-window (its notification comes first)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp_types import ElicitRequestParams, ElicitResult, ErrorData, TextContent

from mcp_tasks_aws.client import TaskNotificationParams, TaskProgress, TasksExtension
from mcp_tasks_aws.local.stack import EmbeddedStack
from mcp_tasks_aws.server.listen import Listener
from support.mcp import running_stack

pytestmark = pytest.mark.anyio

SHORT_WINDOWS = {
    "MCP_TASKS_TOOLS": "conformance",
    "MCP_TASKS_LISTEN_WINDOW_MS": "700",
    "MCP_TASKS_LISTEN_POLL_MS": "100",
}


@pytest.fixture(scope="module")
def stack() -> Iterator[EmbeddedStack]:
    with running_stack(**SHORT_WINDOWS) as running:
        listener = running.api_app.server.listener
        assert isinstance(listener, Listener)
        listener.payload_bytes = 0  # every notification is a plain Task
        yield running


def delivered(extension: TasksExtension, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The notifications the client's listener receives."""
    seen: list[Any] = []
    deliver = extension.listener.deliver

    async def record(params: TaskNotificationParams) -> None:
        seen.append(params)
        await deliver(params)

    monkeypatch.setattr(extension.listener, "deliver", record)
    return seen


async def test_a_completed_task_notified_without_its_result_is_read_by_tasks_get(
    stack: EmbeddedStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    statuses: list[TaskProgress] = []
    extension = TasksExtension(on_status=statuses.append)
    notified = delivered(extension, monkeypatch)
    async with Client(stack.url, extensions=[extension]) as client:
        with anyio.fail_after(20):
            result = await client.call_tool("slow_compute", {"seconds": 1.0, "label": "p"})
    block = result.content[0]
    assert isinstance(block, TextContent)
    assert block.text == "Computed p after 1.0s."
    ended = [n for n in notified if n.status == "completed"]
    assert ended, [n.status for n in notified]
    assert ended[0].result is None  # it came plain; the result came from tasks/get


async def test_questions_notified_without_their_requests_are_read_by_tasks_get(
    stack: EmbeddedStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []

    async def answer(
        ctx: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"confirm": True})

    extension = TasksExtension()
    notified = delivered(extension, monkeypatch)
    async with Client(stack.url, extensions=[extension], elicitation_callback=answer) as client:
        with anyio.fail_after(20):
            result = await client.call_tool("confirm_delete", {"filename": "p.txt"})
    block = result.content[0]
    assert isinstance(block, TextContent)
    assert block.text == "Deleted p.txt."
    assert asked == ["Delete p.txt?"]
    assert all(n.input_requests is None for n in notified if n.status == "input_required")
