"""The transition table, as pure code: which moves each status allows, what each move writes."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_tasks_aws.protocol.names import ACTIVE_STATUSES, TERMINAL_STATUSES
from mcp_tasks_aws.tasks import transitions as t
from mcp_tasks_aws.tasks.model import TaskRecord
from tasks.domain import ALICE, BOB, ELICIT, START_MS, accept, elicit_request, make_record

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


def every_move() -> dict[str, tuple[t.Guard, t.Changes]]:
    return {
        "answer": t.answer(ALICE, {"a": (accept(ok=True), frozenset({ELICIT}))}, NOW),
        "refuse": t.refuse(ALICE, "a", ELICIT, REFUSED, NOW),
        "cancel": t.cancel(ALICE, NOW),
        "report": t.report(1, "busy", NOW),
        "park": t.park(1, {"b": elicit_request()}, "tok-2", {}, NOW),
        "complete": t.complete(1, NOW, result={"content": []}),
        "fail": t.fail(1, {"code": -32603, "message": "x"}, NOW),
        "lose": t.lose({"code": -32603, "message": "lost"}, NOW),
    }


# -- the table ---------------------------------------------------------------------------------


def test_every_move_is_in_the_table_and_every_builder_names_its_move() -> None:
    built = every_move()
    assert set(built) == set(t.MOVES)
    for name, (guard, changes) in built.items():
        assert changes.move == name
        assert guard.statuses == t.MOVES[name].sources


def test_no_move_leaves_a_terminal_status() -> None:
    for name, move in t.MOVES.items():
        assert not (move.sources & TERMINAL_STATUSES), name


@pytest.mark.parametrize("status", STATUSES)
@pytest.mark.parametrize("move", sorted(t.MOVES))
def test_a_move_is_allowed_exactly_from_its_source_statuses(status: str, move: str) -> None:
    # Given a record in `status`, owned by alice, on leg 1, with key "a" outstanding
    record = waiting("a", status=status)
    guard, _ = every_move()[move]
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
    ],
)
def test_guard_parts(record: TaskRecord, guard: t.Guard, allowed: bool) -> None:
    assert t.allows(guard, record) is allowed


# -- changes -----------------------------------------------------------------------------------


def test_every_move_bumps_the_version_and_stamps_the_time() -> None:
    record = waiting("a")
    for name, (_, changes) in every_move().items():
        after = t.applied(record, changes)
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


@pytest.mark.parametrize("move", ["complete", "fail", "lose"])
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
    for guard_and_changes in (t.fail(1, error, NOW), t.lose(error, NOW)):
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
    assert t.shown_status(status, outstanding) == shown


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
