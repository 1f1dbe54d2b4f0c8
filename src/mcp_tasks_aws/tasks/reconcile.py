"""Settling tasks whose work ended without ending them (the reconciler function's work).

Lambda timeouts and crashes, and executions that end on their own, never write an outcome.
Each such end reaches the reconciler as an event of the run whose work it was (`LostEnd`), and
the run settles its task (`Run.settle_lost`): one guarded move, so a task that already ended
(cancelled included) is left alone. Today's ends:

- a direct leg's on-failure record (a crash, a timeout, an event too old): `runs.direct`
  fails the task while its direct leg still holds it;
- an execution of the task state machine that FAILED, TIMED_OUT or was ABORTED: `runs.legs`
  fails the task;
- a declared workflow's execution that ended, SUCCEEDED included: `runs.workflow` completes or
  fails the task as the tool's declaration maps the output or error.

Nothing here runs a tool (a workflow's end records its result through the `LegRunner`, so a
large output takes the result store's path like any leg's). The three functions below are
those ends, each for its run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, cast

from mcp_tasks_aws.tasks.model import now_ms
from mcp_tasks_aws.tasks.ports import TaskStore, Workflows
from mcp_tasks_aws.tasks.runs.base import LostEnd, RunPorts
from mcp_tasks_aws.tasks.runs.registry import Runs

if TYPE_CHECKING:
    from mcp_tasks_aws.tasks.legs import LegRunner

Settled = Literal["failed", "unchanged"]
WorkflowSettled = Literal["completed", "failed", "unchanged", "ignored"]


def settle_lost(runs: Runs, end: LostEnd) -> str:
    """The run whose work ended settles its task (`Run.settle_lost`)."""
    return runs.named(end.run).settle_lost(end)


def settle_lost_direct_leg(
    store: TaskStore, task_id: str, reason: str, clock: Callable[[], int] = now_ms
) -> Settled:
    """A direct leg's invoke failed (`reason`: timeout, crash, expired)."""
    end = LostEnd("direct", task_id, reason)
    return cast(Settled, settle_lost(Runs(RunPorts(store, clock=clock)), end))


def settle_lost_execution(
    store: TaskStore, task_id: str, execution_status: str, clock: Callable[[], int] = now_ms
) -> Settled:
    """An execution of the task state machine FAILED, TIMED_OUT or was ABORTED."""
    end = LostEnd("legs", task_id, execution_status)
    return cast(Settled, settle_lost(Runs(RunPorts(store, clock=clock)), end))


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
    """A declared workflow's execution ended (its status-change event)."""
    ports = RunPorts(legs.store, workflows=workflows, legs=lambda: legs, clock=legs.clock)
    end = LostEnd("workflow", task_id, status, execution_arn, output, error, cause)
    return cast(WorkflowSettled, settle_lost(Runs(ports), end))
