"""The DynamoDB task store on moto, with the table built from template.yaml."""

from __future__ import annotations

import json
import math
import threading
import time
from typing import Any

import boto3
import pytest

from mcp_tasks_aws.aws.dynamodb import DynamoTaskStore
from mcp_tasks_aws.local.aws import REGION, LocalAws
from mcp_tasks_aws.tasks.exceptions import (
    TaskAlreadyExists,
    TaskNoLongerActive,
    TaskNotFound,
    TaskNotWaiting,
)
from mcp_tasks_aws.tasks.model import TaskRecord, new_task_id
from tasks.conftest import ANONYMOUS, make_record, now_ms

ELICIT = {"method": "elicitation/create", "params": {"message": "ok?", "mode": "form"}}


def answer(value: Any) -> dict[str, Any]:
    return {"action": "accept", "content": {"value": value}}


def raw_item(dynamodb: Any, table: str, task_id: str) -> dict[str, Any]:
    item: dict[str, Any] = dynamodb.get_item(
        TableName=table, Key={"taskId": {"S": task_id}}, ConsistentRead=True
    )["Item"]
    return item


def parked(store: DynamoTaskStore, keys: tuple[str, ...] = ("a",), token: str = "tok-1") -> Any:
    """A stored task whose leg 0 asked `keys` (now input_required, leg 1)."""
    record = make_record()
    store.put_new(record)
    store.park(record.task_id, 0, {k: ELICIT for k in keys}, token, now_ms())
    return store.get(record.task_id)


# -- create and read ---------------------------------------------------------------------------


def test_put_new_refuses_a_reused_id(store: DynamoTaskStore) -> None:
    # Given a stored task
    record = make_record()
    store.put_new(record)
    # When a second record is created under the same id
    other = make_record(task_id=record.task_id, owner="someone-else", tool="greet")
    # Then it is refused and the first one is untouched
    with pytest.raises(TaskAlreadyExists):
        store.put_new(other)
    stored = store.get(record.task_id)
    assert stored is not None
    assert (stored.owner, stored.tool, stored.version) == (ANONYMOUS, "slow_compute", 1)


def test_get_is_strongly_consistent(store: DynamoTaskStore) -> None:
    # Given a stored task and a hook that sees every GetItem the store sends
    record = make_record()
    store.put_new(record)
    seen: list[dict[str, Any]] = []

    def capture(params: dict[str, Any], **_: Any) -> None:
        # `params` is the serialized request: the API parameters are its JSON body.
        seen.append(json.loads(params["body"]))

    events = store.client.meta.events
    events.register("before-call.dynamodb.GetItem", capture)
    try:
        # When the task is read (found or not)
        assert store.get(record.task_id) is not None
        assert store.get(new_task_id()) is None
    finally:
        events.unregister("before-call.dynamodb.GetItem", capture)
    # Then every read asked for ConsistentRead
    assert len(seen) == 2
    assert all(params.get("ConsistentRead") is True for params in seen)


def test_round_trip_keeps_json_payloads_exact(store: DynamoTaskStore) -> None:
    record = make_record(arguments={"seconds": 1.5, "nested": {"n": [1, 2.25, None, True]}})
    store.put_new(record)
    stored = store.get(record.task_id)
    assert stored is not None
    assert stored.arguments == {"seconds": 1.5, "nested": {"n": [1, 2.25, None, True]}}
    assert type(stored.arguments["seconds"]) is float
    assert stored.capabilities == record.capabilities


def test_expires_at_is_epoch_seconds_and_native_ttl_is_on(
    store: DynamoTaskStore, dynamodb: Any, local_aws: LocalAws
) -> None:
    # Given a task created now with a 90.5 s TTL
    created = now_ms()
    record = make_record(created_at=created, updated_at=created, ttl_ms=90_500)
    store.put_new(record)
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
    store: DynamoTaskStore, dynamodb: Any, local_aws: LocalAws
) -> None:
    record = make_record(ttl_ms=None)
    store.put_new(record)
    item = raw_item(dynamodb, local_aws.table_name, record.task_id)
    assert "expiresAt" not in item
    assert "ttlMs" not in item


# -- versions ----------------------------------------------------------------------------------


def test_every_write_bumps_the_version(store: DynamoTaskStore) -> None:
    def version(task_id: str) -> int:
        record = store.get(task_id)
        assert record is not None
        return record.version

    # Given a new task (version 1)
    record = make_record()
    store.put_new(record)
    task_id = record.task_id
    assert version(task_id) == 1
    # When each primitive writes, Then the version goes up by one each time
    store.set_status_message(task_id, 0, "warming up", now_ms())
    assert version(task_id) == 2
    store.park(task_id, 0, {"a": ELICIT}, "tok", now_ms())
    assert version(task_id) == 3
    store.record_answers(task_id, ANONYMOUS, {"a": answer(1)}, now_ms())
    assert version(task_id) == 4
    store.finish(task_id, 1, status="completed", now_ms=now_ms(), result={"content": []})
    assert version(task_id) == 5

    cancelled = make_record()
    store.put_new(cancelled)
    store.request_cancel(cancelled.task_id, ANONYMOUS, now_ms())
    assert version(cancelled.task_id) == 2

    lost = make_record()
    store.put_new(lost)
    store.settle_lost(lost.task_id, {"code": -32603, "message": "lost"}, now_ms())
    assert version(lost.task_id) == 2


# -- answers -----------------------------------------------------------------------------------


def test_record_answers_first_answer_wins_and_leaves_input_requests(
    store: DynamoTaskStore,
) -> None:
    # Given a task waiting for two answers
    record = parked(store, ("a", "b"))
    # When "a" is answered
    after = store.record_answers(record.task_id, ANONYMOUS, {"a": answer("first")}, now_ms())
    # Then "a" left inputRequests, "b" is still outstanding, and the status is still waiting
    assert set(after.input_requests) == {"b"}
    assert after.answers == {"a": answer("first")}
    assert after.status == "input_required"
    # When "a" is answered again with another value, and "b" for the first time
    again = store.record_answers(
        record.task_id, ANONYMOUS, {"a": answer("second"), "b": answer("b1")}, now_ms()
    )
    # Then the first answer for "a" stands and nothing is outstanding
    assert again.answers == {"a": answer("first"), "b": answer("b1")}
    assert again.input_requests == {}
    stored = store.get(record.task_id)
    assert stored is not None
    assert stored.journal == {"a": answer("first"), "b": answer("b1")}


def test_record_answers_on_a_task_not_waiting_is_refused_with_the_record(
    store: DynamoTaskStore,
) -> None:
    # Given a working task (nothing asked)
    record = make_record()
    store.put_new(record)
    # When answers arrive, Then they are refused and the current record is carried
    with pytest.raises(TaskNotWaiting) as refused:
        store.record_answers(record.task_id, ANONYMOUS, {"a": answer(1)}, now_ms())
    assert refused.value.record.task_id == record.task_id
    assert refused.value.record.status == "working"
    stored = store.get(record.task_id)
    assert stored is not None
    assert stored.answers == {}
    assert stored.version == 1


def test_record_answers_after_cancel_is_refused(store: DynamoTaskStore) -> None:
    record = parked(store)
    store.request_cancel(record.task_id, ANONYMOUS, now_ms())
    with pytest.raises(TaskNotWaiting) as refused:
        store.record_answers(record.task_id, ANONYMOUS, {"a": answer(1)}, now_ms())
    assert refused.value.record.status == "cancelled"
    stored = store.get(record.task_id)
    assert stored is not None
    assert stored.answers == {}


def test_foreign_owner_is_not_found_exactly_like_missing(store: DynamoTaskStore) -> None:
    # Given a waiting task owned by alice
    record = make_record(owner="jwt:|alice|")
    store.put_new(record)
    store.park(record.task_id, 0, {"a": ELICIT}, "tok", now_ms())
    missing = new_task_id()

    def outcome(call: Any) -> tuple[type[BaseException], str, bool]:
        with pytest.raises(TaskNotFound) as raised:
            call()
        return type(raised.value), str(raised.value), raised.value.expired

    # When bob answers or cancels it, Then it fails exactly as for a task that does not exist
    for task_id_call in (
        lambda tid: store.record_answers(tid, "jwt:|bob|", {"a": answer(1)}, now_ms()),
        lambda tid: store.request_cancel(tid, "jwt:|bob|", now_ms()),
    ):
        foreign = outcome(lambda c=task_id_call: c(record.task_id))
        absent = outcome(lambda c=task_id_call: c(missing))
        assert foreign == absent == (TaskNotFound, "not found", False)
    # And alice's task is untouched
    stored = store.get(record.task_id)
    assert stored is not None
    assert (stored.status, stored.answers, stored.cancel_requested) == (
        "input_required",
        {},
        False,
    )


# -- cancel ------------------------------------------------------------------------------------


def test_request_cancel_marks_cancelled_and_returns_the_record_before(
    store: DynamoTaskStore,
) -> None:
    record = parked(store, token="tok-cancel")
    before = store.request_cancel(record.task_id, ANONYMOUS, now_ms())
    assert before.status == "input_required"
    assert before.task_token == "tok-cancel"
    assert set(before.input_requests) == {"a"}
    after = store.get(record.task_id)
    assert after is not None
    assert after.status == "cancelled"
    assert after.cancel_requested is True


@pytest.mark.parametrize("final", ["completed", "failed"])
def test_request_cancel_on_a_terminal_task_is_not_waiting(
    store: DynamoTaskStore, final: str
) -> None:
    # Given a task that ended
    record = make_record()
    store.put_new(record)
    store.finish(record.task_id, 0, status=final, now_ms=now_ms(), result={"content": []})
    # When it is cancelled, Then it is refused with the record, and it keeps its outcome
    with pytest.raises(TaskNotWaiting) as refused:
        store.request_cancel(record.task_id, ANONYMOUS, now_ms())
    assert refused.value.record.status == final
    stored = store.get(record.task_id)
    assert stored is not None
    assert stored.status == final
    assert stored.cancel_requested is False


def test_request_cancel_twice_is_not_waiting_the_second_time(store: DynamoTaskStore) -> None:
    record = make_record()
    store.put_new(record)
    store.request_cancel(record.task_id, ANONYMOUS, now_ms())
    with pytest.raises(TaskNotWaiting) as refused:
        store.request_cancel(record.task_id, ANONYMOUS, now_ms())
    assert refused.value.record.status == "cancelled"


# -- the worker's leg-conditioned writes -------------------------------------------------------


def test_stale_leg_writes_are_refused(store: DynamoTaskStore) -> None:
    # Given a task whose leg 0 parked (the current leg is now 1) and was answered
    record = parked(store)
    assert record.leg == 1
    store.record_answers(record.task_id, ANONYMOUS, {"a": answer(1)}, now_ms())
    # When a duplicate of leg 0 tries to write anything, Then it loses
    with pytest.raises(TaskNoLongerActive):
        store.finish(record.task_id, 0, status="completed", now_ms=now_ms(), result={"x": 1})
    with pytest.raises(TaskNoLongerActive):
        store.set_status_message(record.task_id, 0, "late", now_ms())
    with pytest.raises(TaskNoLongerActive):
        store.park(record.task_id, 0, {"z": ELICIT}, "tok-stale", now_ms())
    stored = store.get(record.task_id)
    assert stored is not None
    assert (stored.status, stored.result, stored.task_token, stored.status_message) == (
        "input_required",
        None,
        "tok-1",
        None,
    )
    # And the current leg may finish the task
    store.finish(record.task_id, 1, status="completed", now_ms=now_ms(), result={"x": 2})
    done = store.get(record.task_id)
    assert done is not None
    assert (done.status, done.result, done.task_token) == ("completed", {"x": 2}, None)


def test_current_leg_cannot_write_after_cancel_or_end(store: DynamoTaskStore) -> None:
    # Given a cancelled task
    record = make_record()
    store.put_new(record)
    store.request_cancel(record.task_id, ANONYMOUS, now_ms())
    # When its running leg reports or finishes, Then it loses and the task stays cancelled
    with pytest.raises(TaskNoLongerActive):
        store.set_status_message(record.task_id, 0, "still going", now_ms())
    with pytest.raises(TaskNoLongerActive):
        store.finish(record.task_id, 0, status="completed", now_ms=now_ms(), result={"x": 1})
    stored = store.get(record.task_id)
    assert stored is not None
    assert (stored.status, stored.result) == ("cancelled", None)

    # Given a completed task, When the same leg finishes again, Then it loses
    ended = make_record()
    store.put_new(ended)
    store.finish(ended.task_id, 0, status="completed", now_ms=now_ms(), result={"x": 1})
    with pytest.raises(TaskNoLongerActive):
        store.finish(ended.task_id, 0, status="failed", now_ms=now_ms(), error={"code": 1})
    final = store.get(ended.task_id)
    assert final is not None
    assert (final.status, final.result, final.error) == ("completed", {"x": 1}, None)


def test_park_clears_pre_answers_for_newly_asked_keys(store: DynamoTaskStore) -> None:
    # Given a task waiting for "a", and a client that also answers "b" before it is asked
    record = parked(store, ("a",))
    after = store.record_answers(
        record.task_id, ANONYMOUS, {"a": answer("a1"), "b": answer("early")}, now_ms()
    )
    # Then the early answer is never served to the tool (b was not asked)
    assert "b" not in after.journal
    # When the next leg asks "b" for the first time
    store.park(record.task_id, after.leg, {"b": ELICIT}, "tok-2", now_ms())
    # Then the early answer is gone, the earlier answer for "a" is kept, and "b" is outstanding
    stored = store.get(record.task_id)
    assert stored is not None
    assert "b" not in stored.answers
    assert stored.journal == {"a": answer("a1")}
    assert set(stored.input_requests) == {"b"}
    assert stored.asked_keys == frozenset({"a", "b"})
    assert (stored.task_token, stored.leg) == ("tok-2", 2)
    # And an answer given now is used
    answered = store.record_answers(record.task_id, ANONYMOUS, {"b": answer("b1")}, now_ms())
    assert answered.journal == {"a": answer("a1"), "b": answer("b1")}


# -- lost executions ---------------------------------------------------------------------------


def test_settle_lost_fails_an_active_task(store: DynamoTaskStore) -> None:
    record = parked(store)
    error = {"code": -32603, "message": "The task's execution ended without a result (failed)"}
    before = store.settle_lost(record.task_id, error, now_ms())
    assert before is not None
    assert before.status == "input_required"
    stored = store.get(record.task_id)
    assert stored is not None
    assert (stored.status, stored.error, stored.input_requests) == ("failed", error, {})
    # A second delivery of the same event changes nothing
    assert store.settle_lost(record.task_id, error, now_ms()) is None
    again = store.get(record.task_id)
    assert again is not None
    assert again.version == stored.version


def test_settle_lost_with_a_cancel_marker_ends_cancelled(store: DynamoTaskStore) -> None:
    # Given an active task that carries the cancel marker
    record = make_record(cancel_requested=True)
    store.put_new(record)
    # When its execution is lost, Then it ends cancelled, without an error
    before = store.settle_lost(record.task_id, {"code": -32603, "message": "lost"}, now_ms())
    assert before is not None
    assert before.cancel_requested is True
    stored = store.get(record.task_id)
    assert stored is not None
    assert (stored.status, stored.error) == ("cancelled", None)


@pytest.mark.parametrize("final", ["completed", "cancelled"])
def test_settle_lost_leaves_terminal_tasks_alone(store: DynamoTaskStore, final: str) -> None:
    record = make_record()
    store.put_new(record)
    if final == "completed":
        store.finish(record.task_id, 0, status="completed", now_ms=now_ms(), result={"x": 1})
    else:
        store.request_cancel(record.task_id, ANONYMOUS, now_ms())
    before = store.get(record.task_id)
    assert store.settle_lost(record.task_id, {"code": -32603, "message": "x"}, now_ms()) is None
    after = store.get(record.task_id)
    assert before is not None
    assert after is not None
    assert (after.status, after.version) == (final, before.version)
    assert store.settle_lost(new_task_id(), {"code": -32603, "message": "x"}, now_ms()) is None


# -- atomicity under concurrency ---------------------------------------------------------------
#
# DynamoDB evaluates a condition and applies the update as one atomic step per item; every race
# guard in the design rests on that. The embedded stack serves requests from several threads
# (HTTP server, state machine, worker), so its DynamoDB must behave the same.

ROUNDS = 60


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


def test_finish_and_cancel_at_the_same_moment_never_both_win(
    store: DynamoTaskStore, local_aws: LocalAws
) -> None:
    other = DynamoTaskStore(boto3.client("dynamodb", region_name=REGION), local_aws.table_name)
    anomalies: list[str] = []
    for _ in range(ROUNDS):
        # Given an active task
        record = make_record()
        store.put_new(record)
        # When its leg finishes while the client cancels it
        finished, cancelled = race(
            lambda r=record: store.finish(
                r.task_id, 0, status="completed", now_ms=now_ms(), result={"x": 1}
            ),
            lambda r=record: other.request_cancel(r.task_id, ANONYMOUS, now_ms()),
        )
        # Then each write either took effect or lost its condition, and exactly one took effect
        if not isinstance(finished, TaskNoLongerActive | type(None)):
            anomalies.append(f"finish raised {finished!r}")
        if not isinstance(cancelled, TaskNotWaiting | TaskRecord):
            anomalies.append(f"request_cancel raised {cancelled!r}")
        if finished is None and isinstance(cancelled, TaskRecord):
            anomalies.append("both the outcome and the cancel were written")
        stored = store.get(record.task_id)
        assert stored is not None
        if (stored.status == "cancelled") != (stored.result is None):
            anomalies.append(f"stored {stored.status} with result {stored.result}")
    assert anomalies == [], f"{len(anomalies)} anomalies in {ROUNDS} races: {anomalies[:3]}"


def test_answers_at_the_same_moment_first_one_wins_for_all(
    store: DynamoTaskStore, local_aws: LocalAws
) -> None:
    stores = [
        DynamoTaskStore(boto3.client("dynamodb", region_name=REGION), local_aws.table_name)
        for _ in range(3)
    ]
    anomalies: list[str] = []
    for _ in range(ROUNDS):
        # Given a task waiting for "a"
        record = parked(store)
        # When three updates answer "a" differently at the same moment
        outcomes = race(
            *(
                lambda s=s, n=n, r=record: s.record_answers(
                    r.task_id, ANONYMOUS, {"a": answer(n)}, now_ms()
                )
                for n, s in enumerate(stores)
            )
        )
        # Then every update succeeds and sees the same winning answer, the one stored
        records = [o for o in outcomes if isinstance(o, TaskRecord)]
        anomalies += [f"record_answers raised {o!r}" for o in outcomes if o not in records]
        stored = store.get(record.task_id)
        assert stored is not None
        seen = {r.answers["a"]["content"]["value"] for r in records}
        if seen - {stored.answers["a"]["content"]["value"]}:
            anomalies.append(f"callers saw answers {sorted(seen)}, stored {stored.answers['a']}")
    assert anomalies == [], f"{len(anomalies)} anomalies in {ROUNDS} races: {anomalies[:3]}"
