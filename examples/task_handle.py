"""Start a task, keep its id, and follow it by id (as another process could).

    make run                                    # in one terminal
    .venv/bin/python examples/task_handle.py    # in another (or pass the endpoint URL)

`checksum_archive` becomes a task when the client declares the Tasks extension. `Tasks.start`
returns a handle at once; `Tasks.get` reads the task's state; `handle.wait()` waits for the
result. A timeout on `wait` leaves the task running.
"""

from __future__ import annotations

import os
import sys

import anyio
from mcp import Client

from mcp_tasks_aws.client import TaskHandle, Tasks, TasksExtension, explain_failure

DEFAULT_URL = "http://127.0.0.1:8000/mcp"  # what `make run` serves
URL = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("MCP_TASKS_URL", DEFAULT_URL)


async def main() -> None:
    async with Client(URL, extensions=[TasksExtension()]) as client:
        arguments = {"files": 6, "seconds_per_file": 0.3}
        started = await Tasks(client).start("checksum_archive", arguments)
        if not isinstance(started, TaskHandle):  # the server chose to answer inline
            print("answered inline:", started.structured_content)
            return
        task_id = started.task_id
        print("task", task_id)

    # Later, possibly in another process (with the same credentials):
    async with Client(URL, extensions=[TasksExtension()]) as client:
        tasks = Tasks(client)
        print("status now:", (await tasks.get(task_id)).status)
        result = await tasks.handle(task_id).wait(timeout=60)
        print("result:", result.structured_content)


if __name__ == "__main__":
    try:
        anyio.run(main)
    except Exception as exc:  # one line that says what to do, not the SDK's nested traceback
        reason = explain_failure(exc, URL)
        if reason is None or os.environ.get("MCP_TASKS_DEBUG"):
            raise
        raise SystemExit(f"{sys.argv[0]}: {reason}") from None
