"""Settling tasks whose leg or execution was lost (the reconciler function's work).

Lambda timeouts and crashes, and executions that end on their own (FAILED, TIMED_OUT, ABORTED),
never write an outcome. They surface as a failed execution (move `lose`) or, for a direct leg,
as the asynchronous invoke's on-failure record (move `lose_direct`); one guarded write turns
either into `failed`, and leaves a task alone that already ended (cancelled included) or, for a
direct leg, that an execution holds by now (see `tasks.transitions`).

A declared workflow's execution (a managed Standard machine, `tasks.workflow`) ends through
the same function, SUCCEEDED included: `settle_workflow_end` completes or fails the task it
runs, as the tool's declaration maps the execution's output or error, and leaves alone a task
that ended first (a cancelled task stays cancelled).

Nothing here runs a tool: the reconciler imports only the record, the rules and the store port
(a workflow's end also reads the tool's declaration and records its result through the
`LegRunner`, so a large output takes the result store's path like any leg's).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Literal

from mcp_tasks_aws.protocol.errors import INTERNAL_ERROR
from mcp_tasks_aws.tasks import transitions
from mcp_tasks_aws.tasks.model import TaskRecord, is_task_id, now_ms
from mcp_tasks_aws.tasks.ports import TaskStore, Workflows

if TYPE_CHECKING:
    from mcp_tasks_aws.tasks.legs import LegRunner

Settled = Literal["failed", "unchanged"]
WorkflowSettled = Literal["completed", "failed", "unchanged", "ignored"]
WORKFLOW_ENDS: Final = frozenset({"SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"})


def _lost(message: str) -> dict[str, Any]:
    return {"code": INTERNAL_ERROR, "message": message}


LOST_LEG_MESSAGES: Final = {
    "timeout": "The task's first leg ran past the worker's timeout",
    "crash": "The task's first leg crashed",
    "expired": "The task's first leg never ran: its event waited too long",
}


def settle_lost_direct_leg(
    store: TaskStore, task_id: str, reason: str, clock: Callable[[], int] = now_ms
) -> Settled:
    """A direct leg's invoke failed (`reason`: timeout, crash, expired): its task must not stay
    active while no execution holds it.

    One guarded write (`lose_direct`): an active task still held by its direct leg fails; a
    terminal one, or one an execution holds (the leg parked and handed it over), is left alone.
    """
    message = LOST_LEG_MESSAGES.get(reason, LOST_LEG_MESSAGES["crash"])
    outcome = store.apply(task_id, *transitions.lose_direct(_lost(message), clock()))
    return "failed" if outcome is not None and outcome.changed else "unchanged"


def settle_lost_execution(
    store: TaskStore, task_id: str, execution_status: str, clock: Callable[[], int] = now_ms
) -> Settled:
    """An execution FAILED, TIMED_OUT or was ABORTED: its task must not stay active.

    One guarded write: an active task fails; a terminal one (completed, failed, or cancelled,
    whose cancel is what ended the execution) is left alone. Returns what happened.
    """
    message = f"The task's execution ended without a result ({execution_status.lower()})"
    outcome = store.apply(task_id, *transitions.lose(_lost(message), clock()))
    return "failed" if outcome is not None and outcome.changed else "unchanged"


def settle_workflow_end(
    legs: LegRunner,
    workflows: Workflows | None,
    task_id: str,
    execution_arn: str,
    status: str,
    *,
    output: str | None = None,
    error: str | None = None,
    cause: str | None = None,
) -> WorkflowSettled:
    """A declared workflow's execution ended (its status-change event): settle its task.

    `ignored`: no task is run by this execution (another caller's execution of the same
    machine, a task gone). SUCCEEDED completes the task with `output` (JSON text; read back
    from the execution when the event left it out) as the tool's declaration maps it,
    offloaded like any result over the item budget; the other ends fail it, or complete it
    with a tool error where the declaration says so. A task already ended, cancelled
    included, is left alone (`unchanged`): every write is a guarded move.
    """
    if not is_task_id(task_id) or status not in WORKFLOW_ENDS:
        return "ignored"  # an execution someone started by hand: no read at all
    store, clock = legs.store, legs.clock
    record = store.get(task_id)
    if record is None or record.execution_arn != execution_arn:
        return "ignored"
    if record.is_terminal:
        return "unchanged"
    spec = legs.toolset.tools.get(record.tool)
    if spec is None or spec.workflow is None:
        failure = _lost(f"The workflow ended but tool {record.tool} is gone")
        moved = store.apply(task_id, *transitions.lose(failure, clock()))
        return "failed" if moved is not None and moved.changed else "unchanged"
    if status == "SUCCEEDED":
        if output is None and workflows is not None:
            output = workflows.output(execution_arn)
        try:
            value = json.loads(output) if output is not None else None
        except ValueError:
            value = output
        return _settle(legs, record, "result", spec.workflow.result_of(value))
    how, outcome = spec.workflow.failure_of(status, error, cause)
    return _settle(legs, record, how, outcome)


_COMPLETE_ROUNDS: Final = 3


def _settle(
    legs: LegRunner, record: TaskRecord, how: Literal["result", "error"], outcome: dict[str, Any]
) -> WorkflowSettled:
    if how == "error":
        moved = legs.store.apply(record.task_id, *transitions.lose(outcome, legs.clock()))
        return "failed" if moved is not None and moved.changed else "unchanged"
    for _ in range(_COMPLETE_ROUNDS):
        if legs.complete(record, outcome):
            return "completed"
        # Refused: ended meanwhile (cancel wins), or the leg moved under the read (the
        # sweeper adopted the task: `transitions.adopt`); then complete at the new leg. An
        # ended execution asks nothing more, so nothing else moves it.
        fresh = legs.store.get(record.task_id)
        if fresh is None or fresh.is_terminal or fresh.leg == record.leg:
            return "unchanged"
        record = fresh
    return "unchanged"
