"""How many keys one round of input may write: at most `MAX_QUESTIONS_PER_ROUND` questions
at once and `MAX_STEPS_PER_ROUND` new steps recorded with them. Past either, the tool API says
so (a tool bug, -32603 with a message that names the bound), on every run, instead of a task
write DynamoDB refuses and a task that ends as crashed."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcp_tasks_aws import TaskPolicy, ToolContext, ToolSet
from mcp_tasks_aws.protocol.errors import INTERNAL_ERROR
from mcp_tasks_aws.protocol.models import ClientCapabilities
from mcp_tasks_aws.tasks.legs import LegRunner
from mcp_tasks_aws.tools.context import TooManyQuestions, TooManySteps
from mcp_tasks_aws.tools.journal import MAX_QUESTIONS_PER_ROUND, MAX_STEPS_PER_ROUND, InputNeeded
from support.domain import ALICE, CAPABILITIES, Domain

FORM = {"type": "object", "properties": {"ok": {"type": "boolean"}}}


def make_ctx() -> ToolContext:
    capabilities = ClientCapabilities.model_validate({"elicitation": {}})
    return ToolContext(capabilities=capabilities, principal="p")


async def ask(ctx: ToolContext, count: int, steps: int = 0) -> None:
    for i in range(steps):
        ctx.step(f"s{i}", lambda: "done")
    await ctx.ask_all(*(ctx.elicit("ok?", FORM, key=f"q{i}") for i in range(count)))


def test_a_round_of_the_most_questions_is_asked() -> None:
    with pytest.raises(InputNeeded) as need:
        asyncio.run(ask(make_ctx(), MAX_QUESTIONS_PER_ROUND, steps=MAX_STEPS_PER_ROUND))
    assert len(need.value.requests) == MAX_QUESTIONS_PER_ROUND


def test_one_question_more_than_a_round_holds_is_a_tool_bug_said_plainly() -> None:
    with pytest.raises(TooManyQuestions) as bug:
        asyncio.run(ask(make_ctx(), MAX_QUESTIONS_PER_ROUND + 1))
    assert bug.value.code == INTERNAL_ERROR
    assert str(bug.value) == (
        f"Tool bug: ctx.ask_all(...) asks {MAX_QUESTIONS_PER_ROUND + 1} questions in one "
        f"round; at most {MAX_QUESTIONS_PER_ROUND} may be asked at once: ask the rest in a "
        "later round"
    )


def test_more_new_steps_than_a_round_records_fail_when_the_tool_asks() -> None:
    with pytest.raises(TooManySteps, match=f"ran {MAX_STEPS_PER_ROUND + 1} new ctx.step"):
        asyncio.run(ask(make_ctx(), 1, steps=MAX_STEPS_PER_ROUND + 1))


def test_many_steps_without_a_question_are_not_bounded() -> None:
    ctx = make_ctx()
    for i in range(MAX_STEPS_PER_ROUND + 10):
        ctx.step(f"s{i}", lambda: "done")
    assert len(ctx.new_steps) == MAX_STEPS_PER_ROUND + 10


# -- in a task (the direct path, where the issue was found) -----------------------------------

tools = ToolSet(name="round-bounds", version="0")


@tools.tool(task=TaskPolicy.REQUIRED)
async def survey(count: int, ctx: ToolContext) -> str:
    """Asks `count` questions at once."""
    await ask(ctx, count)
    return "answered"


def run_survey(count: int) -> dict[str, Any]:
    domain = Domain(direct=True)
    legs = LegRunner(domain.store, domain.runner, tools, clock=domain.clock)
    record = domain.service.create(ALICE, tools.tools["survey"], {"count": count}, CAPABILITIES)
    legs.run_direct(record.task_id)
    view = domain.service.get(ALICE, record.task_id)
    return {"status": view.record.status, "error": view.record.error, "record": view.record}


def test_a_task_that_asks_too_much_at_once_fails_with_the_bound_in_its_error() -> None:
    outcome = run_survey(200)
    assert outcome["status"] == "failed"
    assert outcome["error"]["code"] == INTERNAL_ERROR
    assert "asks 200 questions in one round; at most 64" in outcome["error"]["message"]


def test_a_task_that_asks_a_full_round_waits_for_its_answers() -> None:
    outcome = run_survey(MAX_QUESTIONS_PER_ROUND)
    assert outcome["status"] == "input_required"
    assert len(outcome["record"].input_requests) == MAX_QUESTIONS_PER_ROUND
