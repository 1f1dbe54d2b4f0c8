"""The Step Functions runner: one Standard execution per task, named after the task.

The execution name is the task id, so a retried start cannot run the tool twice (a second
start answers ExecutionAlreadyExists, which is success here). Legs talk to the execution only
through task tokens: `resume` after answers, `end_leg` when the task is over, `interrupt` on
cancel while waiting for input, `is_waiting` (a heartbeat) when two copies of a leg raced;
the sweeper asks whether a task's execution `is_running`. A token that is no longer valid
(someone else used it, or the execution ended) is reported as False, never raised.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from mcp_tasks_aws.aws.errors import client_error_code, transient_as_busy

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions.client import SFNClient

STALE_TOKEN = {"TaskTimedOut", "TaskDoesNotExist", "InvalidToken", "ExecutionDoesNotExist"}
DEAD_TOKEN = {"TaskTimedOut", "TaskDoesNotExist"}
"""What a heartbeat answers for a wait that is over (an emulator may answer InvalidToken for
a live token of a state without HeartbeatSeconds: that one is not taken as an answer)."""


def _code(exc: Exception) -> str | None:
    return client_error_code(exc)


def _stale(exc: Exception) -> bool:
    """Whether `exc` says the token was stale before this call. A stale answer to a copy the
    SDK resent is not proof: the first copy may have landed and spent the token itself (its
    answer lost), and Step Functions refuses the resent one as it refuses a dead token. That
    one counts as delivered (the caller made what it sent durable first)."""
    if _code(exc) not in STALE_TOKEN:
        return False
    response = getattr(exc, "response", None) or {}
    return not response.get("ResponseMetadata", {}).get("RetryAttempts")


def send_task_success(client: Any, task_token: str, output: Any) -> bool:
    """SendTaskSuccess with `output` as JSON; False when the token is stale (the waiting
    state timed out or its execution ended: `_stale`). Throttling and 5xx raise
    `Throttled`."""
    try:
        with transient_as_busy():
            client.send_task_success(taskToken=task_token, output=json.dumps(output))
    except Exception as exc:
        if _stale(exc):
            return False
        if _code(exc) in STALE_TOKEN:
            return True
        raise
    return True


def send_task_failure(client: Any, task_token: str, error: str, cause: str) -> bool:
    """SendTaskFailure; False when the token is stale, as `send_task_success`."""
    try:
        with transient_as_busy():
            client.send_task_failure(taskToken=task_token, error=error, cause=cause)
    except Exception as exc:
        if _stale(exc):
            return False
        if _code(exc) in STALE_TOKEN:
            return True
        raise
    return True


class StepFunctionsRunner:
    def __init__(self, client: SFNClient, state_machine_arn: str) -> None:
        self.client = client
        self.state_machine_arn = state_machine_arn

    def execution_arn(self, task_id: str) -> str:
        base = self.state_machine_arn.replace(":stateMachine:", ":execution:", 1)
        return f"{base}:{task_id}"

    def start(self, task_id: str, wait_seconds: int) -> None:
        payload = {"taskId": task_id, "leg": {"outcome": "start", "timeoutSeconds": wait_seconds}}
        try:
            with transient_as_busy():
                self.client.start_execution(
                    stateMachineArn=self.state_machine_arn, name=task_id, input=json.dumps(payload)
                )
        except Exception as exc:
            if _code(exc) != "ExecutionAlreadyExists":
                raise

    def _send_success(self, task_token: str, output: dict[str, Any]) -> bool:
        return send_task_success(self.client, task_token, output)

    def resume(self, task_token: str, wait_seconds: int) -> bool:
        return self._send_success(task_token, {"outcome": "resume", "timeoutSeconds": wait_seconds})

    def end_leg(self, task_token: str) -> bool:
        return self._send_success(task_token, {"outcome": "done", "timeoutSeconds": 1})

    def interrupt(self, task_token: str) -> bool:
        return send_task_failure(
            self.client, task_token, "TaskCancelled", "Cancelled by the client"
        )

    def is_waiting(self, task_token: str) -> bool:
        try:
            with transient_as_busy():
                self.client.send_task_heartbeat(taskToken=task_token)
        except Exception as exc:
            if _code(exc) in DEAD_TOKEN:
                return False
            if _code(exc) == "InvalidToken":
                return True
            raise
        return True

    def is_running(self, task_id: str) -> bool:
        try:
            with transient_as_busy():
                described = self.client.describe_execution(executionArn=self.execution_arn(task_id))
        except Exception as exc:
            if _code(exc) == "ExecutionDoesNotExist":
                return False
            raise
        return described["status"] == "RUNNING"

    def stop(self, task_id: str) -> None:
        try:
            with transient_as_busy():
                self.client.stop_execution(
                    executionArn=self.execution_arn(task_id),
                    error="TaskCancelled",
                    cause="Cancelled by the client",
                )
        except Exception as exc:
            if _code(exc) not in ("ExecutionDoesNotExist", "ExecutionNotRunning"):
                raise
