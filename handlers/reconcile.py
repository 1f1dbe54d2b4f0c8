"""Lambda entry point for lost work: ends of a task's work that did not end the task.

Each event is an end of one run's work (`tasks.runs`), handed to that run to settle
(`tasks.reconcile.settle_lost`):
- the worker's on-failure destination record: a direct leg (an asynchronous invoke) that
  crashed, timed out, or whose event expired before it ran (run `direct`);
- EventBridge "Step Functions Execution Status Change" of the task state machine: an
  execution that FAILED, TIMED_OUT or was ABORTED without ending its task (run `legs`);
- the same event for any other machine: a declared workflow's execution that ended,
  SUCCEEDED included (run `workflow`);
- a "Durable Execution Status Change" of the durable function (template's DurableEndsRule): a
  durable tool's execution that FAILED, TIMED_OUT or was STOPPED (run `durable`).
The task becomes failed (or, for a workflow, completed as its declaration maps the output),
unless it is already terminal (cancelled included), or, for a direct leg, an execution holds
it now. Which run an event belongs to is read off the event here; nothing else is.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from mcp_tasks_aws.runtime import init_phase

# A cold start: no collections while these imports build what lives as long as the
# environment (`runtime.init_phase`; the handler itself is built the same way).
with init_phase():
    from aws_lambda_powertools import Logger, Metrics
    from aws_lambda_powertools.metrics import MetricUnit
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from mcp_tasks_aws.app import App, handler_from_env
    from mcp_tasks_aws.edge.lost_legs import lost_direct_leg
    from mcp_tasks_aws.tasks.reconcile import settle_lost
    from mcp_tasks_aws.tasks.runs.base import LostEnd, RunPorts
    from mcp_tasks_aws.tasks.runs.registry import Runs

logger = Logger()
metrics = Metrics()
LOST = frozenset({"FAILED", "TIMED_OUT", "ABORTED"})
DURABLE_END = "Durable Execution Status Change"
LambdaHandler = Callable[[dict[str, Any], Any], dict[str, str]]


def lost_end(event: dict[str, Any], own_machine: str) -> tuple[LostEnd, str] | None:
    """The end `event` reports, and the prefix of its metric; None for an event to ignore."""
    leg = lost_direct_leg(event)
    if leg is not None:
        return LostEnd("direct", leg.task_id, leg.reason), "ReconciledLeg"
    detail = event.get("detail") or {}
    if event.get("detail-type") == DURABLE_END:
        name = str(detail.get("durableExecutionName", ""))
        if not name:
            return None
        arn = str(detail.get("durableExecutionArn", ""))
        return LostEnd("durable", name, str(detail.get("status", "")), arn), "Durable"
    status = str(detail.get("status", ""))
    task_id = str(detail.get("name", ""))
    machine = str(detail.get("stateMachineArn", ""))
    if not task_id:
        return None
    if machine and machine != own_machine:
        included = (detail.get("outputDetails") or {}).get("included", True)
        output = detail.get("output") if included else None
        end = LostEnd(
            "workflow",
            task_id,
            status,
            str(detail.get("executionArn", "")),
            output=output if isinstance(output, str) else None,
            error=detail.get("error"),
            cause=detail.get("cause"),
        )
        return end, "Workflow"
    if status not in LOST:
        return None
    return LostEnd("legs", task_id, status), "Reconciled"


def make_handler(app: App) -> LambdaHandler:
    own_machine = app.settings.state_machine_arn
    ports = RunPorts(
        app.store,
        workflows=app.workflows,
        # Made on the first workflow end (it loads the tools), once.
        legs=functools.cache(app.leg_runner),
        adapters=app.run_adapters,
    )
    runs = Runs(ports)

    @logger.inject_lambda_context(clear_state=True)
    @metrics.log_metrics
    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, str]:
        found = lost_end(event, own_machine)
        if found is None:
            return {"outcome": "ignored"}
        end, metric = found
        logger.append_keys(task_id=end.task_id, run=end.run, end_status=end.status)
        outcome = settle_lost(runs, end)
        metrics.add_metric(name=f"{metric}{outcome.capitalize()}", unit=MetricUnit.Count, value=1)
        logger.info("reconciled", extra={"outcome": outcome})
        return {"outcome": outcome}

    return handler


# The Lambda runtime reads `handler` right after importing this module, during init: that is
# when the deployed handler is built from the environment. Importing the module (as the
# embedded stack does, to call make_handler with its own App) builds nothing.
__getattr__ = handler_from_env(make_handler, globals())
