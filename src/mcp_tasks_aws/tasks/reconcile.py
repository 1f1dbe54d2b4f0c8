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

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, cast

from mcp_tasks_aws.tasks.model import now_ms
from mcp_tasks_aws.tasks.ports import TaskStore, Workflows
from mcp_tasks_aws.tasks.runs.base import LostEnd, RunPorts
from mcp_tasks_aws.tasks.runs.direct import DirectRun
from mcp_tasks_aws.tasks.runs.legs import LegsRun
from mcp_tasks_aws.tasks.runs.workflow import WorkflowRun

if TYPE_CHECKING:
    from mcp_tasks_aws.tasks.legs import LegRunner

Settled = Literal["failed", "unchanged"]
WorkflowSettled = Literal["completed", "failed", "unchanged", "ignored"]


def settle_lost_direct_leg(
    store: TaskStore, task_id: str, reason: str, clock: Callable[[], int] = now_ms
) -> Settled:
    """A direct leg's invoke failed (`reason`: timeout, crash, expired): its task must not stay
    active while no execution holds it (`runs.direct.DirectRun.settle_lost`)."""
    run = DirectRun(RunPorts(store, clock=clock))
    return cast(Settled, run.settle_lost(LostEnd(run.name, task_id, reason)))


def settle_lost_execution(
    store: TaskStore, task_id: str, execution_status: str, clock: Callable[[], int] = now_ms
) -> Settled:
    """An execution FAILED, TIMED_OUT or was ABORTED: its task must not stay active
    (`runs.legs.LegsRun.settle_lost`)."""
    run = LegsRun(RunPorts(store, clock=clock))
    return cast(Settled, run.settle_lost(LostEnd(run.name, task_id, execution_status)))


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
    """A declared workflow's execution ended (its status-change event): settle its task
    (`runs.workflow.WorkflowRun.settle_lost`)."""
    ports = RunPorts(legs.store, workflows=workflows, legs=lambda: legs, clock=legs.clock)
    end = LostEnd(WorkflowRun.name, task_id, status, execution_arn, output, error, cause)
    return cast(WorkflowSettled, WorkflowRun(ports).settle_lost(end))
