"""The sweeper on the embedded stack: a fault at each AWS write of the start path, in turn (the
record's PutItem, the start's Invoke or StartExecution, the compensating UpdateItem tried
three times), then a sweep, as the schedule runs it. Only a task left stranded is failed, with
the clear error; a held task, one an execution runs and one updated recently stay as they were.
The sweep also runs by itself in a background thread that `stop` ends.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from mcp_tasks_aws.local.aws import REGION
from mcp_tasks_aws.local.stack import EmbeddedStack
from mcp_tasks_aws.tasks import transitions as t
from mcp_tasks_aws.tasks.model import TaskRecord
from mcp_tasks_aws.tasks.sweep import STRANDED_MESSAGE
from support.mcp import running_stack
from support.records import ON_STACK
from support.tasks import PATHS, TaskClient, WorkerDispatch, now_ms, on_path, wait_until

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

HOUR_MS = 3600 * 1000
COMPENSATIONS = 3  # TaskService tries the compensating `fail` three times


@pytest.fixture(scope="module")
def stack() -> Iterator[EmbeddedStack]:
    with running_stack(MCP_TASKS_TOOLS="conformance") as running:
        yield running


@pytest.fixture(scope="module")
def dispatch(stack: EmbeddedStack) -> WorkerDispatch:
    worker = WorkerDispatch(stack)
    stack.aws.register("WorkerFunction", worker)
    return worker


@pytest.fixture(scope="module")
def tasks(stack: EmbeddedStack, dispatch: WorkerDispatch) -> TaskClient:
    return TaskClient(stack, dispatch)


@contextlib.contextmanager
def failing(client: Any, event_service: str, operation: str, times: int) -> Iterator[list[int]]:
    """The next `times` calls of `operation` on `client` fail as AWS would (HTTP 500)."""
    fired: list[int] = []
    lock = threading.Lock()

    def fail(**_: Any) -> None:
        with lock:
            if len(fired) >= times:
                return
            fired.append(1)
        raise ClientError({"Error": {"Code": "InternalServerError", "Message": "x"}}, operation)

    event = f"before-call.{event_service}.{operation}"
    client.meta.events.register(event, fail, unique_id=f"sweep-fault-{operation}")
    try:
        yield fired
    finally:
        client.meta.events.unregister(event, unique_id=f"sweep-fault-{operation}")


def start_call(stack: EmbeddedStack, path: str) -> tuple[Any, str, str]:
    app = stack.api_app
    if path == "direct":
        return app.direct_legs.client, "lambda", "Invoke"  # type: ignore[union-attr]
    return app.runner.client, "sfn", "StartExecution"  # type: ignore[attr-defined]


def records_labelled(tasks: TaskClient, label: str) -> list[TaskRecord]:
    # A test-side Scan, on boto3's own client (the adapters' clients have only the operations
    # they call: `aws.loader`).
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    items = dynamodb.scan(TableName=tasks.stack.aws.table_name)["Items"]
    ids = [i["taskId"]["S"] for i in items if label in i.get("arguments", {}).get("S", "")]
    return list(tasks.store.get_many(ids).values())


def create_with_faults(tasks: TaskClient, path: str, label: str, compensations: int) -> list[Any]:
    """tools/call with the start failing and the first `compensations` fail writes too."""
    stack = tasks.stack
    client, service, operation = start_call(stack, path)
    dynamodb = stack.api_app.store.client  # type: ignore[attr-defined]
    with (
        pytest.MonkeyPatch.context() as patch,
        on_path(stack, path),
        failing(client, service, operation, 1) as started,
        failing(dynamodb, "dynamodb", "UpdateItem", compensations) as compensated,
    ):
        # Each compensation is tried as deployed, without the backoff between tries.
        patch.setattr(stack.api_app.tasks, "sleep", lambda _seconds: None)
        message = tasks.rpc("tools/call", {"name": "slow_compute", "arguments": {"label": label}})
    assert started == [1]
    assert len(compensated) == compensations
    assert message["error"]["code"] == -32603, message
    return records_labelled(tasks, label)


def age(tasks: TaskClient, task_id: str, by_ms: int) -> None:
    """Move the task's last update back by `by_ms` (as if that much time had passed)."""
    record = tasks.store.get(task_id)
    assert record is not None
    boto3.client("dynamodb", region_name=REGION).update_item(
        TableName=tasks.stack.aws.table_name,
        Key={"taskId": {"S": task_id}},
        UpdateExpression="SET lastUpdatedAt = :then",
        ExpressionAttributeValues={":then": {"N": str(record.updated_at - by_ms)}},
    )


def healthy_tasks(tasks: TaskClient, dispatch: WorkerDispatch) -> list[TaskRecord]:
    """Idle for hours but not stranded: one its direct leg holds (claimed), one whose first leg
    an execution runs (the worker took the leg and has not written yet)."""
    then = now_ms() - 2 * HOUR_MS
    kept = {"created_at": then, "updated_at": then, "ttl_ms": 24 * HOUR_MS}
    held = ON_STACK.make(held_by="direct", **kept)
    tasks.store.put_new(held)
    claimed = tasks.store.apply(held.task_id, *t.claim(then))
    assert claimed is not None
    assert claimed.changed
    running = ON_STACK.make(**kept)
    tasks.store.put_new(running)
    dispatch.by_task[running.task_id] = lambda event, context: {"outcome": "parked"}
    tasks.runner.start(running.task_id, 3600)  # waits on its token: RUNNING, no write
    wait_until(lambda: tasks.execution(running.task_id)["status"] == "RUNNING")
    return [claimed.record, running]


@pytest.mark.parametrize("path", PATHS)
def test_a_failed_record_write_leaves_nothing_to_sweep(tasks: TaskClient, path: str) -> None:
    label = f"sweep-put-{path}"
    dynamodb = tasks.stack.api_app.store.client  # type: ignore[attr-defined]
    with on_path(tasks.stack, path), failing(dynamodb, "dynamodb", "PutItem", 1) as fired:
        message = tasks.rpc("tools/call", {"name": "slow_compute", "arguments": {"label": label}})
    assert fired == [1]
    assert "error" in message
    assert records_labelled(tasks, label) == []
    assert tasks.stack.sweep()["failed"] == 0


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("compensations", range(COMPENSATIONS + 1))
def test_a_failed_start_is_ended_once_by_its_compensation_or_by_the_sweeper(
    tasks: TaskClient, dispatch: WorkerDispatch, path: str, compensations: int
) -> None:
    healthy = healthy_tasks(tasks, dispatch)
    label = f"sweep-start-{path}-{compensations}"
    (record,) = create_with_faults(tasks, path, label, compensations)
    stranded = compensations == COMPENSATIONS
    assert (record.status == "working") is stranded
    (recent,) = create_with_faults(tasks, path, label + "-recent", COMPENSATIONS)
    age(tasks, record.task_id, HOUR_MS)  # past the template's 30-minute bound
    before = {r.task_id: tasks.store.get(r.task_id) for r in [*healthy, recent]}
    # When the sweeper runs
    swept = tasks.stack.sweep()
    # Then only the stranded task failed, with the clear error; nothing healthy changed
    after = tasks.store.get(record.task_id)
    assert after is not None
    assert after.status == "failed"
    if stranded:
        assert swept["failed"] == 1
        assert after.error == {"code": -32603, "message": STRANDED_MESSAGE}
        assert tasks.get(record.task_id)["statusMessage"] == STRANDED_MESSAGE
    else:
        assert swept["failed"] == 0
        assert (after.error or {}).get("message") == "The task could not be started"
    assert {i: tasks.store.get(i) for i in before} == before
    assert tasks.stack.sweep()["failed"] == 0  # it ends once


def test_the_stack_sweeps_by_itself_until_stopped() -> None:
    stack = EmbeddedStack(env={"MCP_TASKS_TOOLS": "conformance"}, sweep_interval_s=0.05)
    with stack:
        assert stack.sweeper is not None
        wait_until(lambda: stack.sweeper is not None and stack.sweeper.runs >= 2)
    assert not stack.sweeper.running
