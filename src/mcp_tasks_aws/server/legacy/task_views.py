"""What a 2025-11-25 client sees of a task: its tasks utility's shapes, read off the one record.

Tasks are stored once, in the modern record (`tasks.model`), whichever era created them; this
module only reads. The differences are views, each derived from the record and from the
transition table (`tasks.transitions`), never kept beside it:

- **status**: the status every era shows (`TaskRecord.visible_status`), except that a call
  whose result is a tool error (`isError: true`) reads `failed` here, as 2025-11-25 says
  (`legacy_status`); the record stays `completed`, and a 2026-07-28 client still sees that;
- **statusMessage**: the record's, or for such a tool error a short diagnostic (the error's
  first text, when the result is on the record; a fixed sentence in a listing, which carries
  no result);
- **cancellable**: a task is cancellable from the statuses the `cancel` move starts from; any
  other is terminal and a 2025-11-25 `tasks/cancel` is refused with -32602 (`cancel_refusal`);
- **the outcome** `tasks/result` returns once the task is terminal: the call's result, or the
  JSON-RPC error it failed with (`Outcome`).

Shapes are pydantic models serialized in one place (`server.task_results.to_wire`): `ttl` is
present even when null (unlimited), as the schema requires.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Final, NamedTuple

from mcp_tasks_aws.protocol.errors import INTERNAL_ERROR
from mcp_tasks_aws.protocol.legacy import legacy_result
from mcp_tasks_aws.protocol.names import RELATED_TASK_KEY, TaskStatus, format_timestamp
from mcp_tasks_aws.server.task_results import WireResult, to_wire
from mcp_tasks_aws.tasks.model import TaskRecord, TaskSummary
from mcp_tasks_aws.tasks.transitions import MOVES

if TYPE_CHECKING:
    from mcp_tasks_aws.tasks.service import TaskView

TOOL_ERROR_MESSAGE: Final = "The tool returned an error (isError); tasks/result returns it"
_DIAGNOSTIC_CHARS: Final = 200
CANCELLABLE: Final = MOVES["cancel"].sources
"""The statuses `tasks/cancel` may start from: the `cancel` move's, read from the table."""


class LegacyTask(WireResult):
    """The 2025-11-25 `Task`."""

    always_present: ClassVar[frozenset[str]] = frozenset({"ttl"})

    task_id: str
    status: TaskStatus
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl: int | None
    poll_interval: int | None = None


class CreateTaskResult(WireResult):
    """What a task-augmented `tools/call` answers: the task, nested."""

    task: LegacyTask


class ListTasksResult(WireResult):
    tasks: list[LegacyTask]
    next_cursor: str | None = None


def legacy_status(status: TaskStatus, tool_error: bool) -> TaskStatus:
    """The status a 2025-11-25 client sees: a tool error ends `failed` in that revision."""
    return "failed" if status == "completed" and tool_error else status


def _diagnostic(result: dict[str, Any] | None) -> str:
    """A tool error's statusMessage: its first text, when the result is at hand."""
    for block in (result or {}).get("content") or []:
        if isinstance(block, dict) and block.get("type") == "text" and block.get("text"):
            text = str(block["text"]).strip()
            if len(text) > _DIAGNOSTIC_CHARS:
                text = text[: _DIAGNOSTIC_CHARS - 1] + "\u2026"
            return f"Tool error: {text}"
    return TOOL_ERROR_MESSAGE


def _task(item: TaskRecord | TaskSummary, status: TaskStatus, message: str | None) -> LegacyTask:
    return LegacyTask(
        task_id=item.task_id,
        status=status,
        status_message=message or None,
        created_at=format_timestamp(item.created_at),
        last_updated_at=format_timestamp(item.updated_at),
        ttl=item.ttl_ms,
        poll_interval=item.poll_interval_ms,
    )


def task_of(record: TaskRecord) -> LegacyTask:
    """The Task `tasks/get`, `tasks/cancel` and status notifications carry."""
    status = legacy_status(record.visible_status, record.tool_error)
    message = record.status_message
    if status != record.visible_status:  # a tool error, shown as failed
        message = _diagnostic(record.result)
    return _task(record, status, message)


def task_of_summary(summary: TaskSummary) -> LegacyTask:
    """A `tasks/list` entry (a listing carries no result)."""
    status = legacy_status(summary.status, summary.tool_error)
    message = TOOL_ERROR_MESSAGE if status != summary.status else summary.status_message
    return _task(summary, status, message)


def task_wire(record: TaskRecord) -> dict[str, Any]:
    return to_wire(task_of(record))


def created_wire(record: TaskRecord) -> dict[str, Any]:
    return to_wire(CreateTaskResult(task=task_of(record)))


def listing_wire(tasks: list[TaskSummary], next_cursor: str | None) -> dict[str, Any]:
    return to_wire(
        ListTasksResult(tasks=[task_of_summary(t) for t in tasks], next_cursor=next_cursor)
    )


def cancel_refusal(record: TaskRecord) -> str | None:
    """Why a 2025-11-25 `tasks/cancel` of this record is refused (None: it may be cancelled)."""
    if record.status in CANCELLABLE:
        return None
    shown = legacy_status(record.visible_status, record.tool_error)
    return f"Cannot cancel task: already in terminal status '{shown}'"


def related(task_id: str) -> dict[str, Any]:
    """The `_meta` entry that ties a message to its task."""
    return {RELATED_TASK_KEY: {"taskId": task_id}}


class Outcome(NamedTuple):
    """What `tasks/result` returns for a terminal task: a result, or the call's JSON-RPC error."""

    result: dict[str, Any] | None
    error: dict[str, Any] | None


def outcome_of(view: TaskView) -> Outcome:
    """Exactly what the call would have returned (the view's result: the record's, read back
    if it was offloaded), with the related-task `_meta` on a result."""
    record, result = view.record, view.result
    status = record.visible_status
    if status == "completed":
        body = legacy_result(result or {"content": []})
        meta = {**(body.get("_meta") or {}), **related(record.task_id)}
        return Outcome({**body, "_meta": meta}, None)
    if status == "failed":
        return Outcome(None, record.error or {"code": INTERNAL_ERROR, "message": "Task failed"})
    # Cancelled: the call never finished, so there is no result to give.
    message = f"Task {record.task_id} was cancelled before it finished: it has no result"
    return Outcome(None, {"code": INTERNAL_ERROR, "message": message})
