"""The AWS side of managed targets: the calls declared tools and workflow tasks make.

- `AwsTargets` fills `targets.ports.TargetCalls`: Lambda `Invoke` (RequestResponse), Step
  Functions `StartSyncExecution` (Express machines), Secrets Manager `GetSecretValue` (API keys
  and bearer tokens, cached a few minutes), SigV4 signing with botocore's `SigV4Auth` and the
  function's own credentials, and HTTP through `targets.http` (the standard library).
- `StepFunctionsWorkflows` fills `tasks.ports.Workflows`: a declared Standard machine's
  execution named after the task (`StartExecution`, idempotent), `StopExecution` on cancel,
  `SendTaskSuccess` / `SendTaskFailure` for a state waiting on a question, `SendTaskHeartbeat`
  to learn whether it still waits, `DescribeExecution` for an output the status event left
  out and to learn whether a start whose answer was lost landed.

A call the resource refuses (missing, throttled, denied, invalid) raises
`TargetUnavailable(target, code)`: the target named, the AWS error code, nothing of the
caller's data. A workflow's calls meet throttling and 5xx as `Throttled` (try again), as
`tasks.ports.Workflows` says. The IAM these need is derived from the declaration (`targets.iam`).
"""

from __future__ import annotations

import json
import threading
import time
from typing import TYPE_CHECKING, Any, Final

from mcp_tasks_aws.aws.clients import Clients
from mcp_tasks_aws.aws.errors import client_error_code, transient_as_busy
from mcp_tasks_aws.aws.stepfunctions import send_task_failure, send_task_success
from mcp_tasks_aws.targets.ports import HttpAnswer, HttpRequest, Invoked, SyncRun
from mcp_tasks_aws.tasks.exceptions import TargetUnavailable
from mcp_tasks_aws.tasks.workflow import execution_arn_for

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions.client import SFNClient

SECRET_CACHE_S: Final = 300
NOT_ANSWERED_IN_TIME: Final = "it did not answer in time; it was called once, not again"
_NOT_RUNNING: Final = {"ExecutionDoesNotExist", "ExecutionNotRunning"}
_DEAD_TOKEN: Final = {"TaskTimedOut", "TaskDoesNotExist"}


def unavailable(target: str, exc: BaseException) -> TargetUnavailable | None:
    """The TargetUnavailable of an AWS error (None: not an AWS error; re-raise it)."""
    code = client_error_code(exc)
    if code is None:
        name = type(exc).__name__
        if name == "ReadTimeoutError":
            # Sent once (`aws.call_policies.ONCE`), with all the time the caller had: it may
            # have run, and is not sent again.
            return TargetUnavailable(target, name, NOT_ANSWERED_IN_TIME)
        if name in ("EndpointConnectionError", "ConnectTimeoutError"):
            return TargetUnavailable(target, name)
        return None
    return TargetUnavailable(target, code)


class AwsTargets:
    """`TargetCalls` on AWS, with clients from `clients` (made on first use)."""

    def __init__(self, clients: Clients) -> None:
        self.clients = clients
        self._secrets: dict[str, tuple[float, str]] = {}
        self._lock = threading.Lock()

    def invoke(self, function: str, qualifier: str | None, payload: bytes) -> Invoked:
        client = self.clients.get("lambda")
        options: dict[str, Any] = {"Qualifier": qualifier} if qualifier else {}
        try:
            answer = client.invoke(
                FunctionName=function, InvocationType="RequestResponse", Payload=payload, **options
            )
        except Exception as exc:
            failure = unavailable(f"Lambda function {function}", exc)
            if failure is None:
                raise
            raise failure from exc
        return Invoked(answer["Payload"].read(), answer.get("FunctionError"))

    def run_express(self, machine_arn: str, payload: str) -> SyncRun:
        client = self.clients.get("stepfunctions")
        try:
            answer = client.start_sync_execution(stateMachineArn=machine_arn, input=payload)
        except Exception as exc:
            failure = unavailable(f"State machine {machine_arn}", exc)
            if failure is None:
                raise
            raise failure from exc
        return SyncRun(
            str(answer["status"]), answer.get("output"), answer.get("error"), answer.get("cause")
        )

    def secret(self, secret_arn: str) -> str:
        now = time.monotonic()
        with self._lock:
            cached = self._secrets.get(secret_arn)
        if cached is not None and now - cached[0] < SECRET_CACHE_S:
            return cached[1]
        client = self.clients.get("secretsmanager")
        try:
            answer = client.get_secret_value(SecretId=secret_arn)
        except Exception as exc:
            failure = unavailable(f"Secret {secret_arn}", exc)
            if failure is None:
                raise
            raise failure from exc
        if "SecretString" not in answer:  # a SecretBinary cannot be a header's key or token
            raise TargetUnavailable(f"Secret {secret_arn}", "Unusable", "it holds binary data")
        value = str(answer["SecretString"])
        with self._lock:
            self._secrets[secret_arn] = (now, value)
        return value

    def sign(self, request: HttpRequest, service: str, region: str) -> HttpRequest:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        credentials = self.clients.credentials()
        if credentials is None:
            raise TargetUnavailable(f"SigV4 for {service}", "NoCredentials")
        prepared = AWSRequest(
            method=request.method, url=request.url, data=request.body, headers=request.headers
        )
        SigV4Auth(credentials, service, region).add_auth(prepared)
        return request._replace(headers=dict(prepared.headers.items()))

    def fetch(self, request: HttpRequest) -> HttpAnswer:
        from mcp_tasks_aws.targets.http import send

        return send(request)


class StepFunctionsWorkflows:
    """`tasks.ports.Workflows` on Step Functions."""

    def __init__(self, client: SFNClient) -> None:
        self.client = client

    def start(self, machine_arn: str, name: str, payload: dict[str, Any]) -> str:
        try:
            # Throttling, a 5xx or a timeout (after the SDK's retries) is `Throttled`, as the
            # port says: busy, try again; only a refusal (missing, denied) fails the task.
            with transient_as_busy():
                answer = self.client.start_execution(
                    stateMachineArn=machine_arn, name=name, input=json.dumps(payload)
                )
        except Exception as exc:
            if client_error_code(exc) == "ExecutionAlreadyExists":
                # A retried start (the same task): the execution runs once, as named.
                return execution_arn_for(machine_arn, name)
            failure = unavailable(f"State machine {machine_arn}", exc)
            if failure is None:
                raise
            raise failure from exc
        return str(answer["executionArn"])

    def stop(self, execution_arn: str) -> None:
        try:
            self.client.stop_execution(
                executionArn=execution_arn, error="McpTaskCancelled", cause="Task cancelled"
            )
        except Exception as exc:
            if client_error_code(exc) not in _NOT_RUNNING:
                raise

    def answer(self, task_token: str, output: Any) -> bool:
        return send_task_success(self.client, task_token, output)

    def refuse(self, task_token: str, error: str, cause: str) -> bool:
        return send_task_failure(self.client, task_token, error, cause)

    def output(self, execution_arn: str) -> str | None:
        answer = self.client.describe_execution(executionArn=execution_arn)
        output = answer.get("output")
        return str(output) if output is not None else None

    def describe(self, execution_arn: str) -> str | None:
        # A read: safe to repeat. Throttling and 5xx are Throttled (the caller may look
        # again later); a missing execution is an answer, not a fault.
        try:
            with transient_as_busy():
                answer = self.client.describe_execution(executionArn=execution_arn)
        except Exception as exc:
            if client_error_code(exc) == "ExecutionDoesNotExist":
                return None
            raise
        return str(answer["status"])

    def still_waiting(self, task_token: str) -> bool:
        # A heartbeat changes nothing but a HeartbeatSeconds clock, and repeats safely. A
        # state that timed out (or ended) answers TaskTimedOut / TaskDoesNotExist; anything
        # else (InvalidToken included, what an emulator answers for a live token without
        # HeartbeatSeconds) keeps the question: only a dead token may be replaced.
        try:
            with transient_as_busy():
                self.client.send_task_heartbeat(taskToken=task_token)
        except Exception as exc:
            if client_error_code(exc) in _DEAD_TOKEN:
                return False
            raise
        return True
