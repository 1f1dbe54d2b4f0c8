"""The TaskStore contract, run against both stores: the in-memory twin and DynamoDB (on moto,
with the table built from template.yaml). Guards and changes must mean the same in both, and
the same as `transitions.allows` / `transitions.applied` say."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_tasks_aws.tasks import transitions as t
from mcp_tasks_aws.tasks.exceptions import TaskAlreadyExists
from mcp_tasks_aws.tasks.memory import InMemoryTaskStore
from mcp_tasks_aws.tasks.model import TaskRecord, new_task_id
from mcp_tasks_aws.tasks.ports import Applied, TaskStore
from support.domain import ALICE, BOB, ELICIT, accept, elicit_request
from support.records import IN_DOMAIN_NOW
from support.tasks import now_ms

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

make_record = IN_DOMAIN_NOW.make  # created now (the stores compare expiry against the real clock)


@pytest.fixture(params=["memory", "dynamodb"])
def store(request: pytest.FixtureRequest) -> Iterator[TaskStore]:
    if request.param == "memory":
        yield InMemoryTaskStore()
    else:
        yield request.getfixturevalue("dynamo_store")


def parked(store: TaskStore, *keys: str, token: str = "tok-1", **overrides: Any) -> TaskRecord:
    """A stored task whose leg 0 asked `keys` (now input_required on leg 1)."""
    record = make_record(**overrides)
    store.put_new(record)
    requests = {k: elicit_request(k) for k in keys or ("a",)}
    applied = store.apply(record.task_id, *t.park(0, requests, token, {}, now_ms()))
    assert_changed(applied)
    return applied.record


def assert_changed(outcome: Applied | None, label: str = "") -> None:
    assert outcome is not None, label
    assert outcome.changed, label


def assert_refused(outcome: Applied | None, label: str = "") -> None:
    assert outcome is not None, label
    assert not outcome.changed, label


def answer(owner: str, **answers: Any) -> tuple[t.Guard, t.Changes]:
    return t.answer(owner, {k: (v, frozenset({ELICIT})) for k, v in answers.items()}, now_ms())


REFUSED = {"code": -32603, "message": "The client answered elicitation/create with an error"}


def refuse(owner: str, key: str, method: str = ELICIT) -> tuple[t.Guard, t.Changes]:
    return t.refuse(owner, key, method, REFUSED, now_ms())


# -- create and read ---------------------------------------------------------------------------


def test_put_new_refuses_a_reused_id(store: TaskStore) -> None:
    record = make_record()
    store.put_new(record)
    with pytest.raises(TaskAlreadyExists):
        store.put_new(make_record(task_id=record.task_id, owner=BOB, tool="other"))
    stored = store.get(record.task_id)
    assert stored is not None
    assert (stored.owner, stored.tool, stored.version) == (ALICE, "echo", 1)


def test_put_new_of_the_same_record_again_is_the_write_it_repeats(store: TaskStore) -> None:
    # The SDK retries a PutItem whose answer was lost; its condition then fails on the item
    # the first try wrote. That is this write, landed: one task, no error. An item that
    # differs in anything (another create's, or one moved on since) is still refused.
    record = make_record(
        arguments={"n": [1, 2.5]}, answers={"k": {"a": 1}}, asked_keys=frozenset({"k", "j"})
    )
    store.put_new(record)
    store.put_new(record)
    assert store.get(record.task_id) == record
    with pytest.raises(TaskAlreadyExists):
        store.put_new(make_record(task_id=record.task_id, arguments={"n": [1, 2.5, 3]}))
    assert_changed(store.apply(record.task_id, *t.report(0, "busy", now_ms())))
    with pytest.raises(TaskAlreadyExists):
        store.put_new(record)  # a create does not undo a move


def test_a_record_reads_back_exactly(store: TaskStore) -> None:
    record = make_record(
        arguments={"seconds": 1.5, "nested": {"n": [1, 2.25, None, True]}},
        answers={"step:x": {"receipt": 7}},
        asked_keys=frozenset({"step:x"}),
        status_message="warming up",
    )
    store.put_new(record)
    assert store.get(record.task_id) == record
    assert type(record.arguments["seconds"]) is float
    direct = make_record(held_by="direct", poll_interval_max_ms=10_000)
    store.put_new(direct)
    assert store.get(direct.task_id) == direct


def test_get_many_returns_the_existing_ones(store: TaskStore) -> None:
    first, second = make_record(), make_record()
    store.put_new(first)
    store.put_new(second)
    found = store.get_many([first.task_id, new_task_id(), second.task_id, first.task_id])
    assert found == {first.task_id: first, second.task_id: second}
    assert store.get_many([]) == {}
    assert store.get(new_task_id()) is None


def test_peek_many_reads_the_heads_of_the_existing_ones(store: TaskStore) -> None:
    waiting = parked(store, "a")
    answered = parked(store, "a")
    store.apply(answered.task_id, *answer(ALICE, a=accept()))
    working = make_record(ttl_ms=None)
    store.put_new(working)
    heads = store.peek_many([waiting.task_id, answered.task_id, working.task_id, new_task_id()])
    expected = {r.task_id: r.head() for r in store.get_many(list(heads)).values()}
    assert heads == expected
    assert len(heads) == 3
    # A waiting task whose every request is answered shows as working, as tasks/get says
    assert heads[answered.task_id].status == "working"
    assert heads[working.task_id].expires_at is None


def test_apply_to_a_missing_task_finds_nothing(store: TaskStore) -> None:
    assert store.apply(new_task_id(), *t.cancel(ALICE, now_ms())) is None


# -- the moves ---------------------------------------------------------------------------------


def test_a_refused_move_returns_the_record_as_it_is_and_writes_nothing(store: TaskStore) -> None:
    record = make_record()
    store.put_new(record)
    refused = store.apply(record.task_id, *t.report(5, "stale leg", now_ms()))
    assert refused is not None
    assert (refused.changed, refused.record) == (False, record)
    assert store.get(record.task_id) == record


def test_answers_first_answer_wins_and_unasked_keys_are_never_stored(store: TaskStore) -> None:
    # Given a task waiting for "a" and "b"
    record = parked(store, "a", "b")
    # When "a" is answered
    first = store.apply(record.task_id, *answer(ALICE, a=accept(v="first")))
    assert_changed(first)
    assert set(first.record.input_requests) == {"b"}
    assert first.record.answers == {"a": accept(v="first")}
    # When "a" is answered again, together with "b": refused as a whole, nothing written
    again = store.apply(record.task_id, *answer(ALICE, a=accept(v="second"), b=accept(v="b")))
    assert_refused(again)
    assert again.record == first.record
    # When a key that was never asked is answered: refused, never stored
    junk = store.apply(record.task_id, *answer(ALICE, zzz=accept(v="junk")))
    assert_refused(junk)
    stored = store.get(record.task_id)
    assert stored is not None
    assert stored.answers == {"a": accept(v="first")}


def test_an_answer_of_another_kind_is_refused(store: TaskStore) -> None:
    record = parked(store, "a")
    guard, changes = t.answer(ALICE, {"a": ({"roots": []}, frozenset({"roots/list"}))}, now_ms())
    refused = store.apply(record.task_id, guard, changes)
    assert_refused(refused)


def test_client_moves_hold_only_for_the_owner_of_a_live_task(store: TaskStore) -> None:
    # Someone else's task
    mine = parked(store, "a")
    for move in (answer(BOB, a=accept()), t.cancel(BOB, now_ms()), refuse(BOB, "a")):
        refused = store.apply(mine.task_id, *move)
        assert_refused(refused)
    # An expired task (native TTL deletes late)
    old = now_ms() - 120_000
    expired = parked(store, "a", created_at=old, updated_at=old, ttl_ms=60_000)
    for move in (answer(ALICE, a=accept()), t.cancel(ALICE, now_ms()), refuse(ALICE, "a")):
        refused = store.apply(expired.task_id, *move)
        assert_refused(refused)
    # An unlimited task never expires
    forever = parked(store, "a", ttl_ms=None)
    cancelled = store.apply(forever.task_id, *t.cancel(ALICE, now_ms()))
    assert_changed(cancelled)


def test_legs_are_fenced(store: TaskStore) -> None:
    # Given a task whose leg 0 parked (the current leg is now 1) and was answered
    record = parked(store, "a")
    store.apply(record.task_id, *answer(ALICE, a=accept()))
    # When leg 0 writes anything, Then it is refused
    for move in (
        t.report(0, "late", now_ms()),
        t.park(0, {"z": elicit_request()}, "tok-stale", {}, now_ms()),
        t.complete(0, now_ms(), result={"x": 0}),
    ):
        refused = store.apply(record.task_id, *move)
        assert_refused(refused)
    # And leg 1 may finish the task
    done = store.apply(record.task_id, *t.complete(1, now_ms(), result={"x": 1}))
    assert_changed(done)
    assert (done.record.status, done.record.result, done.record.task_token) == (
        "completed",
        {"x": 1},
        None,
    )


@pytest.mark.parametrize("ending", ["cancel", "complete", "fail", "lose", "refuse"])
def test_terminal_is_final(store: TaskStore, ending: str) -> None:
    record = parked(store, "a")
    endings = {
        "refuse": refuse(ALICE, "a"),
        "cancel": t.cancel(ALICE, now_ms()),
        "complete": t.complete(1, now_ms(), result={"x": 1}),
        "fail": t.fail(1, {"code": -32603, "message": "x"}, now_ms()),
        "lose": t.lose({"code": -32603, "message": "lost"}, now_ms()),
    }
    ended = store.apply(record.task_id, *endings[ending])
    assert_changed(ended)
    for name, move in endings.items():
        refused = store.apply(record.task_id, *move)
        assert_refused(refused, name)
    refused = store.apply(record.task_id, *answer(ALICE, a=accept()))
    assert_refused(refused)
    assert store.get(record.task_id) == ended.record


def test_each_move_writes_what_the_table_says(store: TaskStore) -> None:
    """The store's writes equal `transitions.applied` for every move, field by field."""
    now = now_ms()
    base = make_record(
        answers={"early": accept()}, asked_keys=frozenset({"step:a"}), status_message="x"
    )
    cases = {
        "park": t.park(
            0, {"early": elicit_request(), "b": elicit_request()}, "tk", {"step:b": 2}, now
        ),
        "report": t.report(0, "halfway", now),
        "complete": t.complete(0, now, result={"content": [{"type": "text", "text": "ok"}]}),
        "offloaded": t.complete(0, now, result_ref="results/x.json"),
        "fail": t.fail(0, {"code": -32603, "message": "broken"}, now),
        "lose": t.lose({"code": -32603, "message": "lost"}, now),
        "lose_direct": t.lose_direct({"code": -32603, "message": "lost"}, now),
        "cancel": t.cancel(ALICE, now),
        "tool error": t.complete(0, now, result={"content": [], "isError": True}),
        "offloaded tool error": t.complete(0, now, result_ref="results/y.json", tool_error=True),
        "claim": t.claim(now),
        "park_direct": t.park(0, {"b": elicit_request()}, None, {"step:b": 2}, now),
    }
    for name, (guard, changes) in cases.items():
        record = make_record(
            **{k: getattr(base, k) for k in ("answers", "asked_keys", "status_message")},
            held_by="direct",
        )
        store.put_new(record)
        written = store.apply(record.task_id, guard, changes)
        assert_changed(written, name)
        assert written.record == t.applied(record, changes), name
        assert store.get(record.task_id) == written.record, name


def test_attach_writes_what_the_table_says(store: TaskStore) -> None:
    record = parked_directly(store, "a", "b")
    guard, changes = t.attach(record.leg, ["a", "b"], "tok-x", now_ms())
    attached = store.apply(record.task_id, guard, changes)
    assert_changed(attached)
    assert attached.record == t.applied(record, changes)
    assert (attached.record.task_token, attached.record.held_by) == ("tok-x", "execution")


# -- the direct path ---------------------------------------------------------------------------


def parked_directly(store: TaskStore, *keys: str) -> TaskRecord:
    """A task whose direct leg claimed it and asked `keys` (no execution holds it yet)."""
    record = make_record(held_by="direct")
    store.put_new(record)
    claimed = store.apply(record.task_id, *t.claim(now_ms()))
    assert_changed(claimed)
    requests = {k: elicit_request(k) for k in keys}
    parked_ = store.apply(record.task_id, *t.park(1, requests, None, {}, now_ms()))
    assert_changed(parked_)
    assert (parked_.record.task_token, parked_.record.held_by) == (None, "direct")
    return parked_.record


def test_a_direct_leg_claims_its_task_once(store: TaskStore) -> None:
    # Given a task held by its direct leg
    record = make_record(held_by="direct")
    store.put_new(record)
    # When its (duplicated) invoke claims it twice, Then only the first claim holds
    first = store.apply(record.task_id, *t.claim(now_ms()))
    assert_changed(first)
    assert first.record.leg == 1
    assert_refused(store.apply(record.task_id, *t.claim(now_ms())))
    # And a task an execution runs, or one cancelled first, cannot be claimed at all
    machine = make_record()
    store.put_new(machine)
    assert_refused(store.apply(machine.task_id, *t.claim(now_ms())))
    cancelled = make_record(held_by="direct")
    store.put_new(cancelled)
    store.apply(cancelled.task_id, *t.cancel(ALICE, now_ms()))
    assert_refused(store.apply(cancelled.task_id, *t.claim(now_ms())))


def test_attach_is_refused_once_a_key_it_read_was_answered(store: TaskStore) -> None:
    # Given a task the direct leg parked on "a" and "b", with "a" answered meanwhile
    record = parked_directly(store, "a", "b")
    store.apply(record.task_id, *answer(ALICE, a=accept()))
    # When the execution attaches what it read, Then it is refused and writes nothing
    refused = store.apply(record.task_id, *t.attach(record.leg, ["a", "b"], "tok", now_ms()))
    assert_refused(refused)
    assert refused.record.task_token is None
    # And attaching what is still outstanding holds
    assert_changed(store.apply(record.task_id, *t.attach(record.leg, ["b"], "tok", now_ms())))


def test_attach_holds_only_while_the_task_holds_the_token_it_read(store: TaskStore) -> None:
    # Given a task the direct leg parked (no token), attached by one copy of a leg
    record = parked_directly(store, "a")
    assert_changed(store.apply(record.task_id, *t.attach(record.leg, ["a"], "tok-1", now_ms())))
    # When another copy, which read no token, attaches: Then it is refused (the first holds)
    refused = store.apply(record.task_id, *t.attach(record.leg, ["a"], "tok-2", now_ms()))
    assert_refused(refused)
    assert refused.record.task_token == "tok-1"
    # And replacing the token it read, it holds
    moved = t.attach(record.leg, ["a"], "tok-2", now_ms(), replacing="tok-1")
    assert_changed(store.apply(record.task_id, *moved))
    assert store.get(record.task_id).task_token == "tok-2"  # type: ignore[union-attr]
    # But not replacing a token the task no longer holds
    stale = t.attach(record.leg, ["a"], "tok-3", now_ms(), replacing="tok-1")
    assert_refused(store.apply(record.task_id, *stale))


def test_a_failed_direct_invoke_ends_only_a_task_no_execution_holds(store: TaskStore) -> None:
    error = {"code": -32603, "message": "lost"}
    # A task still held by its direct leg (parked, its execution not attached yet) fails
    record = parked_directly(store, "a")
    failed = store.apply(record.task_id, *t.lose_direct(error, now_ms()))
    assert_changed(failed)
    assert (failed.record.status, failed.record.error) == ("failed", error)
    # One the execution holds is left to that execution
    attached = parked_directly(store, "a")
    store.apply(attached.task_id, *t.attach(attached.leg, ["a"], "tok", now_ms()))
    assert_refused(store.apply(attached.task_id, *t.lose_direct(error, now_ms())))
    # As is every task created for an execution
    machine = make_record()
    store.put_new(machine)
    assert_refused(store.apply(machine.task_id, *t.lose_direct(error, now_ms())))


# -- listing one owner's tasks -----------------------------------------------------------------


def test_list_by_owner_pages_newest_first_without_gaps_or_repeats(store: TaskStore) -> None:
    owner = f"jwt:lister|{new_task_id()}|app"
    start = now_ms()
    mine = [make_record(owner=owner, created_at=start + i, updated_at=start + i) for i in range(7)]
    for record in [*mine, make_record(owner=BOB)]:
        store.put_new(record)
    seen: list[str] = []
    after: str | None = None
    for _ in range(10):
        page = store.list_by_owner(owner, limit=3, after=after)
        assert len(page.tasks) <= 3
        seen += [summary.task_id for summary in page.tasks]
        assert all(summary.owner == owner for summary in page.tasks)
        after = page.after
        if after is None:
            break
    assert seen == [r.task_id for r in reversed(mine)]


def test_list_by_owner_leaves_expired_tasks_out_and_refuses_foreign_positions(
    store: TaskStore,
) -> None:
    owner = f"jwt:lister|{new_task_id()}|app"
    old = now_ms() - 120_000
    live = make_record(owner=owner)
    store.put_new(live)
    store.put_new(make_record(owner=owner, created_at=old, updated_at=old, ttl_ms=60_000))
    page = store.list_by_owner(owner, limit=10)
    assert [s.task_id for s in page.tasks] == [live.task_id]
    assert page.tasks[0] == live.summary()
    for junk in ("", "not-a-position", "eyJ4IjoxfQ==", "12/"):
        with pytest.raises(ValueError):
            store.list_by_owner(owner, limit=10, after=junk)


def test_a_listing_shows_what_get_shows(store: TaskStore) -> None:
    owner = f"jwt:lister|{new_task_id()}|app"
    record = parked(store, "a", owner=owner)
    answered = store.apply(record.task_id, *answer(owner, a=accept()))
    assert_changed(answered)
    (summary,) = store.list_by_owner(owner, limit=5).tasks
    assert summary.status == answered.record.visible_status == "working"


def test_a_listing_says_which_results_are_tool_errors(store: TaskStore) -> None:
    owner = f"jwt:lister|{new_task_id()}|app"
    ok, failing, offloaded = (make_record(owner=owner) for _ in range(3))
    endings = {
        ok.task_id: t.complete(0, now_ms(), result={"content": []}),
        failing.task_id: t.complete(0, now_ms(), result={"content": [], "isError": True}),
        offloaded.task_id: t.complete(0, now_ms(), result_ref="results/z.json", tool_error=True),
    }
    for record in (ok, failing, offloaded):
        store.put_new(record)
        assert_changed(store.apply(record.task_id, *endings[record.task_id]))
    listed = {s.task_id: s.tool_error for s in store.list_by_owner(owner, limit=5).tasks}
    assert listed == {ok.task_id: False, failing.task_id: True, offloaded.task_id: True}


def test_refuse_fails_a_waiting_task_once_and_only_for_an_outstanding_key(
    store: TaskStore,
) -> None:
    # Given a task waiting for "a" and "b"
    record = parked(store, "a", "b")
    # A refusal of a key never asked, or asked by another method, changes nothing
    assert_refused(store.apply(record.task_id, *refuse(ALICE, "zzz")))
    assert_refused(store.apply(record.task_id, *refuse(ALICE, "a", "roots/list")))
    # When "a" is answered, a refusal of "a" comes too late
    answered = store.apply(record.task_id, *answer(ALICE, a=accept()))
    assert_changed(answered)
    assert_refused(store.apply(record.task_id, *refuse(ALICE, "a")))
    # When "b" is refused, the task fails with the client's error, keeping its token
    guard, changes = refuse(ALICE, "b")
    failed = store.apply(record.task_id, guard, changes)
    assert_changed(failed)
    assert failed.record == t.applied(answered.record, changes)
    assert (failed.record.status, failed.record.error) == ("failed", REFUSED)
    assert failed.record.waiting_on_token
    # And it is final: a late answer and a second refusal are refused
    assert_refused(store.apply(record.task_id, *answer(ALICE, b=accept())))
    assert_refused(store.apply(record.task_id, *refuse(ALICE, "b")))


# -- pairs of moves, in either order -----------------------------------------------------------


def apply_in_order_agrees_with_the_table(
    store: TaskStore,
    record: TaskRecord,
    moves: dict[str, tuple[t.Guard, t.Changes]],
    *order: str,
) -> None:
    """Apply `moves` in `order`: each lands exactly when `transitions.allows` says it may."""
    expected = record
    for name in order:
        guard, changes = moves[name]
        outcome = store.apply(record.task_id, guard, changes)
        assert outcome is not None
        allowed = t.allows(guard, expected)
        assert outcome.changed is allowed, (order, name)
        if allowed:
            expected = t.applied(expected, changes)
        assert outcome.record == expected


@pytest.mark.parametrize(
    ("first", "second"),
    list(itertools.permutations(["answer", "cancel", "complete", "lose", "refuse", "report"], 2)),
)
def test_two_moves_in_either_order_agree_with_the_table(
    store: TaskStore, first: str, second: str
) -> None:
    record = parked(store, "a")
    moves = {
        "answer": answer(ALICE, a=accept()),
        "cancel": t.cancel(ALICE, now_ms()),
        "complete": t.complete(1, now_ms(), result={"x": 1}),
        "lose": t.lose({"code": -32603, "message": "lost"}, now_ms()),
        "report": t.report(1, "busy", now_ms()),
        "refuse": refuse(ALICE, "a"),
    }
    apply_in_order_agrees_with_the_table(store, record, moves, first, second)


@pytest.mark.parametrize(
    ("first", "second"),
    list(itertools.permutations(["answer", "attach", "cancel", "complete", "lose_direct"], 2)),
)
def test_two_moves_on_a_directly_parked_task_agree_with_the_table(
    store: TaskStore, first: str, second: str
) -> None:
    record = parked_directly(store, "a")
    moves = {
        "answer": answer(ALICE, a=accept()),
        "attach": t.attach(record.leg, ["a"], "tok", now_ms()),
        "cancel": t.cancel(ALICE, now_ms()),
        "complete": t.complete(record.leg, now_ms(), result={"x": 1}),
        "lose_direct": t.lose_direct({"code": -32603, "message": "lost"}, now_ms()),
    }
    apply_in_order_agrees_with_the_table(store, record, moves, first, second)
