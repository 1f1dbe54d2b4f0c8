"""Direct legs on Lambda: the worker function invoked asynchronously, one event per task.

`InvocationType=Event` queues the event with Lambda and returns at once (HTTP 202), so the
API answers `CreateTaskResult` without waiting for the tool. The event carries the task id
only; the task item holds everything else. What the queue may do with it is set on the worker
function (template.yaml, `EventInvokeConfig`): no retries (a tool must not run twice), and a
failed or expired event goes to the reconciler, which fails a task its direct leg still holds.
Lambda may still deliver an event twice; the leg's `claim` makes the second one a no-op.
A throttled invoke (after the SDK's retries) raises `ports.Throttled`, as the other adapters do.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from mcp_tasks_aws.aws.errors import transient_as_busy

if TYPE_CHECKING:
    from mypy_boto3_lambda.client import LambdaClient


class LambdaDirectLegs:
    def __init__(self, client: LambdaClient, function_name: str) -> None:
        self.client = client
        self.function_name = function_name

    def start(self, task_id: str) -> None:
        with transient_as_busy():
            self.client.invoke(
                FunctionName=self.function_name,
                InvocationType="Event",
                Payload=json.dumps({"taskId": task_id}).encode(),
            )
