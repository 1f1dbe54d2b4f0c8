"""Lambda entry point for stranded tasks, run on a schedule (template.yaml, `SweepSchedule`).

A task whose start failed, and whose compensating write failed too, has no execution and no
leg: nothing would end it before its TTL. Each such task's run is asked whether anything
runs it (`tasks.runs`): a declared workflow's own execution, for one, whether it ever
started. Each sweep fails such tasks (`tasks.sweep`) and reports how many in metrics; a sweep
that could not settle one raises, so the function's error alarm sees it, and the next
scheduled run tries again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from mcp_tasks_aws.app import App, handler_from_env
from mcp_tasks_aws.tasks.sweep import sweep_stranded

logger = Logger()
metrics = Metrics()
LambdaHandler = Callable[[dict[str, Any], Any], dict[str, int]]


def make_handler(app: App) -> LambdaHandler:
    store, runner, workflows, adapters = app.store, app.runner, app.workflows, app.run_adapters
    stranded_after_ms = app.settings.stranded_after_s * 1000

    @logger.inject_lambda_context(clear_state=True)
    @metrics.log_metrics
    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, int]:
        swept = sweep_stranded(
            store,
            runner,
            workflows=workflows,
            adapters=adapters,
            stranded_after_ms=stranded_after_ms,
        )
        metrics.add_metric(name="SweptStranded", unit=MetricUnit.Count, value=len(swept.failed))
        logger.info("swept", extra={"candidates": swept.candidates, "failed": swept.failed})
        return {"candidates": swept.candidates, "failed": len(swept.failed)}

    return handler


# The Lambda runtime reads `handler` right after importing this module, during init: that is
# when the deployed handler is built from the environment. Importing the module (as the
# embedded stack does, to call make_handler with its own App) builds nothing.
__getattr__ = handler_from_env(make_handler, globals())
