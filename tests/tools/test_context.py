"""ToolContext: deterministic question keys, replay from a journal, asking several at once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel, Field

from mcp_tasks_aws.protocol.errors import InvalidParams, MissingClientCapability
from mcp_tasks_aws.protocol.models import ClientCapabilities
from mcp_tasks_aws.tools.context import ToolContext
from mcp_tasks_aws.tools.journal import BecomeTask, ElicitResult, InputNeeded, SamplingResult

FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
ALL = {"elicitation": {}, "sampling": {}, "roots": {}}
ACCEPT = {"action": "accept", "content": {"name": "Ada"}}
SAMPLED = {"role": "assistant", "content": {"type": "text", "text": "Hi"}}
ROOTS = {"roots": [{"uri": "file:///w"}]}


def make_ctx(
    journal: dict[str, Any] | None = None, caps: dict[str, Any] | None = None
) -> ToolContext:
    capabilities = ClientCapabilities.model_validate(ALL if caps is None else caps)
    return ToolContext(capabilities=capabilities, principal="p", journal=journal)


# Call sites live in these functions: their keys must not depend on anything but the code.


def two_sites(ctx: ToolContext) -> tuple[str, str]:
    first = ctx.elicit("First?", FORM)
    second = ctx.elicit("Second?", FORM)
    return first.key, second.key


def same_body_elsewhere(ctx: ToolContext) -> tuple[str, str]:
    first = ctx.elicit("First?", FORM)
    second = ctx.elicit("Second?", FORM)
    return first.key, second.key


def loop_site(ctx: ToolContext) -> list[str]:
    keys = []
    for i in range(3):
        keys.append(ctx.elicit(f"Question {i}?", FORM).key)
    return keys


def each_kind(ctx: ToolContext) -> list[str]:
    return [
        ctx.elicit("Name?", FORM).key,
        ctx.sample("Hello", max_tokens=5).key,
        ctx.list_roots().key,
    ]


async def ask_one(ctx: ToolContext) -> str:
    answer = await ctx.elicit("Name?", FORM)
    return str((answer.content or {}).get("name"))


async def ask_three(ctx: ToolContext) -> tuple[Any, ...]:
    return await ctx.ask_all(
        ctx.elicit("Name?", FORM, key="name"),
        ctx.sample("Greet", max_tokens=10, key="greeting"),
        ctx.list_roots(key="roots"),
    )


# -- deterministic keys -------------------------------------------------------------------------


def test_keys_are_the_same_across_two_runs() -> None:
    assert two_sites(make_ctx()) == two_sites(make_ctx())
    assert loop_site(make_ctx()) == loop_site(make_ctx())


def test_two_call_sites_get_two_keys() -> None:
    first, second = two_sites(make_ctx())
    assert first != second
    assert first.startswith("elicit-")
    assert second.startswith("elicit-")


def test_the_same_lines_in_another_function_get_other_keys() -> None:
    assert set(two_sites(make_ctx())).isdisjoint(same_body_elsewhere(make_ctx()))


def test_a_loop_counts_occurrences_of_one_call_site() -> None:
    keys = loop_site(make_ctx())
    assert len(set(keys)) == 3
    sites = {key.rsplit("-", 1)[0] for key in keys}
    assert len(sites) == 1
    assert [key.rsplit("-", 1)[1] for key in keys] == ["1", "2", "3"]


def test_key_prefix_names_the_kind_of_question() -> None:
    elicit, sample, roots = each_kind(make_ctx())
    assert elicit.startswith("elicit-")
    assert sample.startswith("sample-")
    assert roots.startswith("roots-")


def test_replay_with_the_journal_answers_the_same_question() -> None:
    # Given a first leg that stops on its question
    with pytest.raises(InputNeeded) as stopped:
        asyncio.run(ask_one(make_ctx()))
    [key] = stopped.value.requests
    # When the tool is run again with an answer under that key
    ctx = make_ctx({key: ACCEPT})
    # Then the question is answered from the journal
    assert asyncio.run(ask_one(ctx)) == "Ada"
    assert ctx.consumed_answers == {key: ACCEPT}


def test_an_explicit_key_asked_twice_in_one_run_raises() -> None:
    ctx = make_ctx()
    ctx.elicit("Once", FORM, key="k")
    with pytest.raises(ValueError, match="'k'"):
        ctx.elicit("Twice", FORM, key="k")


def test_an_explicit_key_colliding_with_a_generated_one_raises() -> None:
    ctx = make_ctx()
    generated = ctx.list_roots().key
    with pytest.raises(ValueError, match="twice"):
        ctx.sample("x", max_tokens=1, key=generated)


# -- asking ---------------------------------------------------------------------------------------


def test_ask_all_reports_every_outstanding_question_at_once() -> None:
    with pytest.raises(InputNeeded) as stopped:
        asyncio.run(ask_three(make_ctx()))
    requests = stopped.value.requests
    assert set(requests) == {"name", "greeting", "roots"}
    assert requests["name"] == {
        "method": "elicitation/create",
        "params": {"mode": "form", "message": "Name?", "requestedSchema": FORM},
    }
    assert requests["greeting"] == {
        "method": "sampling/createMessage",
        "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": "Greet"}}],
            "maxTokens": 10,
        },
    }
    assert requests["roots"] == {"method": "roots/list", "params": {}}


def test_ask_all_lists_only_what_is_still_unanswered() -> None:
    with pytest.raises(InputNeeded) as stopped:
        asyncio.run(ask_three(make_ctx({"name": ACCEPT})))
    assert set(stopped.value.requests) == {"greeting", "roots"}


def test_ask_all_returns_typed_answers_in_order() -> None:
    ctx = make_ctx({"name": ACCEPT, "greeting": SAMPLED, "roots": ROOTS, "stray": {"x": 1}})
    name, greeting, roots = asyncio.run(ask_three(ctx))
    assert isinstance(name, ElicitResult)
    assert name.accepted
    assert isinstance(greeting, SamplingResult)
    assert greeting.text == "Hi"
    assert [root.uri for root in roots.roots] == ["file:///w"]
    # Only what the tool used is carried to the next round; the stray key is not.
    assert ctx.consumed_answers == {"name": ACCEPT, "greeting": SAMPLED, "roots": ROOTS}


def test_nothing_is_consumed_before_a_question_is_answered() -> None:
    ctx = make_ctx({"unrelated": ACCEPT})
    with pytest.raises(InputNeeded):
        asyncio.run(ask_one(ctx))
    assert ctx.consumed_answers == {}


@pytest.mark.parametrize(
    ("key", "answer"),
    [
        ("name", 12345),
        ("name", {"action": "ok"}),
        ("greeting", {"content": "no role"}),
        ("roots", {"roots": [{"name": "no uri"}]}),
        ("roots", {"roots": "file:///w"}),
    ],
)
def test_answers_of_the_wrong_shape_are_invalid_params(key: str, answer: Any) -> None:
    journal = {"name": ACCEPT, "greeting": SAMPLED, "roots": ROOTS, key: answer}
    with pytest.raises(InvalidParams, match="Invalid input response"):
        asyncio.run(ask_three(make_ctx(journal)))


@pytest.mark.parametrize(
    ("caps", "missing"),
    [
        ({"sampling": {}, "roots": {}}, "elicitation"),
        ({"elicitation": {}, "roots": {}}, "sampling"),
        ({"elicitation": {}, "sampling": {}}, "roots"),
    ],
)
def test_asking_without_the_capability_raises_missing_capability(
    caps: dict[str, Any], missing: str
) -> None:
    with pytest.raises(MissingClientCapability) as caught:
        asyncio.run(ask_three(make_ctx(caps=caps)))
    assert caught.value.code == -32021
    assert caught.value.data == {"requiredCapabilities": {missing: {}}}


def test_capability_flags() -> None:
    ctx = make_ctx(caps={"sampling": {}})
    assert (ctx.can_elicit, ctx.can_sample, ctx.can_list_roots) == (False, True, False)


class Contact(BaseModel):
    email: str = Field(description="Where to write")
    age: int | None = None


def test_elicit_with_a_model_sends_a_flat_form() -> None:
    request = make_ctx().elicit("Contact?", Contact, key="c").as_request()
    schema = request["params"]["requestedSchema"]
    assert schema["type"] == "object"
    assert schema["required"] == ["email"]
    assert schema["properties"]["email"]["description"] == "Where to write"
    assert "title" not in schema["properties"]["email"]


def test_sample_with_system_prompt_and_extra_params() -> None:
    request = (
        make_ctx()
        .sample("Hi", max_tokens=3, system_prompt="Be brief.", key="s", temperature=0.2)
        .as_request()
    )
    assert request["params"]["systemPrompt"] == "Be brief."
    assert request["params"]["temperature"] == 0.2
    assert request["params"]["maxTokens"] == 3


def test_sampling_text_joins_text_blocks() -> None:
    result = SamplingResult.model_validate(
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Hello, "},
                {"type": "image", "data": "...", "mimeType": "image/png"},
                {"type": "text", "text": "world"},
            ],
        }
    )
    assert result.text == "Hello, world"


# -- task boundary, progress, logs ----------------------------------------------------------------


def test_run_as_task_stops_only_at_the_task_boundary() -> None:
    inline = ToolContext(
        capabilities=ClientCapabilities.model_validate({}),
        principal="p",
        stop_at_task_boundary=True,
    )
    with pytest.raises(BecomeTask):
        asyncio.run(inline.run_as_task())
    asyncio.run(make_ctx().run_as_task())


def test_report_and_log_go_to_their_callbacks() -> None:
    reports: list[str] = []
    logs: list[tuple[str, Any]] = []
    ctx = ToolContext(
        capabilities=ClientCapabilities.model_validate({}),
        principal="p",
        task_id="t1",
        report=reports.append,
        log=lambda level, data: logs.append((level, data)),
    )
    ctx.report("half way")
    ctx.log("info", {"step": 1})
    assert reports == ["half way"]
    assert logs == [("info", {"step": 1})]
    assert ctx.in_task
    # Without callbacks, both are silently ignored.
    make_ctx().report("ignored")
    make_ctx().log("info", "ignored")


def test_a_step_runs_its_function_once_and_replays_the_recorded_result() -> None:
    calls: list[int] = []

    def effect() -> dict[str, int]:
        calls.append(1)
        return {"id": len(calls)}

    first = ToolContext(capabilities=ClientCapabilities.model_validate({}), principal="p")
    assert first.step("charge", effect) == {"id": 1}
    assert first.new_steps == {"step:charge": {"id": 1}}
    # A replay with the recorded result does not call the function again.
    replay = ToolContext(
        capabilities=ClientCapabilities.model_validate({}),
        principal="p",
        journal=first.consumed_answers,
    )
    assert replay.step("charge", effect) == {"id": 1}
    assert replay.new_steps == {}
    assert calls == [1]


def test_a_step_name_used_twice_in_one_run_is_refused() -> None:
    ctx = ToolContext(capabilities=ClientCapabilities.model_validate({}), principal="p")
    ctx.step("once", lambda: 1)
    with pytest.raises(ValueError, match="used twice"):
        ctx.step("once", lambda: 2)


def test_a_step_result_that_cannot_be_recorded_fails_at_once() -> None:
    ctx = ToolContext(capabilities=ClientCapabilities.model_validate({}), principal="p")
    with pytest.raises(TypeError):
        ctx.step("socket", lambda: object())
