"""A conditional write that landed but whose answer was lost, resent by the SDK as its row of
`aws.call_policies` allows, is found made, not reported refused (issue 26, item 2: "what the
code does to learn the truth").

The loss is real, on our own clients (`Clients`, `REPEATABLE`: botocore's standard retries)
against moto: the first copy of the write reaches moto and is applied, then its answer is
replaced by a read timeout; botocore retries, and the second copy meets the condition the
first one made false. Before the fix: the task store raised TaskAlreadyExists for a task it
had just created and refused a leg its own claim (the leg then ran nothing), and the
2025-11-25 session store refused its own park, answer, claim and finish (a resume that held
the round let it go; an answered question was reported refused).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pytest
from botocore.exceptions import ReadTimeoutError
from moto.core.models import botocore_stubber

from mcp_tasks_aws.aws.clients import Clients
from mcp_tasks_aws.aws.dynamodb import DynamoTaskStore
from mcp_tasks_aws.aws.sessions import DynamoLegacySessionStore
from mcp_tasks_aws.local.aws import LocalAws
from mcp_tasks_aws.local.stack import local_session
from mcp_tasks_aws.server.legacy.sessions import CallConflict
from mcp_tasks_aws.tasks import transitions
from mcp_tasks_aws.tasks.model import now_ms
from server.legacy.test_session_store import ELICIT, LATER, NOW, parked
from support.clock import Clock
from support.records import ON_STACK


@pytest.fixture(scope="module")
def dynamodb(local_aws: LocalAws) -> Any:
    """Our DynamoDB calls (their policy's client), answered by moto."""
    return Clients(local_session()).get("dynamodb")


@contextmanager
def answer_lost(calls: Any, operation: str) -> Iterator[list[Any]]:
    """The first `operation` in the block lands (moto applies it) and its answer is lost (a
    read timeout); later copies go to moto as usual. Yields every copy that was sent."""
    event = f"before-send.dynamodb.{operation}"
    copies: list[Any] = []

    # On this operation's own event: called before moto's (registered on `before-send`).
    def lose_first(request: Any, **_: Any) -> None:
        copies.append(request)
        if len(copies) == 1:
            botocore_stubber(event_name=event, request=request)  # it lands...
            raise ReadTimeoutError(endpoint_url=request.url)  # ...unheard

    calls.meta.events.register_first(event, lose_first)
    try:
        yield copies
    finally:
        calls.meta.events.unregister(event, lose_first)


def test_a_task_whose_creation_answer_was_lost_is_created(
    local_aws: LocalAws, dynamodb: Any
) -> None:
    store = DynamoTaskStore(dynamodb, local_aws.table_name)
    record = ON_STACK.make()
    with answer_lost(dynamodb, "PutItem") as copies:
        store.put_new(record)  # before the fix: TaskAlreadyExists
    assert len(copies) == 2
    assert store.get(record.task_id) == record


def test_a_claim_whose_answer_was_lost_is_the_legs(local_aws: LocalAws, dynamodb: Any) -> None:
    # Before the fix: refused, so the leg took its own claim for a duplicate's and ran
    # nothing, leaving the task claimed and working until its TTL (its event had succeeded).
    store = DynamoTaskStore(dynamodb, local_aws.table_name)
    record = ON_STACK.make(held_by="direct")
    store.put_new(record)
    with answer_lost(dynamodb, "UpdateItem") as copies:
        claimed = store.apply(record.task_id, *transitions.claim(now_ms()))
    assert len(copies) == 2
    assert claimed is not None
    assert claimed.changed
    assert claimed.record.leg == record.leg + 1
    # A second leg's claim (a duplicated event) is still refused.
    again = store.apply(record.task_id, *transitions.claim(now_ms()))
    assert again is not None
    assert not again.changed


@pytest.fixture
def sessions(local_aws: LocalAws, dynamodb: Any) -> DynamoLegacySessionStore:
    return DynamoLegacySessionStore(dynamodb, local_aws.table_name, clock=Clock(float(NOW)))


def test_a_park_whose_answer_was_lost_is_made(
    sessions: DynamoLegacySessionStore, dynamodb: Any
) -> None:
    call = parked()
    with answer_lost(dynamodb, "PutItem") as copies:
        sessions.park(call)  # before the fix: CallConflict
    assert len(copies) == 2
    assert sessions.parked(call.ref) == call
    with pytest.raises(CallConflict):  # another park of the same call is still refused
        sessions.park(call)


def test_an_answer_claim_and_finish_whose_answers_were_lost_are_made(
    sessions: DynamoLegacySessionStore, dynamodb: Any
) -> None:
    call = parked()
    sessions.park(call)
    with answer_lost(dynamodb, "UpdateItem") as copies:
        assert sessions.answer(call.ref, "first", {"action": "accept"}) is True
    assert len(copies) == 2
    assert sessions.answer(call.ref, "first", {"action": "decline"}) is False  # first wins
    with answer_lost(dynamodb, "UpdateItem") as copies:
        assert sessions.claim(call.ref, 0, LATER) is True
    assert len(copies) == 2
    assert sessions.claim(call.ref, 0, LATER) is False  # another resume: still held
    with answer_lost(dynamodb, "UpdateItem") as copies:
        assert sessions.finish(call.ref, 0) is True
    assert len(copies) == 2
    assert sessions.finish(call.ref, 0) is False  # once


def test_a_next_round_and_an_end_whose_answers_were_lost_are_made(
    sessions: DynamoLegacySessionStore, dynamodb: Any
) -> None:
    call = parked()
    sessions.park(call)
    following = replace(call, round=1, asked={"third": ELICIT}, request_state="v1.next.mac")
    with answer_lost(dynamodb, "PutItem") as copies:
        sessions.park(following, previous_round=0)
    assert len(copies) == 2
    assert sessions.parked(call.ref) == following
    with answer_lost(dynamodb, "UpdateItem") as copies:
        assert sessions.end("s-lost", LATER) is True
    assert len(copies) == 2
    assert sessions.end("s-lost", LATER) is False
