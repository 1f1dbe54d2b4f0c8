"""Faults injected at each AWS call of each operation: nothing acknowledged is lost, no task
ends twice, and a retry of the failed request succeeds.

A fault is a ClientError raised from botocore's `before-call` hook on the function's own
client (the API's or the worker's), once, for one operation.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from mcp_tasks_aws.tasks import legs
from support.tasks import REGION, TaskClient, elicit_answer, on_path, wait_until


@contextlib.contextmanager
def fault(client: Any, service: str, operation: str, times: int = 1) -> Iterator[list[int]]:
    """Make the next `times` calls of `operation` on `client` fail as AWS would (HTTP 500)."""
    fired: list[int] = []
    lock = threading.Lock()

    def fail(**_: Any) -> None:
        with lock:
            if len(fired) >= times:
                return
            fired.append(1)
        raise ClientError(
            {"Error": {"Code": "InternalServerError", "Message": "injected fault"}}, operation
        )

    event = f"before-call.{service}.{operation}"
    client.meta.events.register(event, fail, unique_id=f"fault-{operation}")
    try:
        yield fired
    finally:
        client.meta.events.unregister(event, unique_id=f"fault-{operation}")


def api_clients(tasks: TaskClient) -> tuple[Any, Any]:
    app = tasks.stack.api_app
    return app.store.client, app.runner.client  # type: ignore[attr-defined]


def api_lambda_client(tasks: TaskClient) -> Any:
    return tasks.stack.api_app.direct_legs.client  # type: ignore[union-attr]


def worker_clients(tasks: TaskClient) -> tuple[Any, Any]:
    app = tasks.stack.worker_app
    return app.store.client, app.runner.client  # type: ignore[attr-defined]


def _error_of(tasks: TaskClient, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    message = tasks.rpc("tools/call", {"name": tool, "arguments": arguments})
    assert "error" in message, message
    error: dict[str, Any] = message["error"]
    return error


def _all_tasks_of(tasks: TaskClient, label: str) -> list[dict[str, Any]]:
    # A client of the test's own: the functions' clients know only the operations they call.
    table = tasks.stack.aws.table_name
    items = boto3.client("dynamodb", region_name=REGION).scan(TableName=table)["Items"]
    return [item for item in items if label in item.get("arguments", {}).get("S", "")]


def test_create_fails_cleanly_when_the_put_fails(tasks: TaskClient) -> None:
    dynamodb, _ = api_clients(tasks)
    with fault(dynamodb, "dynamodb", "PutItem") as fired:
        error = _error_of(tasks, "slow_compute", {"seconds": 0, "label": "fault-put"})
    assert fired == [1]
    # Nothing was acknowledged and nothing was stored; the library's text does not leak.
    assert error["code"] == -32603
    assert "injected" not in error["message"]
    assert _all_tasks_of(tasks, "fault-put") == []
    # A retry of the same call works.
    task_id = tasks.create("slow_compute", {"seconds": 0, "label": "fault-put"})
    assert tasks.wait_terminal(task_id)["status"] == "completed"


def test_create_ends_the_task_failed_when_the_start_fails(tasks: TaskClient, path: str) -> None:
    if path == "direct":
        client, service, operation = api_lambda_client(tasks), "lambda", "Invoke"
    else:
        client, service, operation = api_clients(tasks)[1], "sfn", "StartExecution"
    label = f"fault-start-{path}"
    with fault(client, service, operation) as fired:
        error = _error_of(tasks, "slow_compute", {"seconds": 0, "label": label})
    assert fired == [1]
    assert error["code"] == -32603
    # The record written before the start exists, and it is failed, not working forever.
    stored = _all_tasks_of(tasks, label)
    assert len(stored) == 1
    assert stored[0]["status"]["S"] == "failed"


def test_an_update_whose_write_fails_can_be_retried(tasks: TaskClient) -> None:
    task_id = tasks.create("confirm_delete", {"filename": "fault-update.txt"})
    key = next(iter(tasks.wait_input(task_id)["inputRequests"]))
    dynamodb, _ = api_clients(tasks)
    with fault(dynamodb, "dynamodb", "UpdateItem"):
        failed = tasks.rpc(
            "tasks/update",
            {"taskId": task_id, "inputResponses": {key: elicit_answer({"confirm": True})}},
        )
    assert failed["error"]["code"] == -32603
    assert tasks.get(task_id)["status"] == "input_required"  # nothing half-done
    tasks.update(task_id, {key: elicit_answer({"confirm": True})})
    done = tasks.wait_terminal(task_id)
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "Deleted fault-update.txt."


def test_an_update_whose_resume_fails_resumes_on_retry(tasks: TaskClient) -> None:
    task_id = tasks.create("confirm_delete", {"filename": "fault-resume.txt"})
    key = next(iter(tasks.wait_held(task_id)["inputRequests"]))  # a token to resume
    answer = {key: elicit_answer({"confirm": True})}
    _, states = api_clients(tasks)
    with fault(states, "sfn", "SendTaskSuccess"):
        failed = tasks.rpc("tasks/update", {"taskId": task_id, "inputResponses": answer})
    assert failed["error"]["code"] == -32603
    # The answer is recorded: the task shows it is no longer waiting for it...
    assert tasks.get(task_id)["status"] == "working"
    # ...and the same update again resumes the execution (the answer itself is not changed).
    tasks.update(task_id, answer)
    assert tasks.wait_terminal(task_id)["status"] == "completed"


@pytest.mark.parametrize("operation", ["StopExecution", "SendTaskFailure"])
def test_a_cancel_whose_interrupt_fails_is_still_durable(tasks: TaskClient, operation: str) -> None:
    if operation == "StopExecution":
        with on_path(tasks.stack, "step_functions"):  # a direct leg has no execution to stop
            task_id = tasks.create("slow_compute", {"seconds": 30, "label": "fault-stop"})
        wait_until(lambda: tasks.get(task_id).get("statusMessage"), timeout=5)
    else:
        task_id = tasks.create("confirm_delete", {"filename": "fault-interrupt.txt"})
        tasks.wait_input(task_id)
    _, states = api_clients(tasks)
    with fault(states, "sfn", operation):
        tasks.rpc("tasks/cancel", {"taskId": task_id})
    # The cancel marker was written first: the task is cancelled whatever the execution does.
    assert tasks.get(task_id)["status"] == "cancelled"
    assert tasks.cancel(task_id)["result"] == {"resultType": "complete"}  # a retry acks
    # The execution still ends (the worker notices at its next report, or the reconciler
    # settles a stuck wait), and the task never leaves cancelled.
    wait_until(lambda: tasks.execution(task_id)["status"] != "RUNNING", timeout=25)
    assert tasks.get(task_id)["status"] == "cancelled"


def test_a_worker_whose_outcome_write_fails_ends_failed_not_lost(
    tasks: TaskClient, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The leg retries its outcome write as often as deployed, without the 4.2 s of backoff.
    monkeypatch.setattr(legs, "END_RETRY_DELAYS_S", (0.01,) * len(legs.END_RETRY_DELAYS_S))
    dynamodb, _ = worker_clients(tasks)
    with fault(dynamodb, "dynamodb", "UpdateItem", times=10):
        task_id = tasks.create("slow_compute", {"seconds": 0, "label": f"fault-finish-{path}"})
        # The leg raises; the execution fails (or the direct invoke's failure record is sent)
        # and the reconciler settles the task.
        settled = tasks.wait_terminal(task_id, timeout=10)
    assert settled["status"] == "failed"
    assert settled["error"]["code"] == -32603


def test_a_worker_that_cannot_release_its_token_keeps_its_outcome(tasks: TaskClient) -> None:
    _, states = worker_clients(tasks)
    with (
        fault(states, "sfn", "SendTaskSuccess") as fired,
        on_path(tasks.stack, "step_functions"),  # only an execution's leg has a token
    ):
        task_id = tasks.create("slow_compute", {"seconds": 0, "label": "fault-release"})
        done = tasks.wait_terminal(task_id)
        wait_until(lambda: fired, timeout=5)
    # The outcome was written before the token: the task is completed, and stays so when
    # the execution is later settled (the reconciler finds a terminal task and changes nothing).
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "Computed fault-release after 0.0s."
