"""A tools module for the client tests: a task whose result is larger than an SSE event the
SDK client accepts (served by an embedded stack with MCP_TASKS_TOOLS=support.big_tools)."""

from __future__ import annotations

import time

from mcp_tasks_aws import TaskPolicy, ToolSet

tools = ToolSet(name="big-tools", version="0")


@tools.tool(task=TaskPolicy.REQUIRED, poll_interval_ms=100)
def big_result(size: int) -> str:
    """Works for a second, then returns `size` characters.

    Args:
        size: How many characters to return.
    """
    time.sleep(1)
    return "x" * size
