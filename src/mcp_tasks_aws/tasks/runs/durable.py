"""The `durable` run: the task is one Lambda durable execution of the durable function.

A tool opts in (`@tools.tool(task="required", runner="durable")`). Its task's execution is
named after the task (so a start is idempotent) and runs the tool in checkpointed steps,
durable callbacks for its questions and durable waits for its sleeps (`tasks.durable`), for up
to the task's TTL. The port is `DurableExecutions` (`tasks.ports`): the Lambda API
(`aws.durable`), or locally AWS's in-process runner (`local.durable`), in `RunPorts.adapters`
under this run's name.

- start: the function invoked asynchronously with the execution name (Invoke, `Event`);
- resume: the callback whose id the park stored (`task_token`) is completed with the task's
  answers (`SendDurableExecutionCallbackSuccess`); a callback no longer waiting (timed out)
  after this update's own answer is said on the task's status message;
- release: the execution is stopped (`StopDurableExecution`, after the cancel marker: cancel
  wins whatever the execution was doing, a step, a wait or a callback);
- a lost end: the execution ended (FAILED, TIMED_OUT, STOPPED, or SUCCEEDED without ending its
  task): an active task fails (`transitions.lose`), a task that ended first is left alone;
- may it be running: the execution's status by name: none means its start never landed; one
  that runs is adopted (its writes read the task afresh when refused, so its leg may move on);
  one that ended is the reconciler's.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any, ClassVar, Final

from mcp_tasks_aws.tasks import transitions
from mcp_tasks_aws.tasks.model import TaskRecord, is_task_id
from mcp_tasks_aws.tasks.runs.base import Liveness, LostEnd, Run, RunPorts, lost
from mcp_tasks_aws.tools.journal import STEP_PREFIX

if TYPE_CHECKING:
    from mcp_tasks_aws.tasks.ports import DurableExecutions
    from mcp_tasks_aws.tools.registry import ToolSpec

logger = logging.getLogger(__name__)

ENDS: Final = frozenset({"SUCCEEDED", "FAILED", "TIMED_OUT", "STOPPED"})
STALE_ANSWER_MESSAGE: Final = (
    "The answer came after the durable task stopped waiting for it; it was not delivered"
)


def execution_input(record: TaskRecord) -> dict[str, Any]:
    """What a durable execution is started with: the task's id (the item holds the rest)."""
    return {"taskId": record.task_id}


class DurableRun(Run):
    """A Lambda durable execution, named after the task, runs the tool in durable steps."""

    name: ClassVar[str] = "durable"

    @classmethod
    def serves(cls, spec: ToolSpec, ports: RunPorts) -> bool:
        """The tools that asked for it (and only them: without a durable function configured,
        their tasks fail to start, saying so, rather than run another way)."""
        return spec.runner == "durable"

    @property
    def executions(self) -> DurableExecutions:
        port: DurableExecutions | None = self.ports.adapters.get(self.name)
        return self.need(port, "durable executions (a DurableExecutions port)")

    def prepare(self, record: TaskRecord, spec: ToolSpec) -> TaskRecord:
        if self.ports.adapters.get(self.name) is None:  # refused before anything is written
            raise RuntimeError(
                f"{spec.label} runs durably, but no durable executions are configured"
            )
        return record

    def start(self, record: TaskRecord, spec: ToolSpec) -> None:
        self.executions.start(record.task_id, execution_input(record))

    def resume(self, record: TaskRecord, answered: bool) -> None:
        assert record.task_token is not None
        answers = {k: v for k, v in record.answers.items() if not k.startswith(STEP_PREFIX)}
        if self.executions.answer(record.task_token, json.dumps(answers)) or not answered:
            return
        logger.warning(
            "task %s: an answer reached a durable task that stopped waiting", record.task_id
        )
        moved = transitions.report(record.leg, STALE_ANSWER_MESSAGE, self.ports.clock())
        try:
            self.store.apply(record.task_id, *moved)
        except Exception:
            logger.warning("task %s: the note was not written", record.task_id, exc_info=True)

    def release(self, record: TaskRecord) -> None:
        self.executions.stop(record.task_id)

    def settle_lost(self, end: LostEnd) -> str:
        if not is_task_id(end.task_id) or end.status not in ENDS:
            return "ignored"
        message = f"The task's durable execution ended without a result ({end.status.lower()})"
        moved = transitions.lose(lost(message), self.ports.clock())
        outcome = self.store.apply(end.task_id, *moved)
        if outcome is None:
            return "ignored"
        return "failed" if outcome.changed else "unchanged"

    def may_be_running(self, record: TaskRecord) -> Liveness:
        if self.ports.adapters.get(self.name) is None:
            return "unknown"
        status = self.executions.status(record.task_id)
        if status is None:
            return "stranded"
        return "adopt" if status == "RUNNING" else "unknown"
