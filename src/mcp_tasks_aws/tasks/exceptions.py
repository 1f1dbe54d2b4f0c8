"""Domain errors of the task store and service."""

from __future__ import annotations

from mcp_tasks_aws.tasks.model import TaskRecord


class TaskError(Exception):
    """Base of task domain errors."""


class TaskAlreadyExists(TaskError):
    """A task with this id exists already (id collision or a retried create)."""


class TaskNotFound(TaskError):
    """No live task with this id for this caller (missing, foreign, or expired)."""

    def __init__(self, expired: bool = False) -> None:
        super().__init__("expired" if expired else "not found")
        self.expired = expired


class TaskNotWaiting(TaskError):
    """The task is not in a state that accepts this change; carries the current record."""

    def __init__(self, record: TaskRecord) -> None:
        super().__init__(record.status)
        self.record = record


class TaskNoLongerActive(TaskError):
    """A worker's write lost: the task was cancelled or ended, or the leg is stale."""


class TaskCancelled(BaseException):
    """Raised inside a running tool when its task was cancelled (cooperative cancellation).

    A BaseException, like asyncio.CancelledError, so a tool's `except Exception` does not
    swallow it.
    """
