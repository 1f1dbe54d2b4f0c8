"""Lambda entry point for EventBridge "Step Functions Execution Status Change" events.

An execution that FAILED, TIMED_OUT or was ABORTED without ending its task (a worker crash,
a leg timeout, a stopped execution) must not leave the task active: it becomes failed, or
cancelled when a cancel was asked.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from mcp_tasks_aws.aws.wiring import AwsParts
from mcp_tasks_aws.config import Settings
from mcp_tasks_aws.tasks.worker import settle_lost_execution

logger = Logger()
metrics = Metrics()

store = AwsParts(Settings.from_env()).store
LOST = frozenset({"FAILED", "TIMED_OUT", "ABORTED"})


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
