"""Lambda entry point of the durable function: one durable execution per durable tool's task.

The event is the execution's input, `{"taskId": ...}` (the task item holds everything else),
wrapped by Lambda in the durable invocation envelope the SDK unwraps (`aws.durable_sdk`). Each
invocation runs the tool from the top, its earlier steps, callbacks and waits replayed from
their checkpoints (`tasks.durable`). The function needs the python3.13 runtime or newer (the
durable SDK comes with it) and `DurableConfig` in the template.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp_tasks_aws.runtime import init_phase

# A cold start: no collections while these imports build what lives as long as the
# environment (`runtime.init_phase`; the handler itself is built the same way).
with init_phase():
    from aws_lambda_powertools import Logger

    from mcp_tasks_aws.app import App, handler_from_env
    from mcp_tasks_aws.aws.durable_sdk import durable_handler

logger = Logger()
LambdaHandler = Callable[[Any, Any], Any]


def make_handler(app: App, boto3_client: Any = None) -> LambdaHandler:
    """The handler for `app`; `boto3_client` is the Lambda client the SDK checkpoints with
    (None: the SDK's own; the embedded stack's runner hands its own in the event)."""
    handler = durable_handler(app.durable_body(), boto3_client=boto3_client)

    def logged(event: Any, context: Any) -> Any:
        result = handler(event, context)
        logger.info("durable invocation ended", extra={"status": result.get("Status")})
        return result

    return logged


# The Lambda runtime reads `handler` right after importing this module, during init: that is
# when the deployed handler is built from the environment. Importing the module (as the
# embedded stack does, to call make_handler with its own App) builds nothing.
__getattr__ = handler_from_env(make_handler, globals())
