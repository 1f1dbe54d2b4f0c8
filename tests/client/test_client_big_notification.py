"""A listening client and a notification larger than its SSE event limit (the SDK's 1 MiB):
the task's completion, carried whole by `notifications/tasks`, must not fail the call. The
window fails, that one wait polls, and `tasks/get` brings the result."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest
from mcp import Client
from mcp.client.streamable_http import DEFAULT_MAX_SSE_EVENT_SIZE
from mcp_types import TextContent

from mcp_tasks_aws.client import PollPolicy, TasksExtension
from support.mcp import running_stack

pytestmark = pytest.mark.anyio
SIZE = DEFAULT_MAX_SSE_EVENT_SIZE + 200_000


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with running_stack(MCP_TASKS_TOOLS="support.big_tools") as stack:
        yield stack.url


async def test_a_notification_over_the_event_limit_does_not_fail_the_call(url: str) -> None:
    extension = TasksExtension(policy=PollPolicy(floor=0.02, cap=0.5, default=0.1))
    async with Client(url, extensions=[extension]) as client:
        with anyio.fail_after(60):
            result = await client.call_tool("big_result", {"size": SIZE})
    block = result.content[0]
    assert isinstance(block, TextContent)
    assert len(block.text) == SIZE
    assert not result.is_error
