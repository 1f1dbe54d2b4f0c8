"""A tools module for the task-content tests: binary results and numeric progress in tasks
(served by an embedded stack with MCP_TASKS_TOOLS=support.surface_tools)."""

from __future__ import annotations

import threading

from mcp_tasks_aws import Image, TaskPolicy, Text, ToolContext, ToolSet

tools = ToolSet(name="surface-tools", version="0")
release = threading.Event()
"""Set by a test to let `staged_progress` finish."""


@tools.tool(task=TaskPolicy.REQUIRED, poll_interval_ms=100)
def render(kilobytes: int) -> list[Text | Image]:
    """Renders an image of about this many kilobytes (as a task).

    Args:
        kilobytes: The image's size.
    """
    data = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * (kilobytes * 4)
    return [Text(f"{len(data)} bytes"), Image(data=data)]


@tools.tool(task=TaskPolicy.REQUIRED, poll_interval_ms=100)
def staged_progress(ctx: ToolContext) -> str:
    """Reports 3 of 10, then waits until the test releases it."""
    ctx.report("migrating schema", progress=3, total=10)
    release.wait(timeout=10)
    return "done"
