"""The transition table, as pure code: which moves each status allows, what each move writes."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_tasks_aws.protocol.names import ACTIVE_STATUSES, TERMINAL_STATUSES
from mcp_tasks_aws.tasks import transitions as t
from mcp_tasks_aws.tasks.model import TaskRecord, shown_status
from support.domain import ALICE, BOB, ELICIT, START_MS, accept, elicit_request
from support.records import make_record

NOW = START_MS + 1_000
REFUSED = {"code": -32603, "message": "The client answered elicitation/create with an error"}
STATUSES = sorted(ACTIVE_STATUSES | TERMINAL_STATUSES)


def waiting(*keys: str, **overrides: Any) -> TaskRecord:
    values: dict[str, Any] = {
        "status": "input_required",
        "input_requests": {k: elicit_request() for k in keys},
        "asked_keys": frozenset(keys),
        "task_token": "tok",
        "leg": 1,
    }
    return make_record(**{**values, **overrides})


def every_move(leg: int = 1) -> dict[str, tuple[t.Guard, t.Changes]]:
    return {
        "answer": t.answer(ALICE, {"a": (accept(ok=True), frozenset({ELICIT}))}, NOW),
        "refuse": t.refuse(ALICE, "a", ELICIT, REFUSED, NOW),
        "cancel": t.cancel(ALICE, NOW),
        "claim": t.claim(NOW),
        "report": t.report(leg, "busy", NOW),
        "park": t.park(leg, {"b": elicit_request()}, "tok-2", {}, NOW),
        "attach": t.attach(leg, ["a"], "tok-3", NOW, replacing="tok"),
        "complete": t.complete(leg, NOW, result={"content": []}),
        "fail": t.fail(leg, {"code": -32603, "message": "x"}, NOW),
        "lose": t.lose({"code": -32603, "message": "lost"}, NOW),
        "lose_direct": t.lose_direct({"code": -32603, "message": "lost"}, NOW),
        "lose_stranded": t.lose_stranded(make_record(), {"code": -32603, "message": "x"}, NOW),
        "adopt": t.adopt(make_record(leg=leg), NOW),
    }


# -- the table ---------------------------------------------------------------------------------


def test_every_move_is_in_the_table_and_every_builder_names_its_move() -> None:
    built = every_move()
    assert set(built) == set(t.MOVES)
    for name, (guard, changes) in built.items():
        assert changes.move == name
        assert guard.statuses == t.MOVES[name].sources


def test_each_move_is_fenced_by_what_the_table_says() -> None:
    for name, (guard, _) in every_move().items():
        fences = set(t.MOVES[name].fenced_by)
        assert (guard.owner is not None) is ("owner" in fences), name
        assert (guard.leg is not None) is ("leg" in fences), name
        assert bool(guard.outstanding) is ("keys" in fences), name
        assert (guard.held_by == "direct") is ("direct" in fences), name
        assert (guard.version is not None) is ("version" in fences), name


def test_no_move_leaves_a_terminal_status() -> None:
    for name, move in t.MOVES.items():
        assert not (move.sources & TERMINAL_STATUSES), name


@pytest.mark.parametrize("status", STATUSES)
@pytest.mark.parametrize("move", sorted(t.MOVES))
def test_a_move_is_allowed_exactly_from_its_source_statuses(status: str, move: str) -> None:
    # Given a record in `status`, owned by alice, on its first leg, held by its direct leg,
    # with key "a" outstanding (every guard part but the statuses holds)
    record = waiting("a", status=status, leg=t.FIRST_LEG, held_by="direct")
    guard, _ = every_move(t.FIRST_LEG)[move]
    # Then the move's guard holds exactly when the table lists that status as a source
    assert t.allows(guard, record) is (status in t.MOVES[move].sources)


@pytest.mark.parametrize(
    ("move", "target"),
    [(name, move.target) for name, move in t.MOVES.items() if move.target is not None],
)
def test_a_move_ends_in_its_target_status(move: str, target: str) -> None:
    _, changes = every_move()[move]
    after = t.applied(waiting("a"), changes)
    assert after.status == target


# -- guards ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("record", "guard", "allowed"),
    [
        (waiting("a"), t.cancel(ALICE, NOW)[0], True),
        (waiting("a"), t.cancel(BOB, NOW)[0], False),  # someone else's task
        (waiting("a", leg=2), t.report(1, "late", NOW)[0], False),  # a stale leg
        (waiting("a", leg=1), t.report(1, "now", NOW)[0], True),
        # expired a second ago: no client move, whoever asks
        (waiting("a", ttl_ms=500), t.cancel(ALICE, NOW)[0], False),
        (waiting("a", ttl_ms=None), t.cancel(ALICE, NOW + 10**12)[0], True),  # never expires
        # answers: every key outstanding, asked by a request of a fitting kind
        (waiting("a"), t.answer(ALICE, {"a": (1, None)}, NOW)[0], True),
        (waiting("a"), t.answer(ALICE, {"b": (1, None)}, NOW)[0], False),
        (waiting("a"), t.answer(ALICE, {"a": (1, None), "b": (1, None)}, NOW)[0], False),
        (waiting("a"), t.answer(ALICE, {"a": (1, frozenset({"roots/list"}))}, NOW)[0], False),
        (waiting("a"), t.answer(ALICE, {"a": (1, frozenset({ELICIT}))}, NOW)[0], True),
        # refusals: the refused key outstanding, asked by that method, on the owner's task
        (waiting("a"), t.refuse(ALICE, "a", ELICIT, REFUSED, NOW)[0], True),
        (waiting("a"), t.refuse(BOB, "a", ELICIT, REFUSED, NOW)[0], False),
        (waiting("a"), t.refuse(ALICE, "b", ELICIT, REFUSED, NOW)[0], False),
        (waiting("a"), t.refuse(ALICE, "a", "roots/list", REFUSED, NOW)[0], False),
        (waiting("a", ttl_ms=500), t.refuse(ALICE, "a", ELICIT, REFUSED, NOW)[0], False),
        # the direct leg starts once, and only while it holds the task
        (make_record(held_by="direct"), t.claim(NOW)[0], True),
        (make_record(held_by="direct", leg=1), t.claim(NOW)[0], False),  # claimed already
        (make_record(), t.claim(NOW)[0], False),  # an execution runs this task
        # an execution attaches while the requests it read are outstanding, and the task holds
        # the token it read (none, or another copy of the leg's)
        (waiting("a", "b", task_token=None), t.attach(1, ["a", "b"], "tok", NOW)[0], True),
        (waiting("b", task_token=None), t.attach(1, ["a", "b"], "tok", NOW)[0], False),
        (waiting("a", task_token=None), t.attach(2, ["a"], "tok", NOW)[0], False),
        (waiting("a"), t.attach(1, ["a"], "tok-2", NOW, replacing="tok")[0], True),
        (waiting("a"), t.attach(1, ["a"], "tok-2", NOW)[0], False),  # another copy attached
        (waiting("a"), t.attach(1, ["a"], "tok-3", NOW, replacing="tok-2")[0], False),
        # a failed direct invoke ends only a task no execution holds
        (make_record(held_by="direct"), t.lose_direct({}, NOW)[0], True),
        (waiting("a", held_by="direct"), t.lose_direct({}, NOW)[0], True),
        (waiting("a"), t.lose_direct({}, NOW)[0], False),
        # the sweeper fails only what it read: still leg 0, nothing shown changed since
        (make_record(version=2), t.lose_stranded(make_record(version=2), {}, NOW)[0], True),
        (make_record(version=3), t.lose_stranded(make_record(version=2), {}, NOW)[0], False),
        (make_record(leg=1), t.lose_stranded(make_record(), {}, NOW)[0], False),  # claimed
    ],
)
def test_guard_parts(record: TaskRecord, guard: t.Guard, allowed: bool) -> None:
    assert t.allows(guard, record) is allowed


# -- changes -----------------------------------------------------------------------------------


def test_every_move_a_client_sees_bumps_the_version_and_stamps_the_time() -> None:
    record = waiting("a")
    for name, (_, changes) in every_move().items():
        after = t.applied(record, changes)
        if name in ("claim", "attach", "adopt"):  # who runs it: nothing a listener must hear
            assert not changes.shown
            assert (after.version, after.updated_at) == (record.version, record.updated_at), name
        else:
            assert (after.version, after.updated_at) == (record.version + 1, NOW), name


def test_answer_records_the_answer_and_the_key_leaves_the_requests() -> None:
    record = waiting("a", "b")
    _, changes = t.answer(ALICE, {"a": (accept(ok=True), None)}, NOW)
    after = t.applied(record, changes)
    assert after.answers == {"a": accept(ok=True)}
    assert set(after.input_requests) == {"b"}
    assert after.status == "input_required"
    assert after.visible_status == "input_required"
    _, last = t.answer(ALICE, {"b": (accept(ok=False), None)}, NOW)
    done = t.applied(after, last)
    # Nothing outstanding: still stored as waiting, shown as working (the next leg starts)
    assert (done.status, done.visible_status, done.input_requests) == (
        "input_required",
        "working",
        {},
    )


def test_park_moves_the_leg_on_and_drops_answers_given_before_a_key_was_asked() -> None:
    record = make_record(
        answers={"b": accept(ok=True), "step:x": 1}, asked_keys=frozenset({"step:x"})
    )
    _, changes = t.park(0, {"b": elicit_request()}, "tok", {"step:y": "receipt"}, NOW)
    after = t.applied(record, changes)
    assert (after.leg, after.task_token, after.status) == (1, "tok", "input_required")
    assert after.answers == {"step:x": 1, "step:y": "receipt"}
    assert after.asked_keys == frozenset({"step:x", "step:y", "b"})


def test_a_direct_leg_claims_then_parks_without_a_token_and_the_execution_attaches() -> None:
    created = make_record(held_by="direct")
    claimed = t.applied(created, t.claim(NOW)[1])
    assert (claimed.leg, claimed.status, claimed.held_by) == (1, "working", "direct")
    parked = t.applied(claimed, t.park(1, {"a": elicit_request()}, None, {}, NOW)[1])
    assert (parked.status, parked.leg, parked.task_token) == ("input_required", 2, None)
    assert not parked.waiting_on_token  # nothing to interrupt: no execution holds it yet
    attached = t.applied(parked, t.attach(2, ["a"], "tok", NOW)[1])
    assert (attached.task_token, attached.held_by, attached.leg) == ("tok", "execution", 2)
    assert attached.waiting_on_token


def test_attach_needs_the_keys_it_read() -> None:
    with pytest.raises(ValueError):
        t.attach(1, [], "tok", NOW)


@pytest.mark.parametrize("move", ["complete", "fail", "lose", "lose_direct"])
def test_an_ending_clears_what_only_a_waiting_task_needs(move: str) -> None:
    _, changes = every_move()[move]
    after = t.applied(waiting("a"), changes)
    assert (after.input_requests, after.task_token) == ({}, None)


def test_completion_clears_a_stale_progress_message() -> None:
    record = make_record(status_message="migrating schema")
    after = t.applied(record, t.complete(0, NOW, result={"content": []})[1])
    assert after.status_message is None
    failed = t.applied(record, t.fail(0, {"code": -32603, "message": "broken"}, NOW)[1])
    assert failed.status_message == "broken"


def test_cancel_keeps_what_releasing_the_execution_needs() -> None:
    _, changes = t.cancel(ALICE, NOW)
    after = t.applied(waiting("a"), changes)
    assert after.status == "cancelled"
    assert after.status_message == t.CANCELLED_MESSAGE
    assert (after.task_token, set(after.input_requests)) == ("tok", {"a"})
    assert after.waiting_on_token


def test_fail_and_lose_record_the_error_and_say_it() -> None:
    error = {"code": -32603, "message": "The task's execution ended without a result (failed)"}
    for guard_and_changes in (t.fail(1, error, NOW), t.lose(error, NOW), t.lose_direct(error, NOW)):
        after = t.applied(waiting("a"), guard_and_changes[1])
        assert (after.status, after.error, after.status_message) == (
            "failed",
            error,
            error["message"],
        )


@pytest.mark.parametrize(
    ("status", "outstanding", "shown"),
    [
        ("working", False, "working"),
        ("input_required", True, "input_required"),
        ("input_required", False, "working"),
        ("completed", False, "completed"),
        ("cancelled", True, "cancelled"),
    ],
)
def test_shown_status(status: Any, outstanding: bool, shown: str) -> None:
    assert shown_status(status, outstanding) == shown


def test_refuse_fails_the_task_and_keeps_what_releasing_the_execution_needs() -> None:
    _, changes = t.refuse(ALICE, "a", ELICIT, REFUSED, NOW)
    after = t.applied(waiting("a", "b"), changes)
    assert (after.status, after.error, after.status_message) == (
        "failed",
        REFUSED,
        REFUSED["message"],
    )
    assert (after.task_token, set(after.input_requests)) == ("tok", {"a", "b"})
    assert after.waiting_on_token


@pytest.mark.parametrize(
    ("result", "given", "tool_error"),
    [
        ({"content": []}, None, False),
        ({"content": [], "isError": False}, None, False),
        ({"content": [], "isError": True}, None, True),
        (None, True, True),  # offloaded: the worker says so
        (None, False, False),
    ],
)
def test_completion_keeps_whether_the_result_is_a_tool_error(
    result: Any, given: bool | None, tool_error: bool
) -> None:
    ref = None if result is not None else "results/x.json"
    _, changes = t.complete(0, NOW, result=result, result_ref=ref, tool_error=given)
    after = t.applied(make_record(), changes)
    assert after.tool_error is tool_error
    assert after.summary().tool_error is tool_error
