"""`LegacySessionStore.hold_question`, held by both implementations (the DynamoDB adapter on
moto and the in-memory twin): a task's question is held by one holder at a time, renewed by
its holder, and free again once its hold lapses."""

from __future__ import annotations

import boto3
import pytest

from mcp_tasks_aws.aws.sessions import DynamoLegacySessionStore
from mcp_tasks_aws.local.aws import REGION, LocalAws
from mcp_tasks_aws.server.legacy.sessions import InMemoryLegacySessionStore, LegacySessionStore
from support.clock import Clock

NOW = 1_800_000_000
TASK = "0123456789abcdef0123456789abcdef"


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


def test_a_question_is_held_by_one_holder_at_a_time(sessions: LegacySessionStore) -> None:
    assert sessions.hold_question(TASK, "confirm", "session-a", NOW + 300)
    assert not sessions.hold_question(TASK, "confirm", "session-b", NOW + 300)
    assert not sessions.hold_question(TASK, "confirm", "get:once", NOW + 300)
    # Its holder renews it.
    assert sessions.hold_question(TASK, "confirm", "session-a", NOW + 600)


def test_each_key_and_each_task_is_held_apart(sessions: LegacySessionStore) -> None:
    assert sessions.hold_question(TASK, "first", "session-a", NOW + 300)
    assert sessions.hold_question(TASK, "second", "session-b", NOW + 300)
    assert sessions.hold_question(TASK.replace("0", "f"), "first", "session-b", NOW + 300)


def test_a_lapsed_hold_is_free_again(sessions: LegacySessionStore, clock: Clock) -> None:
    assert sessions.hold_question(TASK, "confirm", "session-a", NOW + 300)
    clock.advance(299)
    assert not sessions.hold_question(TASK, "confirm", "session-b", NOW + 600)
    clock.advance(1)
    assert sessions.hold_question(TASK, "confirm", "session-b", NOW + 600)
    assert not sessions.hold_question(TASK, "confirm", "session-a", NOW + 600)


def test_a_long_key_is_held_under_a_short_item_key(sessions: LegacySessionStore) -> None:
    long_key = "k" * 128
    assert sessions.hold_question(TASK, long_key, "session-a", NOW + 300)
    assert not sessions.hold_question(TASK, long_key, "session-b", NOW + 300)
    assert sessions.hold_question(TASK, long_key[:-1], "session-b", NOW + 300)
