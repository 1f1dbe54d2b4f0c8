"""What only the DynamoDB store can show (the contract both stores share is
`test_store_contract.py`): consistent reads, the TTL attribute, the index, atomic conditional
writes under real concurrency, and what the requests it sends look like."""

from __future__ import annotations

import json
import math
import threading
import time
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from mcp_tasks_aws.aws.dynamodb import OWNER_INDEX, DynamoTaskStore, room_for_result
from mcp_tasks_aws.aws.s3 import retention_folder
from mcp_tasks_aws.local.aws import REGION, LocalAws
from mcp_tasks_aws.tasks import transitions as t
from mcp_tasks_aws.tasks.exceptions import TaskTooLarge
from mcp_tasks_aws.tasks.model import new_task_id
from mcp_tasks_aws.tasks.ports import Throttled
from support.domain import ELICIT, elicit_request
from support.records import ON_STACK
from support.tasks import now_ms

make_record = ON_STACK.make  # records as the embedded stack's anonymous caller creates them

ANSWERER = "anonymous"


def raw_item(dynamodb: Any, table: str, task_id: str) -> dict[str, Any]:
    item: dict[str, Any] = dynamodb.get_item(
        TableName=table, Key={"taskId": {"S": task_id}}, ConsistentRead=True
    )["Item"]
    return item


def sent(store: DynamoTaskStore, operation: str, action: Any) -> list[dict[str, Any]]:
    """The API parameters of every `operation` call the store makes while running `action`."""
    seen: list[dict[str, Any]] = []

    def capture(params: dict[str, Any], **_: Any) -> None:
        seen.append(json.loads(params["body"]))

    events = store.client.meta.events
    events.register(f"before-call.dynamodb.{operation}", capture)
    try:
        action()
    finally:
        events.unregister(f"before-call.dynamodb.{operation}", capture)
    return seen


def test_every_read_is_strongly_consistent(dynamo_store: DynamoTaskStore) -> None:
    record = make_record()
    dynamo_store.put_new(record)
    reads = sent(
        dynamo_store,
        "GetItem",
        lambda: (dynamo_store.get(record.task_id), dynamo_store.get(new_task_id())),
    )
    batch = sent(dynamo_store, "BatchGetItem", lambda: dynamo_store.get_many([record.task_id]))
    assert [r.get("ConsistentRead") for r in reads] == [True, True]
    assert all(keys["ConsistentRead"] for r in batch for keys in r["RequestItems"].values())


def test_peeking_reads_only_the_head_attributes(dynamo_store: DynamoTaskStore) -> None:
    record = make_record(arguments={"blob": "x" * 50_000})
    dynamo_store.put_new(record)
    calls = sent(dynamo_store, "BatchGetItem", lambda: dynamo_store.peek_many([record.task_id]))
    (request,) = calls
    keys = request["RequestItems"][dynamo_store.table]
    assert keys["ConsistentRead"] is True
    projected = {
        keys["ExpressionAttributeNames"][n.strip()] for n in keys["ProjectionExpression"].split(",")
    }
    assert "arguments" not in projected
    assert "result" not in projected


def test_a_refused_move_costs_one_call_and_brings_the_item_back(
    dynamo_store: DynamoTaskStore,
) -> None:
    record = make_record()
    dynamo_store.put_new(record)
    calls = sent(
        dynamo_store,
        "UpdateItem",
        lambda: dynamo_store.apply(record.task_id, *t.report(9, "stale", now_ms())),
    )
    assert len(calls) == 1
    assert calls[0]["ReturnValuesOnConditionCheckFailure"] == "ALL_OLD"


def test_expires_at_is_epoch_seconds_and_native_ttl_is_on(
    dynamo_store: DynamoTaskStore, dynamodb: Any, local_aws: LocalAws
) -> None:
    # Given a task created now with a 90.5 s TTL
    created = now_ms()
    record = make_record(created_at=created, updated_at=created, ttl_ms=90_500)
    dynamo_store.put_new(record)
    # Then its expiresAt attribute is epoch *seconds* (what DynamoDB TTL reads), rounded up
    item = raw_item(dynamodb, local_aws.table_name, record.task_id)
    expires = int(item["expiresAt"]["N"])
    assert expires == math.ceil((created + 90_500) / 1000)
    assert abs(expires - (time.time() + 90.5)) < 5
    # And the table's native TTL is enabled on that attribute (from template.yaml)
    ttl = dynamodb.describe_time_to_live(TableName=local_aws.table_name)
    description = ttl["TimeToLiveDescription"]
    assert description["AttributeName"] == "expiresAt"
    assert description["TimeToLiveStatus"] in ("ENABLED", "ENABLING")


def test_unlimited_task_has_no_expiry_attribute(
    dynamo_store: DynamoTaskStore, dynamodb: Any, local_aws: LocalAws
) -> None:
    record = make_record(ttl_ms=None)
    dynamo_store.put_new(record)
    item = raw_item(dynamodb, local_aws.table_name, record.task_id)
    assert "expiresAt" not in item
    assert "ttlMs" not in item


def test_outstanding_requests_keep_their_method_addressable(
    dynamo_store: DynamoTaskStore, dynamodb: Any, local_aws: LocalAws
) -> None:
    # The answer guard reads inputRequests.<key>.method: each request is a map, not a string.
    record = make_record()
    dynamo_store.put_new(record)
    dynamo_store.apply(record.task_id, *t.park(0, {"k": elicit_request()}, "tok", {}, now_ms()))
    item = raw_item(dynamodb, local_aws.table_name, record.task_id)
    assert item["inputRequests"]["M"]["k"]["M"]["method"] == {"S": ELICIT}


def test_listing_reads_the_owner_index_newest_first_with_one_query(
    dynamo_store: DynamoTaskStore,
) -> None:
    owner = f"jwt:x|{new_task_id()}|y"
    dynamo_store.put_new(make_record(owner=owner))
    queries = sent(dynamo_store, "Query", lambda: dynamo_store.list_by_owner(owner, limit=5))
    assert len(queries) == 1
    assert queries[0]["IndexName"] == OWNER_INDEX
    assert queries[0]["ScanIndexForward"] is False


# -- atomicity under concurrency ---------------------------------------------------------------
#
# DynamoDB evaluates a condition and applies the update as one atomic step per item; every race
# guard in the design rests on that. The embedded stack serves requests from several threads
# (HTTP server, state machine, worker), so its DynamoDB must behave the same.

ROUNDS = 40


def race(*calls: Any) -> list[Any]:
    """Run `calls` at the same moment; each returns its outcome or the exception it raised."""
    barrier = threading.Barrier(len(calls))
    outcomes: list[Any] = [None] * len(calls)

    def run(index: int) -> None:
        barrier.wait(timeout=5)
        try:
            outcomes[index] = calls[index]()
        except Exception as exc:
            outcomes[index] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    return outcomes


def other_store(local_aws: LocalAws) -> DynamoTaskStore:
    return DynamoTaskStore(boto3.client("dynamodb", region_name=REGION), local_aws.table_name)


def test_complete_and_cancel_at_the_same_moment_never_both_win(
    dynamo_store: DynamoTaskStore, local_aws: LocalAws
) -> None:
    other = other_store(local_aws)
    winners: list[tuple[bool, bool]] = []
    for _ in range(ROUNDS):
        record = make_record()
        dynamo_store.put_new(record)
        completed, cancelled = race(
            lambda r=record: dynamo_store.apply(
                r.task_id, *t.complete(0, now_ms(), result={"x": 1})
            ),
            lambda r=record: other.apply(r.task_id, *t.cancel(r.owner, now_ms())),
        )
        winners.append((completed.changed, cancelled.changed))
        stored = dynamo_store.get(record.task_id)
        assert stored is not None
        assert (stored.status == "cancelled") == (stored.result is None)
    assert all(a != b for a, b in winners), winners


def test_answers_at_the_same_moment_exactly_one_is_stored(
    dynamo_store: DynamoTaskStore, local_aws: LocalAws
) -> None:
    stores = [other_store(local_aws) for _ in range(3)]
    for _ in range(ROUNDS):
        record = make_record()
        dynamo_store.put_new(record)
        dynamo_store.apply(record.task_id, *t.park(0, {"a": elicit_request()}, "t", {}, now_ms()))
        outcomes = race(
            *(
                lambda s=s, n=n, r=record: s.apply(
                    r.task_id,
                    *t.answer(
                        r.owner, {"a": ({"action": "accept", "content": {"n": n}}, None)}, now_ms()
                    ),
                )
                for n, s in enumerate(stores)
            )
        )
        assert sum(o.changed for o in outcomes) == 1, outcomes
        (winner,) = [o.record for o in outcomes if o.changed]
        stored = dynamo_store.get(record.task_id)
        assert stored is not None
        assert stored.answers == winner.answers


@pytest.mark.parametrize("leg", [0, 1])
def test_stale_and_current_leg_writes_are_told_apart_by_one_condition(
    dynamo_store: DynamoTaskStore, leg: int
) -> None:
    record = make_record(leg=1)
    dynamo_store.put_new(record)
    outcome = dynamo_store.apply(record.task_id, *t.report(leg, "busy", now_ms()))
    assert outcome is not None
    assert outcome.changed is (leg == 1)


# -- item size -----------------------------------------------------------------------------------


def test_room_for_a_result_shrinks_with_what_the_item_already_holds() -> None:
    small = make_record()
    heavy = make_record(arguments={"blob": "x" * 250_000})
    assert room_for_result(small) > 380_000
    assert room_for_result(heavy) < 160_000
    assert room_for_result(make_record(arguments={"blob": "x" * 500_000})) == 0


def test_a_write_that_would_overflow_the_item_is_a_domain_error(
    dynamo_store: DynamoTaskStore,
) -> None:
    # Given a task whose arguments already take 250 KB of its item
    record = make_record(arguments={"blob": "x" * 250_000})
    dynamo_store.put_new(record)
    # When its leg would write a 200 KB result inline, Then the store says it is too large
    with pytest.raises(TaskTooLarge):
        dynamo_store.apply(record.task_id, *t.complete(0, now_ms(), result={"t": "y" * 200_000}))
    # And nothing changed
    assert dynamo_store.get(record.task_id) == record


# -- throttling ----------------------------------------------------------------------------------


def test_throttling_that_outlasts_the_retries_is_told_apart(
    dynamo_store: DynamoTaskStore,
) -> None:
    def throttled(**_: Any) -> None:
        raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow"}}, "GetItem")

    events = dynamo_store.client.meta.events
    events.register("before-call.dynamodb.GetItem", throttled, unique_id="throttle-test")
    try:
        with pytest.raises(Throttled):
            dynamo_store.get(new_task_id())
    finally:
        events.unregister("before-call.dynamodb.GetItem", unique_id="throttle-test")


@pytest.mark.parametrize(
    ("seconds_left", "folder"),
    [
        (60, "1d/"),
        (86_400, "1d/"),
        (86_401, "1d/"),  # the second `expiry` rounds up is not a day more
        (86_402, "7d/"),
        (7 * 86_400, "7d/"),
        (20 * 86_400, "30d/"),
        (30 * 86_400, "30d/"),
        (30 * 86_400 + 1, "30d/"),
        (31 * 86_400, "keep/"),
        (None, "keep/"),
    ],
)
def test_an_offloaded_result_is_kept_at_least_as_long_as_its_task(
    seconds_left: int | None, folder: str
) -> None:
    now = 1_700_000_000.0
    expires = None if seconds_left is None else int(now) + seconds_left
    assert retention_folder(expires, now) == folder
