"""Lambda entry point for the MCP endpoint (API Gateway HTTP API, payload format 2.0).

Parse the event, hand it to the transport, return its response. The transport, the task
service and their AWS clients are built once per execution environment, outside the handler.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from mcp_tasks_aws.app import build_transport
from mcp_tasks_aws.aws.wiring import task_parts_from
from mcp_tasks_aws.config import Settings
from mcp_tasks_aws.edge.apigw import request_from_event, response_to_api
from mcp_tasks_aws.edge.observability import OptionalTracer
from mcp_tasks_aws.protocol.errors import McpError

logger = Logger()
tracer = OptionalTracer()
metrics = Metrics()


def _tag_request(method: str, request_id: Any) -> None:
    # Every log line after this carries the JSON-RPC method and id (never params or answers).
    logger.append_keys(rpc_method=method, rpc_id=request_id)
    tracer.put_annotation("rpc_method", method)


settings = Settings.from_env()
tasks, change_feed = task_parts_from(settings)
transport = build_transport(settings, tasks=tasks, feed=change_feed, on_request=_tag_request)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    try:
        response = transport.handle(request_from_event(event))
    except McpError as exc:  # an event API Gateway should never send (undecodable body)
        response = transport.refuse(exc)
    metrics.add_metric(name=f"Status{response.status // 100}xx", unit=MetricUnit.Count, value=1)
    logger.info("answered", extra={"http_status": response.status})
    return response_to_api(response, context)
