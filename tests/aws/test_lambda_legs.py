"""The Lambda adapter for direct legs, on moto (the embedded stack's in-process Lambda): one
asynchronous invoke carrying the task id, a refusal for a function that does not exist, and
throttling told apart from other faults."""

from __future__ import annotations

import threading
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from mcp_tasks_aws.aws.lambda_legs import LambdaDirectLegs
from mcp_tasks_aws.local.aws import REGION, LocalAws
from mcp_tasks_aws.local.lambdas import LAMBDAS
from mcp_tasks_aws.tasks.ports import Throttled


@pytest.fixture
def worker(local_aws: LocalAws) -> Any:
    client = boto3.client("lambda", region_name=REGION)
    return LambdaDirectLegs(client, local_aws.function_name("WorkerFunction"))


def test_start_queues_one_event_with_the_task_id_and_returns_at_once(
    local_aws: LocalAws, worker: LambdaDirectLegs
) -> None:
    release, seen = threading.Event(), []

    def handler(event: dict[str, Any], context: Any) -> None:
        release.wait(5)
        seen.append(event)

    local_aws.register("WorkerFunction", handler)
    worker.start("a" * 32)
    assert seen == []  # the invoke did not wait for the leg
    release.set()
    assert LAMBDAS.drain(timeout_s=5)
    assert seen == [{"taskId": "a" * 32}]


def test_a_function_that_does_not_exist_is_refused(local_aws: LocalAws) -> None:
    client = boto3.client("lambda", region_name=REGION)
    missing = LambdaDirectLegs(client, local_aws.function_name("NoSuchFunction"))
    with pytest.raises(ClientError) as refused:
        missing.start("b" * 32)
    assert refused.value.response["Error"]["Code"] == "ResourceNotFoundException"


def test_throttling_that_outlasts_the_retries_is_told_apart(worker: LambdaDirectLegs) -> None:
    def throttled(**_: Any) -> None:
        raise ClientError(
            {"Error": {"Code": "TooManyRequestsException", "Message": "Rate exceeded"}}, "Invoke"
        )

    events = worker.client.meta.events
    events.register("before-call.lambda.Invoke", throttled, unique_id="throttle-test")
    try:
        with pytest.raises(Throttled):
            worker.start("c" * 32)
    finally:
        events.unregister("before-call.lambda.Invoke", unique_id="throttle-test")
