"""`TaskStore.unstarted`, run against both stores: the in-memory twin and DynamoDB (on moto, the
table and its sparse `UnstartedIndex` built from template.yaml).

A task is in it from creation until a leg claims it, or parks it with a token, or it ends; a
direct leg that parks it (no token) puts it back until an execution attaches; a report at leg
0 keeps it in, with its new update time; a declared workflow's task leaves once the sweeper
adopted it (its execution runs). Each store answers the same ids.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mcp_tasks_aws.tasks import transitions as t
from mcp_tasks_aws.tasks.memory import InMemoryTaskStore
from mcp_tasks_aws.tasks.ports import TaskStore
from support.domain import ALICE, elicit_request
from support.records import IN_DOMAIN

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

# Far in the future, so no record here has expired whichever clock a store reads, and each
# test's records are apart from every other test's (the DynamoDB table is shared per module).
T0 = 4_000_000_000_000


@pytest.fixture(params=["memory", "dynamodb"])
def store(request: pytest.FixtureRequest) -> Iterator[TaskStore]:
    if request.param == "memory":
        yield InMemoryTaskStore()
    else:
        yield request.getfixturevalue("dynamo_store")


def created(store: TaskStore, at: int, **overrides: object) -> str:
    record = IN_DOMAIN.make(created_at=at, updated_at=at, ttl_ms=None, **overrides)
    store.put_new(record)
    return record.task_id


def test_only_tasks_no_leg_ran_and_not_ended_are_unstarted(store: TaskStore) -> None:
    base = T0
    waiting_for_a_leg = created(store, base + 1)
    direct = created(store, base + 2, held_by="direct")
    claimed = created(store, base + 3, held_by="direct")
    parked = created(store, base + 4)
    completed = created(store, base + 5)
    cancelled = created(store, base + 6)
    reported = created(store, base + 7)
    assert store.apply(claimed, *t.claim(base + 10))
    assert store.apply(parked, *t.park(0, {"a": elicit_request()}, "tok", {}, base + 10))
    assert store.apply(completed, *t.complete(0, base + 10, result={"content": []}))
    assert store.apply(cancelled, *t.cancel(ALICE, base + 10))
    assert store.apply(reported, *t.report(0, "busy", base + 20))  # updated at base + 20
    # A direct leg that asked is back in (no execution holds it) until one attaches.
    asked = created(store, base + 8, held_by="direct")
    attached = created(store, base + 9, held_by="direct")
    for task_id in (asked, attached):
        assert store.apply(task_id, *t.claim(base + 10))
        assert store.apply(task_id, *t.park(1, {"a": elicit_request()}, None, {}, base + 10))
    assert store.apply(attached, *t.attach(2, ["a"], "tok", base + 30))
    mine = {waiting_for_a_leg, direct, claimed, parked, completed, cancelled, reported}
    mine |= {asked, attached}

    def unstarted(before: int) -> set[str]:
        return set(store.unstarted(before, limit=1000)) & mine

    assert unstarted(base + 100) == {waiting_for_a_leg, direct, reported, asked}
    # Strictly before the bound, by the last update: a report keeps a first leg fresh.
    assert unstarted(base + 20) == {waiting_for_a_leg, direct, asked}
    assert unstarted(base + 2) == {waiting_for_a_leg}
    assert unstarted(base + 1) == set()


def test_unstarted_stops_at_the_limit(store: TaskStore) -> None:
    base = T0 + 10**9
    for i in range(40):
        created(store, base + i)
    assert len(store.unstarted(base + 1000, limit=7)) == 7


def test_a_declared_workflows_task_is_unstarted_until_its_execution_is_seen(
    store: TaskStore,
) -> None:
    # A workflow whose start never landed must be found (nothing else would end its task);
    # one the sweeper saw running is adopted and leaves, however long it stays silent; one
    # that asked (a token) or ended has left already.
    base = T0 + 2 * 10**9
    arn = "arn:aws:states:us-east-1:123456789012:execution:deploy:"
    never_started = created(store, base + 1, execution_arn=arn + "a")
    reported = created(store, base + 2, execution_arn=arn + "b")
    assert store.apply(reported, *t.report(0, "approving", base + 3))
    adopted = created(store, base + 4, execution_arn=arn + "c")
    seen = store.get(adopted)
    assert seen is not None
    moved = store.apply(adopted, *t.adopt(seen, base + 5))
    assert moved is not None
    assert moved.changed
    assert moved.record.version == seen.version  # nothing a client sees
    asked = created(store, base + 6, execution_arn=arn + "d")
    assert store.apply(asked, *t.park(0, {"ask-1": elicit_request()}, "tok", {}, base + 7))
    mine = {never_started, reported, adopted, asked}
    assert set(store.unstarted(base + 100, limit=1000)) & mine == {never_started, reported}
