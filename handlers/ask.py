"""Lambda entry point for a workflow's questions and reports to its MCP task (the AskFunction).

A declared Standard state machine calls it from a state (see docs/managed.md for the ASL):

- `{"action": "ask", "taskId", "executionArn", "capability", "taskToken", "request":
  {"method", "params"}}` with `lambda:invoke.waitForTaskToken`: the task parks
  `input_required` with the question, holding the token; `tasks/update` (or a 2025-11-25
  client's answer) resumes the state with the answer as its output, or fails it with
  `McpDeclined` / `McpCancelled`.
- `{"action": "report", "taskId", "executionArn", "capability", "message", "progress"?,
  "total"?}` with `lambda:invoke`: the task's statusMessage (and progress).

`taskId` is the execution's name (`$$.Execution.Name`), `executionArn` its id
(`$$.Execution.Id`) and `capability` what the task's start put in its input
(`$$.Execution.Input.mcpTaskCapability`): only the task's own execution is served, whoever
else may invoke this function. A request that cannot be served raises an error named for
the state's Catch (`McpTaskEnded`, `McpAskPending`, `McpUnsupported`, `McpUnknownTask`,
`McpInvalidRequest`); the token and the capability are never logged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from mcp_tasks_aws.app import App, handler_from_env
from mcp_tasks_aws.tasks.workflow import AskRefused

logger = Logger()
metrics = Metrics()
LambdaHandler = Callable[[dict[str, Any], Any], dict[str, str]]


def refusal(error: str, message: str) -> Exception:
    """An exception whose class name is `error`: the name Step Functions reports for it."""
    kind: type[Exception] = type(error, (Exception,), {})
    return kind(message)


def make_handler(app: App) -> LambdaHandler:
    doors = app.workflow_doors()

    @logger.inject_lambda_context(clear_state=True)
    @metrics.log_metrics
    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, str]:
        action = event.get("action", "ask")
        task_id = str(event.get("taskId", ""))
        execution_arn = str(event.get("executionArn", ""))
        capability = event.get("capability")
        logger.append_keys(task_id=task_id, ask_action=action)
        try:
            if action == "ask":
                token = event.get("taskToken")
                if not isinstance(token, str) or not token:
                    raise AskRefused("McpInvalidRequest", "ask needs taskToken ($$.Task.Token)")
                request = event.get("request")
                asked = request if isinstance(request, dict) else {}
                key = doors.ask(task_id, execution_arn, token, asked, capability)
                outcome = {"outcome": "asked", "key": key}
            elif action == "report":
                try:
                    changed = doors.report(
                        task_id,
                        execution_arn,
                        str(event.get("message", "")),
                        event.get("progress"),
                        event.get("total"),
                        capability,
                    )
                except ValueError as exc:
                    raise AskRefused("McpInvalidRequest", str(exc)) from exc
                outcome = {"outcome": "reported" if changed else "dropped"}
            else:
                raise AskRefused("McpInvalidRequest", f"unknown action {str(action)[:40]!r}")
        except AskRefused as exc:
            metrics.add_metric(name="AskRefused", unit=MetricUnit.Count, value=1)
            logger.info("refused", extra={"error": exc.error})
            raise refusal(exc.error, str(exc)) from None
        metrics.add_metric(
            name=f"Ask{outcome['outcome'].capitalize()}", unit=MetricUnit.Count, value=1
        )
        logger.info("served", extra={"outcome": outcome["outcome"]})
        return outcome

    return handler


# The Lambda runtime reads `handler` right after importing this module, during init: that is
# when the deployed handler is built from the environment. Importing the module (as the
# embedded stack does, to call make_handler with its own App) builds nothing.
__getattr__ = handler_from_env(make_handler, globals())
