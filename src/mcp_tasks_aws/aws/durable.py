"""Durable executions on Lambda: the durable function's executions, one per task, by name.

The port is `tasks.ports.DurableExecutions`; the run using it is `tasks.runs.durable`. Every
call here is one the API or the reconciler makes about a task's execution (the execution's own
checkpoints are the durable SDK's, in the durable function: `aws.durable_sdk`):

- start: `Invoke` with `InvocationType=Event` and `DurableExecutionName` (the task id): a second
  copy with the same payload answers the same execution, one Lambda refuses with
  `DurableExecutionAlreadyStartedException` is started already;
- answer: `SendDurableExecutionCallbackSuccess` with the answers; a callback no longer waiting
  answers `ResourceNotFoundException`, `CallbackTimeoutException` or
  `InvalidParameterValueException` (or a bare 404): False, except on a copy the SDK resent,
  whose first copy may have completed it (delivered, as for Step Functions tokens);
- stop and status: the execution is found by name (`ListDurableExecutionsByFunction` on the
  function's bare name, one read), and a running one stopped (`StopDurableExecution`;
  stopping one that ended changes nothing).

The durable SDK is never imported here: the API function holds this adapter.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from mcp_tasks_aws.aws.errors import client_error_code, transient_as_busy

if TYPE_CHECKING:
    from mypy_boto3_lambda.client import LambdaClient

GONE_CALLBACK: Final = frozenset(
    {"ResourceNotFoundException", "CallbackTimeoutException", "InvalidParameterValueException"}
)
STARTED: Final = "DurableExecutionAlreadyStartedException"
STOP_ERROR_TYPE: Final = "TaskCancelled"
STOP_ERROR_MESSAGE: Final = "Cancelled by the client"


def unqualified(name: str) -> str:
    """The function's bare name, from `name` (a name or ARN, perhaps qualified by an alias or
    version): executions are listed by function, in this account and region (a durable
    execution's ARN names the version the alias pointed to, so the alias would not find them;
    a bare name is what every implementation of the API matches)."""
    if name.startswith("arn:"):
        return name.split(":")[6]
    return name.partition(":")[0]


class LambdaDurableExecutions:
    """The durable function's executions (`function_name`: qualified, an alias or version:
    a durable function is invoked qualified)."""

    def __init__(self, client: LambdaClient, function_name: str) -> None:
        self.client = client
        self.function_name = function_name

    def start(self, name: str, payload: dict[str, Any]) -> None:
        try:
            with transient_as_busy():
                self.client.invoke(
                    FunctionName=self.function_name,
                    InvocationType="Event",
                    DurableExecutionName=name,
                    Payload=json.dumps(payload).encode(),
                )
        except Exception as exc:
            if client_error_code(exc) != STARTED:
                raise

    def answer(self, callback_id: str, result: str) -> bool:
        try:
            with transient_as_busy():
                self.client.send_durable_execution_callback_success(
                    CallbackId=callback_id, Result=result.encode()
                )
        except Exception as exc:
            response = getattr(exc, "response", None) or {}
            metadata = response.get("ResponseMetadata", {})
            # A callback the service does not know is a 404, whatever code names it (AWS's
            # local service answers one without a code).
            if (
                client_error_code(exc) not in GONE_CALLBACK
                and metadata.get("HTTPStatusCode") != 404
            ):
                raise
            return bool(metadata.get("RetryAttempts"))
        return True

    def _find(self, name: str) -> dict[str, Any] | None:
        with transient_as_busy():
            listed = self.client.list_durable_executions_by_function(
                FunctionName=unqualified(self.function_name), DurableExecutionName=name
            )
        found: list[Any] = listed.get("DurableExecutions") or []
        return dict(found[0]) if found else None

    def status(self, name: str) -> str | None:
        found = self._find(name)
        return str(found["Status"]) if found is not None else None

    def stop(self, name: str) -> None:
        found = self._find(name)
        if found is None or found.get("Status") != "RUNNING":
            return
        try:
            with transient_as_busy():
                self.client.stop_durable_execution(
                    DurableExecutionArn=str(found["DurableExecutionArn"]),
                    Error={"ErrorType": STOP_ERROR_TYPE, "ErrorMessage": STOP_ERROR_MESSAGE},
                )
        except Exception as exc:
            if client_error_code(exc) != "ResourceNotFoundException":
                raise
