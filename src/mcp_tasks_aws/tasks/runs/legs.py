"""The `legs` run: every leg of the task in an execution of the task state machine.

The execution (Step Functions Standard, `infra/task_runner.asl.json`, named after the task so
a retried start cannot run the tool twice) invokes the worker with a task token for each leg
(`tasks.legs.LegRunner.run`); a leg that asks parks the task with that token, and the
execution waits for free until `tasks/update` sends the token back. A tool that opted out of
direct legs (`direct=False`), or a deployment without them, runs this way; so does a direct
task once its execution has attached (`runs.direct`).

- start: `StartExecution`, waiting at most the task's remaining TTL;
- resume: `SendTaskSuccess` with the stored token (a used token is reported stale);
- release: a waiting execution's token is failed (`SendTaskFailure`), else the execution is
  stopped;
- a lost end: the execution FAILED, TIMED_OUT or was ABORTED (its status-change event): the
  task fails (`transitions.lose`);
- may it be running: `DescribeExecution`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from mcp_tasks_aws.tasks import transitions
from mcp_tasks_aws.tasks.model import TaskRecord
from mcp_tasks_aws.tasks.runs.base import Liveness, LostEnd, Run, RunPorts, lost

if TYPE_CHECKING:
    from mcp_tasks_aws.tasks.ports import Runner
    from mcp_tasks_aws.tools.registry import ToolSpec


class LegsRun(Run):
    """Every leg in an execution of the task state machine."""

    name: ClassVar[str] = "legs"

    @classmethod
    def serves(cls, spec: ToolSpec, ports: RunPorts) -> bool:
        """Any tool whose code runs in this server's legs (not a declared workflow)."""
        return spec.workflow is None

    @property
    def runner(self) -> Runner:
        return self.need(self.ports.runner, "the task state machine (a Runner)")

    def start(self, record: TaskRecord, spec: ToolSpec) -> None:
        self.runner.start(record.task_id, record.wait_seconds(record.created_at))

    def resume(self, record: TaskRecord, answered: bool) -> None:
        assert record.task_token is not None
        self.runner.resume(record.task_token, record.wait_seconds(self.ports.clock()))

    def release(self, record: TaskRecord) -> None:
        """Fail the execution's wait for input, or stop it while it works."""
        token = record.task_token if record.waiting_on_token else None
        if token is not None and self.runner.interrupt(token):
            return
        self.runner.stop(record.task_id)

    def settle_lost(self, end: LostEnd) -> str:
        """The execution FAILED, TIMED_OUT or was ABORTED: its task must not stay active.

        One guarded write: an active task fails; a terminal one (completed, failed, or
        cancelled, whose cancel is what ended the execution) is left alone.
        """
        message = f"The task's execution ended without a result ({end.status.lower()})"
        moved = transitions.lose(lost(message), self.ports.clock())
        outcome = self.store.apply(end.task_id, *moved)
        return "failed" if outcome is not None and outcome.changed else "unchanged"

    def may_be_running(self, record: TaskRecord) -> Liveness:
        """Whether the task's execution exists and runs (it may be about to write)."""
        return "running" if self.runner.is_running(record.task_id) else "stranded"
