"""Lambda entry point for lost work: executions that ended, and direct legs that failed.

Two event shapes arrive here:
- EventBridge "Step Functions Execution Status Change": an execution that FAILED, TIMED_OUT or
  was ABORTED without ending its task (a worker crash, a leg timeout, a stopped execution);
- the worker's on-failure destination record: a direct leg (an asynchronous invoke) that
  crashed, timed out, or whose event expired before it ran.
Either way the task must not stay active: it becomes failed, unless it is already terminal
(cancelled included), or, for a direct leg, an execution holds it now.

A third: the status change of a declared workflow's execution (a managed Standard machine,
`tasks.workflow`), SUCCEEDED included: its end settles the task it runs, with the output as
the tool's declaration maps it (`tasks.reconcile.settle_workflow_end`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp_tasks_aws.runtime import init_phase

# A cold start: no collections while these imports build what lives as long as the
# environment (`runtime.init_phase`; the handler itself is built the same way).
with init_phase():
    from aws_lambda_powertools import Logger, Metrics
    from aws_lambda_powertools.metrics import MetricUnit
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from mcp_tasks_aws.app import App, handler_from_env
    from mcp_tasks_aws.edge.lost_legs import lost_direct_leg
    from mcp_tasks_aws.tasks.reconcile import (
        settle_lost_direct_leg,
        settle_lost_execution,
        settle_workflow_end,
    )

if TYPE_CHECKING:
    from mcp_tasks_aws.tasks.legs import LegRunner

logger = Logger()
metrics = Metrics()
LOST = frozenset({"FAILED", "TIMED_OUT", "ABORTED"})
LambdaHandler = Callable[[dict[str, Any], Any], dict[str, str]]


def make_handler(app: App) -> LambdaHandler:
    store = app.store
    own_machine = app.settings.state_machine_arn
    legs: list[LegRunner] = []  # built on the first workflow event (loads the tools)

    def settle_workflow(detail: dict[str, Any], task_id: str, status: str) -> str:
        if not legs:
            legs.append(app.leg_runner())
        included = (detail.get("outputDetails") or {}).get("included", True)
        output = detail.get("output") if included else None
        return settle_workflow_end(
            legs[0],
            app.workflows,
            task_id,
            str(detail.get("executionArn", "")),
            status,
            output=output if isinstance(output, str) else None,
            error=detail.get("error"),
            cause=detail.get("cause"),
        )

    @logger.inject_lambda_context(clear_state=True)
    @metrics.log_metrics
    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, str]:
        leg = lost_direct_leg(event)
        outcome: str
        if leg is not None:
            logger.append_keys(task_id=leg.task_id, lost_leg=leg.reason)
            outcome = settle_lost_direct_leg(store, leg.task_id, leg.reason)
            metric = f"ReconciledLeg{outcome.capitalize()}"
        else:
            detail = event.get("detail") or {}
            status = str(detail.get("status", ""))
            task_id = str(detail.get("name", ""))
            machine = str(detail.get("stateMachineArn", ""))
            if not task_id:
                return {"outcome": "ignored"}
            if machine and machine != own_machine:
                logger.append_keys(task_id=task_id, execution_status=status)
                outcome = settle_workflow(detail, task_id, status)
                metric = f"Workflow{outcome.capitalize()}"
            else:
                if status not in LOST:
                    return {"outcome": "ignored"}
                logger.append_keys(task_id=task_id, execution_status=status)
                outcome = settle_lost_execution(store, task_id, status)
                metric = f"Reconciled{outcome.capitalize()}"
        metrics.add_metric(name=metric, unit=MetricUnit.Count, value=1)
        logger.info("reconciled", extra={"outcome": outcome})
        return {"outcome": outcome}

    return handler


# The Lambda runtime reads `handler` right after importing this module, during init: that is
# when the deployed handler is built from the environment. Importing the module (as the
# embedded stack does, to call make_handler with its own App) builds nothing.
__getattr__ = handler_from_env(make_handler, globals())
