"""Lambda entry point for the MCP endpoint (API Gateway HTTP API, payload format 2.0).

Parse the event, hand it to the transport, return its response. `make_handler` builds the
handler from an `App` (the embedded stack calls it with its own); deployed, `handler` is built
from the environment once per execution environment, when the runtime first reads it at init.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp_tasks_aws.runtime import init_phase, on_snapshot

# A cold start: no collections while these imports build what lives as long as the
# environment (`runtime.init_phase`; the handler itself is built the same way).
with init_phase():
    from aws_lambda_powertools import Logger, Metrics
    from aws_lambda_powertools.metrics import MetricUnit
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from mcp_tasks_aws.app import App, handler_from_env
    from mcp_tasks_aws.edge.apigw import response_to_api
    from mcp_tasks_aws.edge.observability import OptionalTracer
    from mcp_tasks_aws.protocol.errors import McpError

logger = Logger()
tracer = OptionalTracer()
metrics = Metrics()
LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]


def _tag_request(method: str, request_id: Any) -> None:
    # Every log line after this carries the JSON-RPC method and id (never params or answers).
    logger.append_keys(rpc_method=method, rpc_id=request_id)
    tracer.put_annotation("rpc_method", method)


def make_handler(app: App) -> LambdaHandler:
    transport = app.transport(on_request=_tag_request)
    edge = app.edge(transport)  # AuthMode: caller, challenge, scopes
    # SnapStart (where Lambda offers it): primed before the snapshot, refreshed after restores.
    on_snapshot(lambda: app.prime(transport), lambda: app.after_restore(edge))

    @logger.inject_lambda_context(clear_state=True)
    @tracer.capture_lambda_handler
    @metrics.log_metrics
    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        try:
            response = edge.handle(event, context)
        except McpError as exc:  # an event API Gateway should never send (undecodable body)
            response = transport.refuse(exc)
        except Exception:  # last resort: a JSON-RPC error and a log line, never a crash
            logger.exception("unhandled error")
            response = transport.internal_error()
        metrics.add_metric(name=f"Status{response.status // 100}xx", unit=MetricUnit.Count, value=1)
        logger.info("answered", extra={"http_status": response.status})
        return response_to_api(response, context)

    return handler


# The Lambda runtime reads `handler` right after importing this module, during init: that is
# when the deployed handler is built from the environment. Importing the module (as the
# embedded stack does, to call make_handler with its own App) builds nothing.
__getattr__ = handler_from_env(make_handler, globals())
