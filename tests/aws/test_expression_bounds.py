"""A round of input at the bounds of `tools.journal` (64 questions, 128 new steps, 64 answers
that each fit every method, keys as long as allowed) builds expressions DynamoDB takes: every
condition and update under its 4 KB, and at most 300 operators. moto does not check the length,
so it is asserted on the built expressions, and the store refuses an over-long one itself."""

from __future__ import annotations

import re
from typing import Any

import pytest

from mcp_tasks_aws.aws.dynamodb import DynamoTaskStore
from mcp_tasks_aws.aws.dynamodb_expressions import (
    MAX_EXPRESSION_BYTES,
    Placeholders,
    condition,
    update,
)
from mcp_tasks_aws.tasks import transitions as t
from mcp_tasks_aws.tasks.service import MAX_ANSWER_KEY_CHARS, answerable_methods
from mcp_tasks_aws.tools.journal import (
    ELICIT,
    LIST_ROOTS,
    MAX_QUESTIONS_PER_ROUND,
    MAX_STEPS_PER_ROUND,
    SAMPLE,
)
from support.records import ON_STACK
from support.tasks import now_ms

DYNAMODB_EXPRESSION_LIMIT = 4 * 1024
DYNAMODB_MAX_OPERATORS = 300
OWNER = ON_STACK.owner
TOKEN = "t" * 1024  # a Step Functions task token is at most 1024 characters
# An answer that has the shape of every method's result: the guard lists all three.
ANSWERS_EVERYTHING: dict[str, Any] = {
    "action": "accept",
    "content": {"type": "text", "text": "ok"},
    "role": "assistant",
    "roots": [],
}


def keys(count: int, prefix: str) -> list[str]:
    """`count` keys as long as an answer key may be (names never enter the expression text)."""
    return [f"{prefix}{i}".ljust(MAX_ANSWER_KEY_CHARS, "k") for i in range(count)]


QUESTIONS = keys(MAX_QUESTIONS_PER_ROUND, "elicit-")
STEPS = {
    f"step:{i}".ljust(MAX_ANSWER_KEY_CHARS, "s"): {"done": i} for i in range(MAX_STEPS_PER_ROUND)
}
REQUESTS = {key: {"method": ELICIT, "params": {"message": "ok?"}} for key in QUESTIONS}


def moves_at_the_bounds() -> dict[str, tuple[t.Guard, t.Changes]]:
    assert answerable_methods(ANSWERS_EVERYTHING) == {ELICIT, SAMPLE, LIST_ROOTS}
    methods = answerable_methods(ANSWERS_EVERYTHING)
    answers = {key: (ANSWERS_EVERYTHING, methods) for key in QUESTIONS}
    return {
        "park": t.park(7, REQUESTS, TOKEN, STEPS, now_ms()),
        "attach": t.attach(8, QUESTIONS, TOKEN, now_ms(), replacing=TOKEN),
        "answer": t.answer(OWNER, answers, now_ms()),
        "refuse": t.refuse(OWNER, QUESTIONS[0], ELICIT, {"code": -1, "message": "no"}, now_ms()),
    }


def operators(expression: str) -> int:
    """Operators and functions as DynamoDB counts them (comparisons, logic, IN, functions)."""
    words = re.findall(r"\b(?:AND|OR|NOT|IN|BETWEEN)\b", expression)
    functions = re.findall(r"\b[a-z_]+\(", expression)
    comparisons = re.findall(r"<>|<=|>=|(?<![<>])=|<|>|\+|-", expression)
    return len(words) + len(functions) + len(comparisons)


@pytest.mark.parametrize("move", ["park", "attach", "answer", "refuse"])
def test_every_move_of_a_round_at_the_bounds_fits_dynamodbs_expression_limits(move: str) -> None:
    guard, changes = moves_at_the_bounds()[move]
    expr = Placeholders()
    check, change = condition(guard, expr), update(changes, expr)
    assert MAX_EXPRESSION_BYTES == DYNAMODB_EXPRESSION_LIMIT
    assert len(check.encode()) <= DYNAMODB_EXPRESSION_LIMIT, (move, len(check))
    assert len(change.encode()) <= DYNAMODB_EXPRESSION_LIMIT, (move, len(change))
    assert operators(check) <= DYNAMODB_MAX_OPERATORS
    assert max(len(p) for p in [*expr.names, *expr.values]) <= 255  # a placeholder's longest


def test_a_round_at_the_bounds_parks_attaches_and_is_answered_on_dynamodb(
    dynamo_store: DynamoTaskStore,
) -> None:
    record = ON_STACK.make(leg=7)
    dynamo_store.put_new(record)
    moves = moves_at_the_bounds()
    parked = dynamo_store.apply(record.task_id, *moves["park"])
    assert parked is not None
    assert parked.changed
    assert set(parked.record.input_requests) == set(QUESTIONS)
    attached = dynamo_store.apply(record.task_id, *moves["attach"])
    assert attached is not None
    assert attached.changed
    answered = dynamo_store.apply(record.task_id, *moves["answer"])
    assert answered is not None
    assert answered.changed
    assert answered.record.input_requests == {}
    assert set(answered.record.answers) == {*QUESTIONS, *STEPS}


def test_an_expression_over_the_limit_is_refused_before_dynamodb_sees_it(
    dynamo_store: DynamoTaskStore,
) -> None:
    # A round far past the bounds (only a tool API without them could ask it)
    record = ON_STACK.make(leg=1)
    dynamo_store.put_new(record)
    requests = {key: {"method": ELICIT, "params": {}} for key in keys(400, "q")}
    with pytest.raises(ValueError, match=r"the update expression of a park write takes \d+ bytes"):
        dynamo_store.apply(record.task_id, *t.park(1, requests, None, {}, now_ms()))
    unchanged = dynamo_store.get(record.task_id)
    assert unchanged is not None
    assert unchanged.status == "working"
