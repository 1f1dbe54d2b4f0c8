"""Lambda entry point for EventBridge "Step Functions Execution Status Change" events.

An execution that FAILED, TIMED_OUT or was ABORTED without ending its task (a worker crash,
a leg timeout, a stopped execution) must not leave the task active: it becomes failed. A task
that is already terminal (cancelled included) is left alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from mcp_tasks_aws.app import App, handler_from_env
from mcp_tasks_aws.tasks.worker import settle_lost_execution

logger = Logger()
metrics = Metrics()
LOST = frozenset({"FAILED", "TIMED_OUT", "ABORTED"})
LambdaHandler = Callable[[dict[str, Any], Any], dict[str, str]]


def make_handler(app: App) -> LambdaHandler:
    store = app.store

    @logger.inject_lambda_context(clear_state=True)
    @metrics.log_metrics
    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, str]:
        detail = event.get("detail") or {}
        status = str(detail.get("status", ""))
        task_id = str(detail.get("name", ""))
        if status not in LOST or not task_id:
            return {"outcome": "ignored"}
        logger.append_keys(task_id=task_id, execution_status=status)
        outcome = settle_lost_execution(store, task_id, status)
        metrics.add_metric(name=f"Reconciled{outcome.capitalize()}", unit=MetricUnit.Count, value=1)
        logger.info("reconciled", extra={"outcome": outcome})
        return {"outcome": outcome}

    return handler


# The Lambda runtime reads `handler` right after importing this module, during init: that is
# when the deployed handler is built from the environment. Importing the module (as the
# embedded stack does, to call make_handler with its own App) builds nothing.
__getattr__ = handler_from_env(make_handler, globals())
