"""Tools the task-handle tests run: a long optional tool with an output schema, task-only tools
(one that asks a form, one that asks the client's model, one that fails), a tool that keeps
the refusal, and inline ones. `MCP_TASKS_TOOLS=server.handle_tools` serves them on the
embedded stack (the tests folder is on the path)."""

from __future__ import annotations

import time

from pydantic import BaseModel

from mcp_tasks_aws import TaskPolicy, ToolContext, ToolSet
from mcp_tasks_aws.protocol.errors import InternalError

tools = ToolSet(name="handle-tests", version="0")

NAME_FORM = {
    "type": "object",
    "properties": {"name": {"type": "string", "description": "Your name"}},
    "required": ["name"],
}


class Report(BaseModel):
    rows: int
    summary: str


@tools.tool
def echo(text: str) -> str:
    """Answers inline, never as a task.

    Args:
        text: What to echo.
    """
    return text


@tools.tool(task=TaskPolicy.OPTIONAL, expected_seconds=120, poll_interval_ms=100)
def build_report(rows: int, ctx: ToolContext, seconds: float = 0) -> Report:
    """Counts rows for a report (about two minutes): a task for clients that allow one.

    Args:
        rows: How many rows to count.
        seconds: How long the counting takes.
    """
    start = time.monotonic()
    while (done := time.monotonic() - start) < seconds:
        ctx.report("counting", progress=round(done, 1), total=seconds)
        time.sleep(min(0.1, seconds - done))
    return Report(rows=rows, summary=f"{rows} rows counted")


@tools.tool(task=TaskPolicy.OPTIONAL, expected_seconds=1)
def quick_sum(a: int, b: int) -> int:
    """Adds two numbers (a second at most: inline for clients without tasks).

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


@tools.tool(task=TaskPolicy.REQUIRED, poll_interval_ms=100)
def archive(name: str) -> str:
    """Archives something (runs only as a task).

    Args:
        name: What to archive.
    """
    return f"Archived {name}."


@tools.tool(task=TaskPolicy.REQUIRED, poll_interval_ms=100)
async def greet_later(ctx: ToolContext) -> str:
    """Asks the user's name during the task, then greets them."""
    answer = await ctx.elicit("What is your name?", NAME_FORM, key="name")
    if not answer.accepted:
        return "No name given."
    return f"Hello, {(answer.content or {}).get('name')}!"


@tools.tool(task=TaskPolicy.REQUIRED, poll_interval_ms=100)
async def ask_model(ctx: ToolContext) -> str:
    """Asks the client's model a question during the task."""
    answer = await ctx.sample("What is the capital of France?", max_tokens=20, key="capital")
    return f"The model said: {answer.text}"


@tools.tool(task=TaskPolicy.REQUIRED, poll_interval_ms=100)
def broken() -> str:
    """Fails with a protocol error (the task ends failed)."""
    raise InternalError("The upstream service refused the job.")


@tools.tool(task=TaskPolicy.REQUIRED, handles=False)
def refusing() -> str:
    """Runs only as a task, and refuses clients without tasks (no handle)."""
    return "done"
