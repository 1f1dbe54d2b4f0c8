"""The handle API: tasks as first-class objects for applications that want control.

`Tasks` wraps an entered SDK `Client` (built with a `TasksExtension`) and works by task id:

- `start(tool, args)` sends the `tools/call` and returns a `TaskHandle` as soon as the server
  made it a task (or the `CallToolResult` when the server answered inline);
- `get(id)` one `tasks/get`; `wait(id)` until the end; `update(id, responses)` answers input
  requests yourself; `cancel(id)` requests cancellation;
- `handle(id)` re-attaches to a task started elsewhere, for instance by a previous process: the
  task lives on the server, so a second client (same credentials) can resume waiting on it.

Unlike the transparent `call_tool`, `wait` here leaves the task running when the wait is
abandoned (cancelled, timed out) unless `cancel_if_abandoned=True`: whoever holds a handle can
come back to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio
from mcp import Client
from mcp.client.session import ClientSession
from mcp_types import CallToolResult, InputResponse, RequestParamsMeta
from pydantic import BaseModel

from mcp_tasks_aws.client.extension import TaskHandoff, TasksExtension, handoff
from mcp_tasks_aws.client.polling import PollPolicy
from mcp_tasks_aws.client.waiter import (
    StatusCallback,
    WaitMode,
    cancel_task,
    get_task,
    update_task,
    wait_for_task,
)
from mcp_tasks_aws.client.wire import CreateTaskResult, TaskSnapshot

__all__ = ["TaskHandle", "Tasks"]


@dataclass(frozen=True)
class TaskHandle:
    """One task, by id; obtained from `Tasks.start` or `Tasks.handle`."""

    tasks: Tasks
    task_id: str
    tool_name: str | None = None
    created: CreateTaskResult | None = None
    """The `CreateTaskResult` when this handle comes from `start`."""

    async def get(self) -> TaskSnapshot:
        return await self.tasks.get(self.task_id)

    async def wait(
        self,
        *,
        on_status: StatusCallback | None = None,
        timeout: float | None = None,
        cancel_if_abandoned: bool = False,
        policy: PollPolicy | None = None,
        wait_mode: WaitMode | None = None,
    ) -> CallToolResult:
        return await self.tasks.wait(
            self.task_id,
            on_status=on_status,
            timeout=timeout,
            cancel_if_abandoned=cancel_if_abandoned,
            policy=policy,
            wait_mode=wait_mode,
            tool_name=self.tool_name,
            initial=self.created,
        )

    async def update(
        self, responses: Mapping[str, InputResponse | BaseModel | Mapping[str, Any]]
    ) -> None:
        await self.tasks.update(self.task_id, responses)

    async def cancel(self) -> None:
        await self.tasks.cancel(self.task_id)


class Tasks:
    """Task operations over an entered `Client` whose extensions include a `TasksExtension`."""

    def __init__(self, client: Client, extension: TasksExtension | None = None) -> None:
        if extension is None:
            found = [e for e in client.extensions or () if isinstance(e, TasksExtension)]
            if not found:
                raise ValueError(
                    "the client was not built with the Tasks extension: "
                    "Client(..., extensions=[TasksExtension()])"
                )
            extension = found[0]
        self.client = client
        self.extension = extension
        self._answered: dict[str, set[str]] = {}

    @property
    def session(self) -> ClientSession:
        return self.client.session

    async def start(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        read_timeout_seconds: float | None = None,
        meta: RequestParamsMeta | None = None,
    ) -> TaskHandle | CallToolResult:
        """Call a tool; a `TaskHandle` if the server made it a task, else the inline result.

        Input the server asks for before the task exists (multi-round-trip) is answered through
        the client's callbacks, as `call_tool` does.
        """
        try:
            with handoff():
                return await self.client.call_tool(name, arguments, read_timeout_seconds, meta=meta)
        except TaskHandoff as started:
            return TaskHandle(self, started.created.task_id, name, started.created)

    def handle(self, task_id: str, tool_name: str | None = None) -> TaskHandle:
        """A handle on an existing task (for instance one started by an earlier process)."""
        return TaskHandle(self, task_id, tool_name)

    async def get(self, task_id: str) -> TaskSnapshot:
        """The task now (`tasks/get`)."""
        return await get_task(self.session, task_id, timeout=self.extension.request_timeout)

    async def update(
        self,
        task_id: str,
        responses: Mapping[str, InputResponse | BaseModel | Mapping[str, Any]],
    ) -> None:
        """Answer input requests by key (`tasks/update`); those keys are not asked again here."""
        await update_task(self.session, task_id, responses, timeout=self.extension.request_timeout)
        self._answered.setdefault(task_id, set()).update(responses)

    async def cancel(self, task_id: str) -> None:
        """Request cancellation (`tasks/cancel`); the task may still end otherwise."""
        await cancel_task(self.session, task_id, timeout=self.extension.request_timeout)

    async def wait(
        self,
        task_id: str,
        *,
        on_status: StatusCallback | None = None,
        timeout: float | None = None,
        cancel_if_abandoned: bool = False,
        policy: PollPolicy | None = None,
        tool_name: str | None = None,
        initial: CreateTaskResult | None = None,
        wait_mode: WaitMode | None = None,
    ) -> CallToolResult:
        """Wait for the task's end; input requests go to the client's callbacks.

        The wait listens or polls as the extension's `wait_mode` says, unless `wait_mode` is
        given here.

        Raises:
            TimeoutError: `timeout` elapsed (the task keeps running unless `cancel_if_abandoned`).
            TaskFailedError, TaskCancelledError, TaskInputError, TaskNotFoundError: see `errors`.
        """
        options = self.extension.wait_options(
            on_status=on_status,
            policy=policy,
            cancel_if_abandoned=cancel_if_abandoned,
            wait_mode=wait_mode,
        )
        answered = self._answered.setdefault(task_id, set())
        with anyio.fail_after(timeout):
            return await wait_for_task(
                self.session,
                task_id,
                options=options,
                tool_name=tool_name,
                initial=initial,
                answered=answered,
            )
