"""Settling tasks whose leg or execution was lost (the reconciler function's work).

Lambda timeouts and crashes, and executions that end on their own (FAILED, TIMED_OUT, ABORTED),
never write an outcome. They surface as a failed execution (move `lose`) or, for a direct leg,
as the asynchronous invoke's on-failure record (move `lose_direct`); one guarded write turns
either into `failed`, and leaves a task alone that already ended (cancelled included) or, for a
direct leg, that an execution holds by now (see `tasks.transitions`).

Nothing here runs a tool: the reconciler imports only the record, the rules and the store port.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Literal

from mcp_tasks_aws.protocol.errors import INTERNAL_ERROR
from mcp_tasks_aws.tasks import transitions
from mcp_tasks_aws.tasks.model import now_ms
from mcp_tasks_aws.tasks.ports import TaskStore

Settled = Literal["failed", "unchanged"]


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
