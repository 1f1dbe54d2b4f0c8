"""Lambda entry point for one leg of a task.

Events (ids only; the task item holds everything else):
- `{"taskId": ..., "taskToken": ...}` from the task state machine: a leg of its execution,
  which reports through the task token (the return value is not read);
- `{"taskId": ...}` from the API function's asynchronous invoke: the task's first leg, run
  directly (a failure reaches the reconciler through the on-failure destination).
"""

from __future__ import annotations

import time
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
    from mcp_tasks_aws.edge.observability import OptionalTracer
    from mcp_tasks_aws.tools.deadline import call_deadline

logger = Logger()
tracer = OptionalTracer()
metrics = Metrics()
LambdaHandler = Callable[[dict[str, Any], Any], dict[str, str]]
LEG_MARGIN_S = 2.0
"""Time kept before the function's timeout to record how the leg ended: a call that must not
be resent (a declared target's invoke) may wait for its answer until then, no longer."""


def make_handler(app: App) -> LambdaHandler:
    legs = app.leg_runner()
    # SnapStart (where Lambda offers it): primed before the snapshot, refreshed after restores.
    on_snapshot(app.prime, app.after_restore)

    @logger.inject_lambda_context(clear_state=True)
    @tracer.capture_lambda_handler
    @metrics.log_metrics
    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, str]:
        task_id = str(event["taskId"])
        logger.append_keys(task_id=task_id)  # never the task token: it is a bearer capability
        token = event.get("taskToken")
        ends = time.monotonic() + context.get_remaining_time_in_millis() / 1000 - LEG_MARGIN_S
        with call_deadline(ends):
            outcome = legs.run(task_id, str(token)) if token else legs.run_direct(task_id)
        metric = "Leg" + outcome.title().replace("_", "")  # LegDone, LegParked, LegHandedOver
        metrics.add_metric(name=metric, unit=MetricUnit.Count, value=1)
        logger.info("leg ended", extra={"outcome": outcome})
        return {"outcome": outcome}

    return handler


# The Lambda runtime reads `handler` right after importing this module, during init: that is
# when the deployed handler is built from the environment. Importing the module (as the
# embedded stack does, to call make_handler with its own App) builds nothing.
__getattr__ = handler_from_env(make_handler, globals())
