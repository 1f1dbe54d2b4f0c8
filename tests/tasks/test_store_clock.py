"""Each store reads the time from the clock it is given (default `tasks.model.now_ms`): a
listing leaves out what has expired by that clock, not by the wall clock."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mcp_tasks_aws.aws.dynamodb import DynamoTaskStore
from mcp_tasks_aws.tasks.memory import InMemoryTaskStore
from mcp_tasks_aws.tasks.model import new_task_id, now_ms
from mcp_tasks_aws.tasks.ports import TaskStore
from support.records import make_record

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


class FakeClock:
    def __init__(self, start_ms: int) -> None:
        self.now_ms = start_ms

    def __call__(self) -> int:
        return self.now_ms


@pytest.fixture(params=["memory", "dynamodb"])
def store_on(request: pytest.FixtureRequest) -> Callable[[FakeClock], TaskStore]:
    if request.param == "memory":
        return lambda clock: InMemoryTaskStore(clock=clock)
    local_aws: Any = request.getfixturevalue("local_aws")
    client: Any = request.getfixturevalue("dynamodb")
    return lambda clock: DynamoTaskStore(client, local_aws.table_name, clock=clock)


def test_a_listing_reads_expiry_by_the_stores_clock(
    store_on: Callable[[FakeClock], TaskStore],
) -> None:
    # Given a store on a fake clock, and a task created now that lives a minute
    created = now_ms()
    clock = FakeClock(created)
    store = store_on(clock)
    owner = f"jwt:clock|{new_task_id()}|app"
    record = make_record(owner=owner, created_at=created, updated_at=created, ttl_ms=60_000)
    store.put_new(record)
    assert [s.task_id for s in store.list_by_owner(owner, limit=5).tasks] == [record.task_id]
    # When the store's clock reads two minutes later (the wall clock has not moved)
    clock.now_ms = created + 120_000
    # Then its listing leaves the task out as expired
    assert store.list_by_owner(owner, limit=5).tasks == []
