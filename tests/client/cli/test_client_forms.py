"""Typed text to JSON values by schema: CLI arguments and elicitation forms (pure, scripted I/O)."""

from __future__ import annotations

from typing import Any

import pytest
from mcp_types import ElicitRequestFormParams, ElicitRequestURLParams

from mcp_tasks_aws.client.cli.forms import (
    ArgumentError,
    coerce,
    confirm_url,
    fill_form,
    parse_arguments,
)

pytestmark = pytest.mark.anyio

TOOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "seconds": {"type": "number"},
        "count": {"type": "integer", "minimum": 1},
        "force": {"type": "boolean"},
        "label": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "options": {"type": "object"},
    },
    "required": ["seconds"],
}


def test_arguments_are_typed_by_the_schema() -> None:
    words = [
        "seconds=1.5",
        "count=3",
        "force=yes",
        "label=42",
        "tags=a,b",
        "unit=Celsius",
        "maybe=null",
        'options={"x": 1}',
    ]
    assert parse_arguments(words, TOOL_SCHEMA) == {
        "seconds": 1.5,
        "count": 3,
        "force": True,
        "label": "42",
        "tags": ["a", "b"],
        "unit": "celsius",
        "maybe": None,
        "options": {"x": 1},
    }


def test_whole_numbers_stay_integers_and_json_literals_pass_through() -> None:
    args = parse_arguments(["seconds=2", "tags:=[1, 2]", "extra:=true"], TOOL_SCHEMA)
    assert args == {"seconds": 2, "tags": [1, 2], "extra": True}
    assert isinstance(args["seconds"], int)


def test_untyped_properties_read_json_or_fall_back_to_text() -> None:
    assert parse_arguments(["a=3", "b=hello", "c=[1]"], {}) == {"a": 3, "b": "hello", "c": [1]}


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["seconds=abc"], "seconds: 'abc' is not a number"),
        (["seconds=1", "count=0"], "below the minimum"),
        (["seconds=1", "count=1.5"], "not a whole number"),
        (["seconds=1", "force=maybe"], "yes/no"),
        (["seconds=1", "unit=kelvin"], "not one of: celsius, fahrenheit"),
        (["label=x"], "missing required argument(s): seconds"),
        (["seconds"], "expected key=value"),
        (["seconds:={"], "not valid JSON"),
    ],
)
def test_bad_arguments_say_why(words: list[str], message: str) -> None:
    with pytest.raises(ArgumentError) as caught:
        parse_arguments(words, TOOL_SCHEMA)
    assert message in str(caught.value)


def test_unknown_arguments_are_refused_when_the_schema_is_closed() -> None:
    closed = {**TOOL_SCHEMA, "additionalProperties": False}
    with pytest.raises(ArgumentError, match="unknown argument 'nope'"):
        parse_arguments(["seconds=1", "nope=1"], closed)


def test_enum_spellings() -> None:
    titled = {
        "type": "string",
        "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}],
    }
    assert coerce("2", titled) == "g"
    assert coerce("red", titled) == "r"
    legacy = {"type": "string", "enum": ["s", "m"], "enumNames": ["Small", "Medium"]}
    assert coerce("medium", legacy) == "m"
    multi = {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}}
    assert coerce("1, c", multi) == ["a", "c"]


class Script:
    """A FormIO that answers prompts from a list and records what was shown."""

    def __init__(self, *answers: str | None) -> None:
        self.answers = list(answers)
        self.shown: list[str] = []

    async def ask(self, prompt: str) -> str | None:
        self.shown.append(prompt)
        return self.answers.pop(0) if self.answers else None

    def say(self, text: str) -> None:
        self.shown.append(text)


FORM = ElicitRequestFormParams(
    message="Set up the job",
    requested_schema={
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Name", "minLength": 2},
            "retries": {"type": "integer", "minimum": 0, "maximum": 5, "default": 2},
            "notify": {"type": "boolean", "default": False},
            "size": {
                "type": "string",
                "enum": ["s", "m", "l"],
                "enumNames": ["Small", "Medium", "Large"],
            },
            "email": {"type": "string", "format": "email"},
        },
        "required": ["name", "size"],
    },
)


async def test_a_form_is_asked_field_by_field_with_defaults_and_validation() -> None:
    script = Script("a", "", "x", "Ada", "9", "", "y", "Large", "")
    result = await fill_form(FORM, script)
    assert result.action == "accept"
    assert result.content == {"name": "Ada", "retries": 2, "notify": True, "size": "l"}
    shown = "\n".join(script.shown)
    assert "Set up the job" in shown
    assert "a value is required" in shown  # empty required name
    assert "needs at least 2 characters" in shown  # "x"
    assert "above the maximum 5" in shown  # "9", then the default
    assert "1) Small (s)" in shown


async def test_a_form_can_be_declined_or_cancelled() -> None:
    assert (await fill_form(FORM, Script("d"))).action == "decline"
    assert (await fill_form(FORM, Script("c"))).action == "cancel"
    assert (await fill_form(FORM, Script(None))).action == "cancel"  # end of input
    assert (await fill_form(FORM, Script("a", "Ada", None))).action == "cancel"


async def test_a_url_elicitation_shows_the_url() -> None:
    params = ElicitRequestURLParams(message="Sign in", url="https://example.com/auth")
    script = Script("a")
    assert (await confirm_url(params, script)).action == "accept"
    assert any("https://example.com/auth" in line for line in script.shown)


CONFIRM = ElicitRequestFormParams(
    message="Promote billing 1.4.2 to production?",
    requested_schema={
        "type": "object",
        "properties": {"approve": {"type": "boolean", "description": "Promote to production"}},
        "required": ["approve"],
    },
)


@pytest.mark.parametrize(
    ("answers", "action", "content"),
    [
        (["y"], "accept", {"approve": True}),
        (["no"], "accept", {"approve": False}),
        (["maybe", "yes"], "accept", {"approve": True}),
        (["d"], "decline", None),
        (["c"], "cancel", None),
        ([None], "cancel", None),
    ],
    ids=["y", "no", "asked-again", "decline", "cancel", "end-of-input"],
)
async def test_a_yes_no_form_is_one_question(
    answers: list[str | None], action: str, content: dict[str, bool] | None
) -> None:
    # "answer y" is one answer: the form's one boolean field, accepted with it
    script = Script(*answers)
    result = await fill_form(CONFIRM, script)
    assert (result.action, result.content) == (action, content)
    asked = [line for line in script.shown if line.endswith(": ")]
    assert asked[0] == "  approve [y/n; d declines, c cancels]: "
    assert len(asked) == len(answers)


async def test_a_yes_no_form_takes_its_default_on_enter() -> None:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean", "default": True}}}
    params = CONFIRM.model_copy(update={"requested_schema": schema})
    result = await fill_form(params, Script(""))
    assert (result.action, result.content) == ("accept", {"ok": True})
