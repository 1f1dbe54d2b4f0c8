"""The durable function's side of a durable task: the durable execution SDK's operations as
the `tasks.durable.DurableOps` a durable tool's context is made of.

The only module importing `aws_durable_execution_sdk_python` (the `durable` extra): the durable
function (`handlers/durable.py`) and the embedded stack's stand-in (`local.durable`) import it;
the API, worker, reconcile and sweep functions never do.

- a step is `DurableContext.step`, run at most once per attempt and never retried: a tool's
  failing step fails the tool's call, as in any leg (what it raised becomes the tool's error
  result);
- a wait is `DurableContext.wait`;
- a callback is `DurableContext.create_callback`, timing out after the task's remaining TTL;
  its result is the JSON text `tasks/update` completed it with.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any, TypeVar

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import (
    CallbackConfig,
    Duration,
    StepConfig,
    StepSemantics,
)
from aws_durable_execution_sdk_python.exceptions import CallbackError
from aws_durable_execution_sdk_python.retries import RetryDecision

from mcp_tasks_aws.tasks.durable import CallbackFailed, DurableBody

T = TypeVar("T")


def _no_retry(error: Exception, attempt: int) -> RetryDecision:
    return RetryDecision.no_retry()


AT_MOST_ONCE = StepConfig(
    retry_strategy=_no_retry, step_semantics=StepSemantics.AT_MOST_ONCE_PER_RETRY
)
"""A tool's step (`step:` names): never retried, and an attempt cut short (a crash) is not run
again: a step is a side effect the tool asked to be done at most once."""
OWN = StepConfig(retry_strategy=_no_retry)
"""The context's own steps (which keys a round asks, a sleep's note): safe to run again."""


class SdkDurableOps:
    """`tasks.durable.DurableOps` over one invocation's `DurableContext`."""

    def __init__(self, context: DurableContext) -> None:
        self.context = context

    def step(self, name: str, fn: Callable[[], T]) -> T:
        config = AT_MOST_ONCE if name.startswith("step:") else OWN
        result: T = self.context.step(lambda _step: fn(), name=name, config=config)
        return result

    def wait(self, name: str, seconds: int) -> None:
        self.context.wait(Duration.from_seconds(seconds), name=name)

    def callback(self, name: str, timeout_s: int) -> tuple[str, Callable[[], Any]]:
        config = CallbackConfig(timeout=Duration.from_seconds(max(1, timeout_s)))
        callback = self.context.create_callback(name=name, config=config)

        def result() -> Any:
            try:
                return callback.result()
            except CallbackError as exc:
                raise CallbackFailed(type(exc).__name__) from exc

        return callback.callback_id, result


Handler = Callable[[Any, Any], MutableMapping[str, Any]]


def durable_handler(body: DurableBody, boto3_client: Any = None) -> Handler:
    """The durable function's handler: each invocation of a task's execution runs its tool
    (`DurableBody.run`) with the SDK's operations. `boto3_client`: the Lambda client the SDK
    checkpoints with (None: its own, from the environment)."""

    def run(event: Any, context: DurableContext) -> dict[str, str]:
        task_id = str(event["taskId"])
        return {"taskId": task_id, "outcome": body.run(task_id, SdkDurableOps(context))}

    handler: Handler = durable_execution(run, boto3_client=boto3_client)
    return handler
