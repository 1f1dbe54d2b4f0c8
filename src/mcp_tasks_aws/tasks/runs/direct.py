"""The `direct` run: the task's first leg in an asynchronous invoke of the worker, no execution.

The API queues the leg (`InvocationType=Event`) and answers; the worker `claim`s the task
(once: a duplicated event finds it claimed) and runs the tool (`tasks.legs.LegRunner.
run_direct`). A tool that returns ends the task there: no execution ever exists. One that
asks parks the task without a token and starts the task's execution, whose first leg
`attach`es its token: from then on the task runs as the `legs` run does (`runs.legs`), so this
run is that one with a different first leg, and its record keeps naming it. Who holds the task
is the record's `held_by` (`direct` until an execution attaches), the fence of the moves only a
direct leg may make (`claim`, `lose_direct`).

- start: the asynchronous invoke (never retried: a tool must not run twice);
- release: nothing while the direct leg holds the task (it notices the cancel at its next
  report, and the execution it starts notices before it attaches); once attached, as `legs`;
- a lost end: the invoke's on-failure record (a crash, a timeout, an event too old): the task
  fails while its direct leg still holds it (`transitions.lose_direct`); once an execution
  holds it, that execution's end is the `legs` run's to settle;
- may it be running: not before its claim (no execution can exist); after a park, its
  execution is asked, as for `legs`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar, Final

from mcp_tasks_aws.tasks import transitions
from mcp_tasks_aws.tasks.model import TaskRecord
from mcp_tasks_aws.tasks.runs.base import Liveness, LostEnd, RunPorts, lost
from mcp_tasks_aws.tasks.runs.legs import LegsRun

if TYPE_CHECKING:
    from mcp_tasks_aws.tasks.ports import DirectLegs
    from mcp_tasks_aws.tools.registry import ToolSpec

LOST_LEG_MESSAGES: Final = {
    "timeout": "The task's first leg ran past the worker's timeout",
    "crash": "The task's first leg crashed",
    "expired": "The task's first leg never ran: its event waited too long",
}


class DirectRun(LegsRun):
    """The first leg in an asynchronous invoke; later legs, if it asks, in an execution."""

    name: ClassVar[str] = "direct"

    @classmethod
    def serves(cls, spec: ToolSpec, ports: RunPorts) -> bool:
        """A tool with legs that did not opt out (`direct=False`), where direct legs exist."""
        return spec.workflow is None and spec.direct and ports.direct_legs is not None

    def prepare(self, record: TaskRecord, spec: ToolSpec) -> TaskRecord:
        return replace(record, held_by="direct")

    @property
    def direct_legs(self) -> DirectLegs:
        return self.need(self.ports.direct_legs, "direct legs (a DirectLegs port)")

    def start(self, record: TaskRecord, spec: ToolSpec) -> None:
        self.direct_legs.start(record.task_id)

    def release(self, record: TaskRecord) -> None:
        if record.held_by == "direct":
            return  # no execution holds it: the leg, or the execution it starts, notices
        super().release(record)

    def settle_lost(self, end: LostEnd) -> str:
        """A direct leg's invoke failed (`end.status`: timeout, crash, expired): its task must
        not stay active while no execution holds it.

        One guarded write (`lose_direct`): an active task still held by its direct leg fails;
        a terminal one, or one an execution holds (the leg parked and handed it over), is left
        alone.
        """
        message = LOST_LEG_MESSAGES.get(end.status, LOST_LEG_MESSAGES["crash"])
        moved = transitions.lose_direct(lost(message), self.ports.clock())
        outcome = self.store.apply(end.task_id, *moved)
        return "failed" if outcome is not None and outcome.changed else "unchanged"

    def may_be_running(self, record: TaskRecord) -> Liveness:
        if record.held_by == "direct" and record.leg == transitions.FIRST_LEG:
            return "stranded"  # never claimed: its execution, if any, starts after its park
        return super().may_be_running(record)
