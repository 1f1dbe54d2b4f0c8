"""The `workflow` run: the task *is* a declared workflow's execution (a managed Standard machine).

No leg of this server runs: the execution, named after the task, drives it through its doors
(`tasks.workflow`: ask, report) and its end. The record holds the execution's ARN from its
first write (`execution_arn`).

- start: `StartExecution` with the declared input and the task's capability, learning the
  truth when the start does not answer (`workflow.start_execution`);
- resume: the answer is the waiting state's output, or a named error for a declined or
  dismissed elicitation (`workflow.resume`); a dead token after this update's own answer means
  the state stopped waiting first, and the task says the answer was not delivered;
- release: the execution is stopped, and a waiting state failed (`workflow.release`);
- a lost end: the execution's status change, SUCCEEDED included: the task completes with the
  output as the declaration maps it, or fails (or completes with a tool error) on the other
  ends, never over a task that ended first;
- may it be running: `DescribeExecution`: none means its start never landed; one that runs is
  adopted (its doors read the task afresh, so its leg may move on); one that ended is left to
  the reconciler.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal

from mcp_tasks_aws.tasks import transitions, workflow
from mcp_tasks_aws.tasks.model import TaskRecord, is_task_id
from mcp_tasks_aws.tasks.runs.base import Liveness, LostEnd, Run, RunPorts, lost

if TYPE_CHECKING:
    from mcp_tasks_aws.tasks.legs import LegRunner
    from mcp_tasks_aws.tasks.ports import Workflows
    from mcp_tasks_aws.tools.registry import ToolSpec

logger = logging.getLogger(__name__)

ENDS: Final = frozenset({"SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"})
_COMPLETE_ROUNDS: Final = 3


class WorkflowRun(Run):
    """A declared Standard machine's execution, named after the task, is the task's work."""

    name: ClassVar[str] = "workflow"

    @classmethod
    def serves(cls, spec: ToolSpec, ports: RunPorts) -> bool:
        return spec.workflow is not None

    @property
    def workflows(self) -> Workflows:
        return self.need(self.ports.workflows, "declared workflows (a Workflows port)")

    def prepare(self, record: TaskRecord, spec: ToolSpec) -> TaskRecord:
        assert spec.workflow is not None
        if self.ports.workflows is None:
            raise RuntimeError(f"{spec.label} runs a workflow, but none can be started")
        arn = workflow.execution_arn_for(spec.workflow.machine_arn, record.task_id)
        return replace(record, execution_arn=arn)

    def start(self, record: TaskRecord, spec: ToolSpec) -> None:
        assert spec.workflow is not None
        payload = spec.workflow.execution_input(record.task_id, record.arguments)
        if self.ports.door_keys is not None:
            payload[workflow.CAPABILITY_KEY] = self.ports.door_keys.issue(record)
        machine = spec.workflow.machine_arn
        workflow.start_execution(self.workflows, machine, record, payload, sleep=self.ports.sleep)

    def resume(self, record: TaskRecord, answered: bool) -> None:
        """The waiting state gets the answer as its output, or fails with a named error for
        a declined or dismissed elicitation (its Catch decides what follows).

        A dead token after this update's own answer landed means the state stopped waiting
        first (it timed out): the task says the answer was not delivered. After a retried
        update (`answered` False) a dead token is the first resume's doing: nothing to say.
        """
        if self.ports.workflows is None:
            raise RuntimeError(f"task {record.task_id} runs a workflow, but none is configured")
        if workflow.resume(self.workflows, record) or not answered:
            return
        logger.warning("task %s: an answer reached a workflow that stopped waiting", record.task_id)
        # Fenced by the leg: a new question the workflow asked meanwhile wins. The answer is
        # recorded already; a note that cannot be written is logged, not answered as an error.
        moved = transitions.report(record.leg, workflow.STALE_ANSWER_MESSAGE, self.ports.clock())
        try:
            self.store.apply(record.task_id, *moved)
        except Exception:
            logger.warning("task %s: the note was not written", record.task_id, exc_info=True)

    def release(self, record: TaskRecord) -> None:
        if self.ports.workflows is None or record.execution_arn is None:
            logger.warning("task %s: its workflow cannot be stopped from here", record.task_id)
            return
        workflow.release(self.workflows, record, record.execution_arn)

    def settle_lost(self, end: LostEnd) -> str:
        """A declared workflow's execution ended (its status-change event): settle its task.

        `ignored`: no task is run by this execution (another caller's execution of the same
        machine, a task gone). SUCCEEDED completes the task with `end.output` (JSON text; read
        back from the execution when the event left it out) as the tool's declaration maps
        it, offloaded like any result over the item budget; the other ends fail it, or
        complete it with a tool error where the declaration says so. A task already ended,
        cancelled included, is left alone (`unchanged`): every write is a guarded move.
        """
        if not is_task_id(end.task_id) or end.status not in ENDS:
            return "ignored"  # an execution someone started by hand: no read at all
        store, clock = self.store, self.ports.clock
        record = store.get(end.task_id)
        if record is None or record.execution_arn != end.execution_arn:
            return "ignored"
        if record.is_terminal:
            return "unchanged"
        legs = self.need(self.ports.legs, "the worker's leg runner")()
        spec = legs.toolset.tools.get(record.tool)
        if spec is None or spec.workflow is None:
            failure = lost(f"The workflow ended but tool {record.tool} is gone")
            moved = store.apply(end.task_id, *transitions.lose(failure, clock()))
            return "failed" if moved is not None and moved.changed else "unchanged"
        if end.status == "SUCCEEDED":
            output = end.output
            if output is None and self.ports.workflows is not None:
                output = self.workflows.output(end.execution_arn)
            try:
                value = json.loads(output) if output is not None else None
            except ValueError:
                value = output
            return _settle(legs, record, "result", spec.workflow.result_of(value))
        how, outcome = spec.workflow.failure_of(end.status, end.error, end.cause)
        return _settle(legs, record, how, outcome)

    def may_be_running(self, record: TaskRecord) -> Liveness:
        """Its own execution is asked (without a workflows port nothing can be said)."""
        if self.ports.workflows is None or record.execution_arn is None:
            return "unknown"
        status = self.workflows.describe(record.execution_arn)
        if status is None:
            return "stranded"
        return "adopt" if status == "RUNNING" else "unknown"


def _settle(
    legs: LegRunner, record: TaskRecord, how: Literal["result", "error"], outcome: dict[str, Any]
) -> str:
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
