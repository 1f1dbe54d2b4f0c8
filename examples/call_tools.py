"""Call the default (demo) tools with the official MCP SDK and the Tasks extension.

    make run                                   # in one terminal: the stack on 127.0.0.1:8000
    .venv/bin/python examples/call_tools.py    # in another (or pass the endpoint URL)

An inline tool answers at once; `release` runs only as a task and asks for approval
(elicitation) halfway: `call_tool` waits for the task, answers the question through the
callback, and returns the final result either way.
"""

from __future__ import annotations

import os
import sys

import anyio
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp_types import ElicitRequestParams, ElicitResult, TextContent

from mcp_tasks_aws.client import TaskFailedError, TasksExtension, explain_failure

DEFAULT_URL = "http://127.0.0.1:8000/mcp"  # what `make run` serves
URL = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("MCP_TASKS_URL", DEFAULT_URL)


async def approve(ctx: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    """The SDK's ordinary elicitation callback: here, approve whatever is asked."""
    print(f"asked: {params.message}")
    return ElicitResult(action="accept", content={"approve": True})


def text(result: object) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextContent))  # type: ignore[attr-defined]


async def main() -> None:
    def show(task: object) -> None:
        print(f"[{task.status}] {task.status_message or ''}")  # type: ignore[attr-defined]

    tasks = TasksExtension(on_status=show)
    async with Client(URL, extensions=[tasks], elicitation_callback=approve) as client:
        stats = await client.call_tool("text_stats", {"text": "Tasks wait. Tools answer."})
        print("text_stats:", stats.structured_content)
        try:
            arguments = {"service": "billing", "version": "1.4.2"}
            released = await client.call_tool("release", arguments)
        except TaskFailedError as exc:  # the task ended `failed` (a protocol error)
            print("release failed:", exc.code, exc.message)
        else:
            print("release:", text(released))


if __name__ == "__main__":
    try:
        anyio.run(main)
    except Exception as exc:  # one line that says what to do, not the SDK's nested traceback
        reason = explain_failure(exc, URL)
        if reason is None or os.environ.get("MCP_TASKS_DEBUG"):
            raise
        raise SystemExit(f"{sys.argv[0]}: {reason}") from None
