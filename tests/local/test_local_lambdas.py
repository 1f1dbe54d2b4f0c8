"""The embedded stack's Lambda: asynchronous invokes as Lambda runs them (in-process, no moto).

An event returns at once and runs in a thread; a failure (an exception, or running past the
function's timeout) is retried as configured and then sent to the on-failure destination
with the record Lambda would send.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_tasks_aws.edge.lost_legs import LostDirectLeg, lost_direct_leg
from mcp_tasks_aws.local.lambdas import AsyncSettings, InProcessLambdas

ARN = "arn:aws:lambda:us-east-1:123456789012:function:"


@pytest.fixture
def lambdas() -> Iterator[InProcessLambdas]:
    registry = InProcessLambdas()
    yield registry
    assert registry.drain(timeout_s=5)


def with_destination(registry: InProcessLambdas, **settings: Any) -> list[dict[str, Any]]:
    """Register `worker` (settings as given) and its destination `settle`; return what the
    destination receives."""
    received: list[dict[str, Any]] = []
    registry.handlers["settle"] = lambda event, context: received.append(event)
    registry.settings["worker"] = AsyncSettings(
        arn=f"{ARN}worker", on_failure=f"{ARN}settle", **settings
    )
    return received


def wait_for(items: list[Any], count: int = 1) -> None:
    deadline = time.monotonic() + 5
    while len(items) < count and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(items) >= count


def test_an_event_returns_at_once_and_runs_in_its_own_thread(lambdas: InProcessLambdas) -> None:
    release, seen = threading.Event(), []

    def worker(event: dict[str, Any], context: Any) -> None:
        release.wait(5)
        seen.append((event, threading.current_thread() is not caller))

    caller = threading.current_thread()
    lambdas.handlers["worker"] = worker
    lambdas.invoke_event(f"{ARN}worker", json.dumps({"taskId": "t1"}).encode())
    assert seen == []  # queued, not run in the caller's thread
    release.set()
    wait_for(seen)
    assert seen == [({"taskId": "t1"}, True)]


def test_a_crash_is_not_retried_and_reaches_the_destination(lambdas: InProcessLambdas) -> None:
    runs: list[int] = []
    received = with_destination(lambdas, maximum_retry_attempts=0)

    def worker(event: dict[str, Any], context: Any) -> None:
        runs.append(1)
        raise RuntimeError("worker died")

    lambdas.handlers["worker"] = worker
    lambdas.invoke_event("worker", b'{"taskId": "t2"}')
    wait_for(received)
    (record,) = received
    assert runs == [1]
    assert record["requestPayload"] == {"taskId": "t2"}
    assert record["requestContext"]["condition"] == "RetriesExhausted"
    assert record["requestContext"]["approximateInvokeCount"] == 1
    assert record["requestContext"]["functionArn"] == f"{ARN}worker:$LATEST"
    assert record["responseContext"]["functionError"] == "Unhandled"
    assert record["responsePayload"] == {"errorType": "RuntimeError", "errorMessage": "worker died"}
    assert lost_direct_leg(record) == LostDirectLeg("t2", "crash")


def test_retries_are_honoured_before_the_destination(lambdas: InProcessLambdas) -> None:
    runs: list[int] = []
    received = with_destination(lambdas, maximum_retry_attempts=2)

    def worker(event: dict[str, Any], context: Any) -> None:
        runs.append(1)
        raise ValueError("again")

    lambdas.handlers["worker"] = worker
    lambdas.invoke_event("worker", b'{"taskId": "t3"}')
    wait_for(received)
    assert len(runs) == 3
    assert received[0]["requestContext"]["approximateInvokeCount"] == 3


def test_running_past_the_timeout_fails_the_invoke_as_timed_out(lambdas: InProcessLambdas) -> None:
    received = with_destination(lambdas, maximum_retry_attempts=0, timeout_s=0.2)
    lambdas.handlers["worker"] = lambda event, context: time.sleep(0.6)
    lambdas.invoke_event("worker", b'{"taskId": "t4"}')
    wait_for(received)
    assert received[0]["responsePayload"] == {
        "errorType": "Sandbox.Timedout",
        "errorMessage": "Task timed out after 0.20 seconds",
    }
    assert lost_direct_leg(received[0]) == LostDirectLeg("t4", "timeout")


def test_a_successful_event_sends_nothing(lambdas: InProcessLambdas) -> None:
    received = with_destination(lambdas, maximum_retry_attempts=0)
    done: list[int] = []
    lambdas.handlers["worker"] = lambda event, context: done.append(1)
    lambdas.invoke_event("worker", b'{"taskId": "t5"}')
    wait_for(done)
    assert lambdas.drain(timeout_s=5)
    assert received == []


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        # an EventBridge execution event, or anything else: not a destination record
        ({"source": "aws.states", "detail": {"name": "t", "status": "FAILED"}}, None),
        ({"requestContext": {}, "requestPayload": {}}, None),  # no task id
        ({"requestContext": {}, "requestPayload": {"taskId": 7}}, None),
        (
            {
                "requestContext": {"condition": "EventAgeExceeded"},
                "requestPayload": {"taskId": "t"},
            },
            LostDirectLeg("t", "expired"),
        ),
        (
            {
                "requestContext": {"condition": "RetriesExhausted"},
                "requestPayload": {"taskId": "t"},
                "responsePayload": {"errorMessage": "2025-01-01T00:00:00Z x Task timed out after"},
            },
            LostDirectLeg("t", "timeout"),
        ),
        (
            {"requestContext": {}, "requestPayload": {"taskId": "t"}, "responsePayload": None},
            LostDirectLeg("t", "crash"),
        ),
    ],
)
def test_lost_direct_leg_reads_only_the_task_and_the_reason(
    event: dict[str, Any], expected: LostDirectLeg | None
) -> None:
    assert lost_direct_leg(event) == expected
