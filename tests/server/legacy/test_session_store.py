"""The `LegacySessionStore` contract, held by both implementations: the DynamoDB adapter (on
moto, the table built from template.yaml) and the in-memory twin the tests and table-less
servers use. Each case runs against both."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

import boto3
import pytest

from mcp_tasks_aws.aws.sessions import DynamoLegacySessionStore
from mcp_tasks_aws.local.aws import REGION, LocalAws
from mcp_tasks_aws.server.legacy.sessions import (
    CallConflict,
    CallTooLarge,
    InMemoryLegacySessionStore,
    LegacySessionStore,
    ParkedCall,
    SessionEnded,
    SessionState,
)
from support.clock import Clock

NOW = 1_800_000_000
LATER = NOW + 3600
ELICIT = {"method": "elicitation/create", "params": {"message": "Name?", "requestedSchema": {}}}
ROOTS = {"method": "roots/list", "params": {}}


@pytest.fixture
def clock() -> Clock:
    return Clock(float(NOW))


@pytest.fixture(params=["memory", "dynamodb"])
def sessions(request: pytest.FixtureRequest, clock: Clock) -> LegacySessionStore:
    if request.param == "memory":
        return InMemoryLegacySessionStore(clock=clock)
    aws: LocalAws = request.getfixturevalue("local_aws")
    return DynamoLegacySessionStore(
        boto3.client("dynamodb", region_name=REGION), aws.table_name, clock=clock
    )


_counter = iter(range(1_000_000))


def parked(**overrides: Any) -> ParkedCall:
    n = next(_counter)
    values: dict[str, Any] = {
        "ref": f"call-{n}-{os.urandom(4).hex()}",
        "sid": f"session-{n}",
        "request_id": 7,
        "method": "tools/call",
        "params": {"name": "ask", "arguments": {"ratio": 0.25, "n": 3}, "_meta": {}},
        "request_state": "v1.state.mac",
        "asked": {"first": ELICIT, "second": ROOTS},
        "round": 0,
        "expires_at": LATER,
    }
    values.update(overrides)
    return ParkedCall(**values)


# -- session state ------------------------------------------------------------------------------


def test_a_session_never_written_has_the_default_state(sessions: LegacySessionStore) -> None:
    assert sessions.state("never-seen") == SessionState()


def test_the_log_level_is_kept(sessions: LegacySessionStore) -> None:
    sessions.set_log_level("s-level", "info", LATER)
    sessions.set_log_level("s-level", "debug", LATER)
    assert sessions.state("s-level") == SessionState(log_level="debug", ended=False)


def test_ending_is_once_and_for_good(sessions: LegacySessionStore) -> None:
    sessions.set_log_level("s-end", "info", LATER)
    assert sessions.end("s-end", LATER) is True
    assert sessions.end("s-end", LATER) is False
    assert sessions.state("s-end") == SessionState(log_level="info", ended=True)
    with pytest.raises(SessionEnded):
        sessions.set_log_level("s-end", "debug", LATER)
    assert sessions.state("s-end").log_level == "info"


def test_an_expired_state_reads_as_the_default(sessions: LegacySessionStore, clock: Clock) -> None:
    sessions.end("s-expiring", NOW + 10)
    clock.now = NOW + 10
    assert sessions.state("s-expiring") == SessionState()


# -- parked calls -------------------------------------------------------------------------------


def test_a_parked_call_reads_back_as_written(sessions: LegacySessionStore) -> None:
    call = parked(request_id="req-1")
    sessions.park(call)
    assert sessions.parked(call.ref) == call
    assert sessions.parked("no-such-call") is None


def test_a_new_call_cannot_overwrite_a_parked_one(sessions: LegacySessionStore) -> None:
    call = parked()
    sessions.park(call)
    with pytest.raises(CallConflict):
        sessions.park(replace(call, request_id=99))
    assert sessions.parked(call.ref) == call


def test_the_first_answer_wins_and_only_asked_keys_take_one(sessions: LegacySessionStore) -> None:
    call = parked()
    sessions.park(call)
    assert sessions.answer(call.ref, "first", {"action": "accept", "content": {"x": 1.5}})
    assert not sessions.answer(call.ref, "first", {"action": "decline"})
    assert not sessions.answer(call.ref, "never-asked", {"action": "accept"})
    assert not sessions.answer("no-such-call", "first", {"action": "accept"})
    after = sessions.parked(call.ref)
    assert after is not None
    assert after.answers == {"first": {"action": "accept", "content": {"x": 1.5}}}
    assert after.outstanding == {"second"}
    assert not after.ready


def test_a_call_is_ready_once_every_question_is_answered(sessions: LegacySessionStore) -> None:
    call = parked()
    sessions.park(call)
    sessions.answer(call.ref, "first", {"action": "accept"})
    sessions.answer(call.ref, "second", {"roots": []})
    after = sessions.parked(call.ref)
    assert after is not None
    assert after.ready


def test_an_error_answer_makes_the_call_ready_and_takes_nothing_more(
    sessions: LegacySessionStore,
) -> None:
    call = parked()
    sessions.park(call)
    failure = {"code": -32603, "message": "refused"}
    assert sessions.answer(call.ref, "first", failure=failure)
    assert not sessions.answer(call.ref, "second", {"roots": []})
    assert not sessions.answer(call.ref, "first", failure={"code": 1, "message": "again"})
    after = sessions.parked(call.ref)
    assert after is not None
    assert after.failure == failure
    assert after.ready


def test_the_next_round_moves_on_once_and_clears_the_answers(sessions: LegacySessionStore) -> None:
    call = parked()
    sessions.park(call)
    sessions.answer(call.ref, "first", {"action": "accept"})
    sessions.answer(call.ref, "second", {"roots": []})
    following = replace(call, round=1, asked={"third": ELICIT}, request_state="v1.next.mac")
    with pytest.raises(CallConflict):
        sessions.park(following, previous_round=5)
    sessions.park(following, previous_round=0)
    with pytest.raises(CallConflict):  # a second resume of round 0 cannot move it again
        sessions.park(replace(following, round=1), previous_round=0)
    after = sessions.parked(call.ref)
    assert after == following
    assert after is not None
    assert after.answers == {}
    assert after.outstanding == {"third"}


def test_finishing_is_once_and_drops_the_payloads(sessions: LegacySessionStore) -> None:
    call = parked()
    sessions.park(call)
    sessions.answer(call.ref, "first", {"action": "accept", "content": {"secret": "s3cr3t"}})
    assert not sessions.finish(call.ref, round=1)
    assert sessions.finish(call.ref, round=0)
    assert not sessions.finish(call.ref, round=0)
    after = sessions.parked(call.ref)
    assert after is not None
    assert after.done
    assert (after.params, after.answers, after.asked, after.request_state) == ({}, {}, {}, None)
    assert not after.ready
    assert not sessions.answer(call.ref, "second", {"roots": []})
    with pytest.raises(CallConflict):
        sessions.park(replace(call, round=1), previous_round=0)


def test_an_expired_call_is_gone(sessions: LegacySessionStore, clock: Clock) -> None:
    call = parked(expires_at=NOW + 5)
    sessions.park(call)
    clock.now = NOW + 5
    assert sessions.parked(call.ref) is None
    assert not sessions.answer(call.ref, "first", {"action": "accept"})
    assert not sessions.finish(call.ref, round=0)


def test_the_dynamodb_store_reports_transient_as_busy() -> None:
    """A read or write still throttled after the SDK's retries is `ports.Throttled` (answered
    503 with Retry-After), not an internal error; a failed condition stays an answer."""
    from botocore.exceptions import ClientError

    from mcp_tasks_aws.tasks.ports import Throttled

    class ThrottledClient:
        def _throttled(self, **request: Any) -> None:
            error = {"Error": {"Code": "ThrottlingException", "Message": "slow down"}}
            raise ClientError(error, "Call")  # type: ignore[arg-type]

        get_item = update_item = put_item = _throttled

    store = DynamoLegacySessionStore(ThrottledClient(), "table", clock=lambda: NOW)  # type: ignore[arg-type]
    for call in (
        lambda: store.state("sid"),
        lambda: store.parked("ref"),
        lambda: store.end("sid", LATER),
        lambda: store.answer("ref", "key", answer={}),
    ):
        with pytest.raises(Throttled):
            call()


def test_one_resume_at_a_time_holds_a_round(sessions: LegacySessionStore, clock: Clock) -> None:
    call = parked()
    sessions.park(call)
    assert not sessions.claim(call.ref, round=1, until=NOW + 30)
    assert sessions.claim(call.ref, round=0, until=NOW + 30)
    assert not sessions.claim(call.ref, round=0, until=NOW + 60)  # held by the first
    after = sessions.parked(call.ref)
    assert after is not None
    assert after.claimed_until == NOW + 30
    clock.now = NOW + 30  # its holder's time is up (it died with the round): another may take it
    assert sessions.claim(call.ref, round=0, until=NOW + 90)


def test_the_next_round_and_the_end_release_the_claim(sessions: LegacySessionStore) -> None:
    call = parked()
    sessions.park(call)
    assert sessions.claim(call.ref, round=0, until=LATER)
    sessions.park(replace(call, round=1, asked={"third": ELICIT}), previous_round=0)
    following = sessions.parked(call.ref)
    assert following is not None
    assert following.claimed_until is None
    assert sessions.claim(call.ref, round=1, until=LATER)
    assert sessions.finish(call.ref, round=1)
    assert not sessions.claim(call.ref, round=1, until=LATER + 1)  # a call done is run by none


def test_a_finished_call_keeps_its_outcome_until_its_shorter_expiry(
    sessions: LegacySessionStore, clock: Clock
) -> None:
    call = parked()
    sessions.park(call)
    outcome = {"jsonrpc": "2.0", "id": 7, "result": {"content": []}}
    assert sessions.finish(call.ref, round=0, outcome=outcome, expires_at=NOW + 300)
    after = sessions.parked(call.ref)
    assert after is not None
    assert (after.done, after.outcome, after.expires_at) == (True, outcome, NOW + 300)
    assert (after.params, after.answers, after.asked) == ({}, {}, {})
    clock.now = NOW + 300
    assert sessions.parked(call.ref) is None


def test_a_call_too_large_for_one_item_is_refused_and_nothing_is_written(
    sessions: LegacySessionStore,
) -> None:
    call = parked(params={"name": "ask", "arguments": {"blob": "x" * 420_000}})
    with pytest.raises(CallTooLarge):
        sessions.park(call)
    assert sessions.parked(call.ref) is None


def test_an_answer_that_would_outgrow_the_item_is_refused_and_not_recorded() -> None:
    # The twin holds a call's JSON to DynamoDB's limit (moto checks only top-level attributes,
    # so the adapter's side of this is the next test's).
    sessions = InMemoryLegacySessionStore(clock=Clock())
    call = parked()
    sessions.park(call)
    assert sessions.answer(call.ref, "first", {"action": "accept", "content": {"a": "x" * 200_000}})
    with pytest.raises(CallTooLarge):
        sessions.answer(call.ref, "second", {"roots": [{"uri": "file:///" + "y" * 220_000}]})
    after = sessions.parked(call.ref)
    assert after is not None
    assert after.outstanding == {"second"}  # still waits for that answer: a smaller one


def test_the_dynamodb_store_reports_an_item_too_large_as_call_too_large() -> None:
    from botocore.exceptions import ClientError

    class TooLargeClient:
        def _too_large(self, **request: Any) -> None:
            error = {"Error": {"Code": "ValidationException", "Message": "Item size exceeded"}}
            raise ClientError(error, "Call")  # type: ignore[arg-type]

        update_item = put_item = _too_large

    store = DynamoLegacySessionStore(TooLargeClient(), "table", clock=lambda: NOW)  # type: ignore[arg-type]
    with pytest.raises(CallTooLarge):
        store.answer("ref", "key", answer={})
    with pytest.raises(CallTooLarge):
        store.park(parked())


def test_a_session_lists_the_tasks_it_created_oldest_first_up_to_its_cap(
    sessions: LegacySessionStore, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mcp_tasks_aws.aws.sessions as dynamo_sessions
    import mcp_tasks_aws.server.legacy.sessions as port

    monkeypatch.setattr(port, "MAX_SESSION_TASKS", 3)
    monkeypatch.setattr(dynamo_sessions, "MAX_SESSION_TASKS", 3)
    sid = f"session-{os.urandom(4).hex()}"
    assert sessions.session_tasks(sid) == []
    for n in range(3):
        assert sessions.remember_task(sid, f"task-{n}", NOW + 60)
    assert not sessions.remember_task(sid, "task-3", NOW + 60)  # the list is full
    assert sessions.session_tasks(sid) == ["task-0", "task-1", "task-2"]
    assert sessions.session_tasks("another-session") == []
    clock.now = NOW + 60  # it expires with the session
    assert sessions.session_tasks(sid) == []
