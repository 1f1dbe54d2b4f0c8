"""The ports the task domain depends on: where tasks are stored and how their work is run.

Adapters (`mcp_tasks_aws.aws`) fill them in with DynamoDB, Step Functions and S3; tests may
use the same adapters on moto. Each method is one primitive, so each costs one AWS call.
"""

from __future__ import annotations

from typing import Any, Protocol

from mcp_tasks_aws.tasks.model import TaskRecord


class TaskStore(Protocol):
    """Durable task records. Every read is strongly consistent."""

    def put_new(self, record: TaskRecord) -> None:
        """Create the record; raise TaskAlreadyExists if the id is taken."""
        ...

    def get(self, task_id: str) -> TaskRecord | None:
        """The record as last written, or None."""
        ...

    def get_many(self, task_ids: list[str]) -> dict[str, TaskRecord]:
        """The records that exist among `task_ids` (at most 100), read consistently in one call."""
        ...

    def record_answers(
        self, task_id: str, owner: str, answers: dict[str, Any], now_ms: int
    ) -> TaskRecord:
        """Store answers for outstanding requests of an `input_required` task owned by `owner`.

        The first answer for a key wins; answered keys leave `input_requests`. Returns the
        record after the write. Raises TaskNotFound for a missing or foreign task and
        TaskNotWaiting (carrying the record) when it is not waiting for input.
        """
        ...

    def request_cancel(self, task_id: str, owner: str, now_ms: int) -> TaskRecord:
        """Mark an active task cancelled (the durable cancel marker); return the record before.

        Raises TaskNotFound for a missing or foreign task, TaskNotWaiting if it is terminal.
        """
        ...

    def set_status_message(self, task_id: str, leg: int, message: str, now_ms: int) -> None:
        """Set `statusMessage` (and `working`) while leg `leg` runs; TaskNoLongerActive if not."""
        ...

    def park(
        self,
        task_id: str,
        leg: int,
        input_requests: dict[str, dict[str, Any]],
        task_token: str,
        now_ms: int,
        steps: dict[str, Any] | None = None,
    ) -> None:
        """Leg `leg` needs input: record the requests, the token to resume with, and the
        results of steps (`ctx.step`) first run in this leg."""
        ...

    def finish(
        self,
        task_id: str,
        leg: int,
        *,
        status: str,
        now_ms: int,
        result: dict[str, Any] | None = None,
        result_ref: str | None = None,
        error: dict[str, Any] | None = None,
        message: str | None = None,
    ) -> None:
        """Leg `leg` ended the task; TaskNoLongerActive if it was cancelled or ended meanwhile."""
        ...

    def settle_lost(self, task_id: str, error: dict[str, Any], now_ms: int) -> TaskRecord | None:
        """An execution ended without its task ending: make it failed (cancelled if asked).

        Returns the record before, or None when the task was already terminal or is gone.
        """
        ...


class ChangeFeed(Protocol):
    """Versions of what `notifications/*/list_changed` announce, shared by every function."""

    def versions(self) -> dict[str, int]:
        """Current version per list (`tools`, `prompts`); a list never changed is 0."""
        ...

    def bump(self, kind: str) -> None:
        """Record that the `kind` list changed."""
        ...


class Runner(Protocol):
    """Runs a task's legs (Step Functions Standard executions)."""

    def start(self, task_id: str, wait_seconds: int) -> None:
        """Start the task's execution; starting it again is a no-op."""
        ...

    def resume(self, task_token: str, wait_seconds: int) -> bool:
        """Resume an execution waiting for input; False if the token is no longer valid."""
        ...

    def end_leg(self, task_token: str) -> bool:
        """Tell the execution the task is over; False if the token is no longer valid."""
        ...

    def interrupt(self, task_token: str) -> bool:
        """Fail an execution waiting for input (after cancel); False if the token is stale."""
        ...

    def stop(self, task_id: str) -> None:
        """Stop the task's execution, if it is still running."""
        ...


class ResultStore(Protocol):
    """Where results too large for the task record go (S3)."""

    def put(self, task_id: str, body: bytes) -> str:
        """Store a result body; return the reference kept on the record."""
        ...

    def get(self, ref: str) -> bytes: ...
