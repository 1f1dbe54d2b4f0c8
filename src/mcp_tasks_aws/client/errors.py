"""The exceptions a task wait ends with when it does not end with a result.

- `TaskFailedError`: the task ended `failed`; it *is* an `MCPError` carrying the task's JSON-RPC
  error (`code`, `message`, `data`), so code that already handles `MCPError` keeps working.
- `TaskCancelledError`: the task ended `cancelled` (by anyone, including this client).
- `TaskInputError`: the task asked for input this client could not give (no callback for it,
  a callback refused or raised, or an input request of an unknown kind).
- `TaskNotFoundError`: the server does not know the task id (unknown, expired, or someone
  else's); an `MCPError` with code -32602.

All derive from `TaskError`, which carries the task id.
"""

from __future__ import annotations

from typing import Any

from mcp.shared.exceptions import MCPError
from mcp_types import ErrorData

from mcp_tasks_aws.client.wire import TaskSnapshot

__all__ = [
    "TaskCancelledError",
    "TaskError",
    "TaskFailedError",
    "TaskInputError",
    "TaskNotFoundError",
]


class TaskError(Exception):
    """Base of the task-specific errors; `task_id` names the task."""

    task_id: str

    def __init__(self, task_id: str, *args: Any) -> None:
        super().__init__(*args)
        self.task_id = task_id


class TaskFailedError(TaskError, MCPError):
    """The task ended `failed`; `error` is the JSON-RPC error it failed with."""

    def __init__(
        self, task_id: str, error: ErrorData, snapshot: TaskSnapshot | None = None
    ) -> None:
        MCPError.__init__(self, code=error.code, message=error.message, data=error.data)
        self.task_id = task_id
        self.snapshot = snapshot

    def __str__(self) -> str:
        return f"task {self.task_id} failed: {self.message} (code {self.code})"


class TaskCancelledError(TaskError):
    """The task ended `cancelled`."""

    def __init__(self, task_id: str, snapshot: TaskSnapshot | None = None) -> None:
        reason = snapshot.status_message if snapshot is not None else None
        super().__init__(
            task_id, f"task {task_id} was cancelled" + (f": {reason}" if reason else "")
        )
        self.snapshot = snapshot


class TaskInputError(TaskError):
    """The task needs input this client could not provide.

    `key` is the `inputRequests` key, `method` the request's method (when known), and `error`
    the refusal a callback returned, if it returned one.
    """

    def __init__(
        self,
        task_id: str,
        key: str,
        message: str,
        *,
        method: str | None = None,
        error: ErrorData | None = None,
    ) -> None:
        super().__init__(task_id, message)
        self.key = key
        self.method = method
        self.error = error


class TaskNotFoundError(TaskError, MCPError):
    """The server answered -32602 for the task id: unknown, expired or not this caller's."""

    def __init__(self, task_id: str, error: ErrorData) -> None:
        MCPError.__init__(self, code=error.code, message=error.message, data=error.data)
        self.task_id = task_id

    def __str__(self) -> str:
        return f"task {self.task_id}: {self.message}"
