"""Domain errors of the task store and the task use cases."""

from __future__ import annotations


class TaskError(Exception):
    """Base of task domain errors."""


class TaskAlreadyExists(TaskError):
    """A task with this id exists already (id collision or a retried create)."""


class TaskNotFound(TaskError):
    """No live task with this id for this caller (missing, foreign, or expired)."""

    def __init__(self, expired: bool = False) -> None:
        super().__init__("expired" if expired else "not found")
        self.expired = expired


class TaskAnswerInvalid(TaskError):
    """An answer to an outstanding request does not have the shape of that request's result
    (or, with `detail`, its form content does not fit the requested schema)."""

    def __init__(self, key: str, method: str, detail: str | None = None) -> None:
        super().__init__(f"{key}: {detail or f'not a {method} result'}")
        self.key = key
        self.method = method
        self.detail = detail
        """Which field of the content is wrong, and how (None: the answer's shape is)."""


class TaskArgumentsTooLarge(TaskError):
    """The call's arguments are too large to be kept with a task."""


class TaskCallTooLarge(TaskError):
    """A new task's record (its arguments, client capabilities and answers gathered inline)
    is larger than the store allows: nothing was created."""


class TaskNotStarted(TaskError):
    """The task was created but its execution could not be started; the task is failed."""


class TargetUnavailable(TaskError):
    """A managed target (a declared Lambda function, state machine, secret or HTTP API) could not
    be called: it is missing, throttled or denied. `target` names it, `code` is the AWS error
    code (or the network failure), and the message says both, for the client to read."""

    def __init__(self, target: str, code: str, detail: str = "") -> None:
        message = f"{target}: {code}" + (f" ({detail})" if detail else "")
        super().__init__(message)
        self.target = target
        self.code = code
        self.message = message


class TaskTooLarge(TaskError):
    """A write would make the task's record larger than the store allows."""


class ResultGone(TaskError):
    """An offloaded result is no longer where its reference points (it outlived its TTL)."""


class TaskCancelled(BaseException):
    """Raised inside a running tool when its task was cancelled (cooperative cancellation).

    A BaseException, like asyncio.CancelledError, so a tool's `except Exception` does not
    swallow it.
    """


class UnknownRun(TaskError, ValueError):
    """A task names a run (`TaskRecord.run`, a stored item) that no run of the registry has:
    an item written by a newer deployment, or damaged. It is an error, never read as another
    run (`tasks.runs.registry`)."""

    def __init__(self, name: str, task_id: str = "") -> None:
        where = f"task {task_id}: " if task_id else ""
        super().__init__(f"{where}unknown run {name[:40]!r}")
        self.name = name
