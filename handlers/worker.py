"""Lambda entry point for one leg of a task, invoked by the task state machine.

Event: `{"taskId": ..., "taskToken": ...}` (ids only; the task item holds everything else).
Returns nothing the state machine reads: the leg reports through the task token.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from mcp_tasks_aws.aws.wiring import AwsParts
from mcp_tasks_aws.config import Settings, load_toolset
from mcp_tasks_aws.edge.observability import OptionalTracer

logger = Logger()
tracer = OptionalTracer()
metrics = Metrics()

settings = Settings.from_env()
legs = AwsParts(settings).leg_runner(load_toolset(settings.tools_module))


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, str]:
    task_id = str(event["taskId"])
    logger.append_keys(task_id=task_id)  # never the task token: it is a bearer capability
    outcome = legs.run(task_id, str(event["taskToken"]))
    metrics.add_metric(name=f"Leg{outcome.capitalize()}", unit=MetricUnit.Count, value=1)
    logger.info("leg ended", extra={"outcome": outcome})
    return {"outcome": outcome}
