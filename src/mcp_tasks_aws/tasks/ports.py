"""The ports the task domain depends on: where tasks are stored and how their work is run.

Adapters (`mcp_tasks_aws.aws`) fill them in with DynamoDB, Step Functions, Lambda and S3;
`mcp_tasks_aws.tasks.memory` is the in-memory twin of the store. Each method is one primitive
and costs one AWS call; the rules of what may change live in `tasks.transitions`, not here.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

from mcp_tasks_aws.tasks.model import TaskHead, TaskRecord, TaskSummary
from mcp_tasks_aws.tasks.transitions import Changes, Guard


class Throttled(Exception):
    """An AWS service throttled the call or failed transiently (a 5xx, a timeout), after the
    SDK's own bounded retries: try later.

    Adapters raise it for such faults of any service, so callers can answer "busy" (HTTP 503
    with Retry-After) instead of a bare internal error.
    """

    def __init__(self, retry_after_s: int = 1) -> None:
        super().__init__(f"throttled; retry after {retry_after_s} s")
        self.retry_after_s = retry_after_s


class Applied(NamedTuple):
    """What `TaskStore.apply` found: the record after the move, or as it stands if refused."""

    record: TaskRecord
    changed: bool


class Page(NamedTuple):
    """One page of an owner's tasks, newest first; `after` continues the listing (None: done)."""

    tasks: list[TaskSummary]
    after: str | None


class TaskStore(Protocol):
    """Durable task records. Every read is strongly consistent; every write is one atomic step."""

    def get(self, task_id: str) -> TaskRecord | None:
        """The record as last written, or None."""
        ...

    def get_many(self, task_ids: list[str]) -> dict[str, TaskRecord]:
        """The records that exist among `task_ids` (at most 100), read consistently in one call."""
        ...

    def peek_many(self, task_ids: list[str]) -> dict[str, TaskHead]:
        """The heads of the records that exist among `task_ids` (at most 100), read
        consistently in one call without their payloads (what a watcher polls)."""
        ...

    def put_new(self, record: TaskRecord) -> None:
        """Create the record; raise TaskAlreadyExists if the id is taken by another record.
        The same record again (a retried write whose first try landed) is no error."""
        ...

    def apply(self, task_id: str, guard: Guard, changes: Changes) -> Applied | None:
        """Write `changes` if `guard` holds, atomically (see `transitions.allows`/`applied`).

        Returns the record after the write (`changed`), the current record when the guard did
        not hold (not `changed`), or None when there is no such task.
        """
        ...

    def list_by_owner(self, owner: str, *, limit: int, after: str | None = None) -> Page:
        """One page of `owner`'s tasks, newest first, expired ones left out.

        `after` is a `Page.after` of an earlier call for the same owner; anything else raises
        ValueError.
        """
        ...

    def unstarted(self, updated_before_ms: int, limit: int) -> list[str]:
        """Ids of at most `limit` active tasks nothing holds for good, last updated before
        `updated_before_ms`: no leg claimed them (leg 0), or their direct leg parked them and
        no execution attached. The sweeper's candidates (read again, consistently, before it
        decides; the index behind it may lag)."""
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

    def is_waiting(self, task_token: str) -> bool:
        """Whether the execution still waits on `task_token` (a heartbeat, which changes
        nothing else): False once that wait ended (answered, timed out, its invoke retried
        with a new token, the execution over); True when that cannot be told."""
        ...

    def stop(self, task_id: str) -> None:
        """Stop the task's execution, if it is still running."""
        ...

    def is_running(self, task_id: str) -> bool:
        """Whether the task's execution exists and is still running."""
        ...


class Workflows(Protocol):
    """Runs tasks whose work is a declared workflow: a Standard state machine's execution,
    named after the task (`tasks.workflow`). Failures to reach a declared machine raise
    `TargetUnavailable` naming it and the AWS error code (throttling: `Throttled`)."""

    def start(self, machine_arn: str, name: str, payload: dict[str, Any]) -> str:
        """Start the execution `name` of `machine_arn`; its ARN. Starting it again with the
        same input is a no-op that answers the same ARN."""
        ...

    def stop(self, execution_arn: str) -> None:
        """Stop the execution, if it is still running."""
        ...

    def answer(self, task_token: str, output: Any) -> bool:
        """Resume a state waiting on `task_token` with `output` as its result; False if the
        token is no longer valid."""
        ...

    def refuse(self, task_token: str, error: str, cause: str) -> bool:
        """Fail a state waiting on `task_token` with the named `error` (its Catch decides what
        follows); False if the token is no longer valid."""
        ...

    def output(self, execution_arn: str) -> str | None:
        """The output (JSON text) of an ended execution, when its status event left it out."""
        ...

    def describe(self, execution_arn: str) -> str | None:
        """The execution's status (`RUNNING`, `SUCCEEDED`, ...), or None if it does not exist
        (how a start whose answer was lost, and the sweeper, learn whether it landed)."""
        ...

    def still_waiting(self, task_token: str) -> bool:
        """Whether the state waiting on `task_token` still waits (a heartbeat, which changes
        nothing else): False once it timed out or ended; True when that cannot be told."""
        ...


class DirectLegs(Protocol):
    """Runs a task's first leg at once, without a state machine (an asynchronous Lambda invoke)."""

    def start(self, task_id: str) -> None:
        """Queue the first leg of `task_id`; it runs soon, and once (the leg claims the task).

        Raises if the leg could not be queued. Nothing is retried after the leg started: a
        crash, a timeout or an event too old to run is reported to the reconciler instead.
        """
        ...


class DurableExecutions(Protocol):
    """Runs tasks as Lambda durable executions of the durable function, one per task, named
    after it (`tasks.runs.durable`). The name is the execution's identity here: every call
    but the callbacks' finds the execution by it."""

    def start(self, name: str, payload: dict[str, Any]) -> None:
        """Start the execution `name` (asynchronously). Starting it again with the same
        payload is a no-op: the name makes the start idempotent."""
        ...

    def answer(self, callback_id: str, result: str) -> bool:
        """Complete the durable callback `callback_id` with `result` (JSON text); False if it
        is no longer waiting (completed, timed out, its execution over)."""
        ...

    def stop(self, name: str) -> None:
        """Stop the execution `name`, if it is still running."""
        ...

    def status(self, name: str) -> str | None:
        """The execution's status (`RUNNING`, `SUCCEEDED`, `FAILED`, `TIMED_OUT`, `STOPPED`,
        ...), or None if no execution has that name."""
        ...


class ResultStore(Protocol):
    """Where results too large for the task record go (S3)."""

    def put(self, task_id: str, body: bytes, expires_at: int | None) -> str:
        """Store a result body kept at least until `expires_at` (epoch seconds; None: for
        good); return the reference kept on the record."""
        ...

    def get(self, ref: str) -> bytes:
        """A stored body; ResultGone if it is not there any more."""
        ...

    def size(self, ref: str) -> int:
        """Bytes of a stored body, without reading it; ResultGone if it is not there any more."""
        ...
