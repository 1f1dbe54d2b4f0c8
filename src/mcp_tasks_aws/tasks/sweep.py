"""Sweeping stranded tasks (the sweeper function's work, on a schedule).

A task is stranded when nothing will ever end it: its start failed (the direct invoke, the
execution, a declared workflow's execution, or the execution a direct leg hands over to could
not be started) and the compensating `fail` failed too. No execution exists, so no reconcile
event ever comes (and a reconcile that failed for good is parked in its dead-letter queue);
without the sweeper the task would stay active until its TTL.

A task is stranded when, read consistently:
- it is active, holds no task token, and no leg holds it: it is still at leg 0 (no leg ever
  claimed it), or its direct leg parked it (it asked) and no execution attached;
- it was last updated longer than `stranded_after_ms` ago, more than a leg may run (a first
  leg that reports keeps it fresh; a direct event delayed that long is dropped: its claim
  finds the task failed);
- nothing runs it: its run is asked (`Run.may_be_running`, `tasks.runs`). The legs run asks
  its execution (`Runner.is_running`); a direct task still at leg 0 cannot have one, so
  nothing is asked; a declared workflow asks its own execution (`Workflows.describe`): one
  that does not exist never started, and the task is failed; one that runs is *adopted*
  (`transitions.adopt`: its leg moves on, so a workflow silent for hours is looked at once,
  not at every sweep); one that ended is left to the reconciler, whose event settles it.
A claimed direct leg still running is never a candidate: its claim stamps no update time, so
its age says nothing; its end, or its failure (the reconciler's), settles it.
Then one write (`transitions.lose_stranded`) fails it, fenced by the leg, the version and the
hold read: a leg that claimed it, an execution that attached or any write since wins, and
the sweep changes nothing.

Candidates come from `TaskStore.unstarted` (DynamoDB: a sparse index holding only leg-0
tasks), never from a scan of the table (docs/cost-and-scale.md).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Final, NamedTuple

from mcp_tasks_aws.protocol.errors import INTERNAL_ERROR
from mcp_tasks_aws.tasks import transitions
from mcp_tasks_aws.tasks.model import TaskRecord, now_ms
from mcp_tasks_aws.tasks.ports import Runner, TaskStore, Workflows
from mcp_tasks_aws.tasks.runs.base import RunPorts
from mcp_tasks_aws.tasks.runs.registry import Runs

logger = logging.getLogger(__name__)

STRANDED_MESSAGE: Final = "The task was never started, or never handed over: its start failed"
STRANDED_ERROR: Final = {"code": INTERNAL_ERROR, "message": STRANDED_MESSAGE}
DEFAULT_STRANDED_AFTER_MS: Final = 30 * 60 * 1000
"""Longer than a worker leg may run (900 s at most), so a first leg still running in its
execution is never mistaken for a stranded task even if the execution check were wrong."""
SWEEP_BATCH: Final = 100
"""Candidates read per consistent batch read (BatchGetItem takes at most 100 keys)."""
MAX_SWEPT: Final = 1000
"""Candidates looked at per sweep; more wait for the next one (the index is drained oldest first
within each shard)."""


class Swept(NamedTuple):
    """What one sweep did: candidates looked at, tasks failed, and settlements that failed."""

    candidates: int
    failed: list[str]
    errors: int


class SweepIncomplete(RuntimeError):
    """Some stranded task could not be settled (a fault); the next sweep tries it again."""


def is_stranded(record: TaskRecord, now: int, stranded_after_ms: int) -> bool:
    """Whether, from the record alone, no leg holds the task and it was left long enough
    (whether an execution runs it is asked next)."""
    return (
        record.unheld
        and record.updated_at <= now - stranded_after_ms
        and not record.is_expired(now)
    )


def sweep_stranded(
    store: TaskStore,
    runner: Runner,
    *,
    workflows: Workflows | None = None,
    adapters: Mapping[str, Any] | None = None,
    stranded_after_ms: int = DEFAULT_STRANDED_AFTER_MS,
    clock: Callable[[], int] = now_ms,
    limit: int = MAX_SWEPT,
) -> Swept:
    """Fail every stranded task among the candidates; raise SweepIncomplete (after trying all)
    if any could not be settled, so the function's error alarm sees a sweep that keeps failing.
    `workflows` answers for declared workflows' tasks (without it they are left alone),
    `adapters` for further runs' (`RunPorts.adapters`).
    """
    now = clock()
    ports = RunPorts(
        store, runner=runner, workflows=workflows, clock=clock, adapters=adapters or {}
    )
    runs = Runs(ports)
    # `unstarted` takes tasks updated strictly before its bound; is_stranded includes it.
    candidates = store.unstarted(now - stranded_after_ms + 1, limit)
    failed: list[str] = []
    errors = 0
    for start in range(0, len(candidates), SWEEP_BATCH):
        batch = candidates[start : start + SWEEP_BATCH]
        for record in store.get_many(batch).values():
            if not is_stranded(record, now, stranded_after_ms):
                continue  # claimed, ended or written since the index was read
            try:
                liveness = runs.of(record).may_be_running(record)
                if liveness == "adopt":  # out of the candidates: looked at once
                    store.apply(record.task_id, *transitions.adopt(record, clock()))
                if liveness != "stranded":
                    continue  # it runs (its end or the reconciler settles it), or it ended
                outcome = store.apply(
                    record.task_id, *transitions.lose_stranded(record, STRANDED_ERROR, clock())
                )
            except Exception:
                errors += 1
                logger.warning(
                    "task %s: settling it as stranded failed", record.task_id, exc_info=True
                )
                continue
            if outcome is not None and outcome.changed:
                failed.append(record.task_id)
                logger.warning("task %s was stranded (never started): failed", record.task_id)
    swept = Swept(len(candidates), failed, errors)
    if errors:
        raise SweepIncomplete(f"{errors} stranded task(s) could not be settled; next sweep retries")
    return swept
