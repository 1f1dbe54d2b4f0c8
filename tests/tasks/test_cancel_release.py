"""Once the durable cancel marker is written, the cancel has taken effect: releasing the
execution is best effort, retried by a retried cancel, and never turns the ack into an error."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_tasks_aws.aws.dynamodb import DynamoTaskStore
from mcp_tasks_aws.protocol import models as m
from mcp_tasks_aws.protocol.jsonrpc import Request
from mcp_tasks_aws.server import Call
from mcp_tasks_aws.tasks.service import TaskService
from tasks.conftest import ANONYMOUS, CAPABILITIES, make_record

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": CAPABILITIES,
}


class FlakyRunner:
    """A runner whose stop and interrupt fail the first `failures` times (as moto's stop did
    when an execution had not started running yet)."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.stopped: list[str] = []
        self.interrupted: list[str] = []

    def _maybe_fail(self) -> None:
        if self.failures > 0:
            self.failures -= 1
            raise RuntimeError("the execution could not be stopped")

    def stop(self, task_id: str) -> None:
        self._maybe_fail()
        self.stopped.append(task_id)

    def interrupt(self, task_token: str) -> bool:
        self._maybe_fail()
        self.interrupted.append(task_token)
        return True

    def start(self, task_id: str, wait_seconds: int) -> None:
        raise AssertionError("not started here")

    def resume(self, task_token: str, wait_seconds: int) -> bool:
        raise AssertionError("not resumed here")

    def end_leg(self, task_token: str) -> bool:
        raise AssertionError("no legs here")


def _cancel(service: TaskService, task_id: str) -> dict[str, Any]:
    call = Call(
        request=Request(1, "tasks/cancel", {}),
        principal=ANONYMOUS,
        meta=m.RequestMeta.model_validate(META),
    )
    return service.cancel(call, m.TaskParams.model_validate({"_meta": META, "taskId": task_id}))


@pytest.mark.parametrize(
    ("overrides", "released"),
    [
        ({"status": "working"}, "stopped"),
        (
            {
                "status": "input_required",
                "input_requests": {"k": {"method": "elicitation/create", "params": {}}},
                "task_token": "token-1",
            },
            "interrupted",
        ),
    ],
)
def test_cancel_acks_when_releasing_fails_and_a_retry_releases(
    store: DynamoTaskStore, overrides: dict[str, Any], released: str
) -> None:
    # Given an active task, and a runner that fails to release its execution once
    record = make_record(**overrides)
    store.put_new(record)
    runner = FlakyRunner(failures=1)
    service = TaskService(store, runner)
    # When the client cancels, Then it is acknowledged and the task is cancelled for good
    assert _cancel(service, record.task_id) == {"resultType": "complete"}
    after = store.get(record.task_id)
    assert after is not None
    assert after.status == "cancelled"
    assert getattr(runner, released) == []
    # And a retried cancel acks again and, this time, releases the execution
    assert _cancel(service, record.task_id) == {"resultType": "complete"}
    assert getattr(runner, released) == [record.task_token or record.task_id]
