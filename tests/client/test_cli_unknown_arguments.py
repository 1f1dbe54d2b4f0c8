"""`mcp-tasks call` with an argument the tool's schema does not list: one warning line on
stderr before the call is sent, then the server's own answer (-32602 with the likely name)."""

from __future__ import annotations

import pytest

from mcp_tasks_aws.client.cli.forms import ArgumentError, parse_arguments, unknown_argument_warning
from mcp_tasks_aws.client.cli.main import main

SCHEMA = {"type": "object", "properties": {"values": {}, "height": {}}}


def test_a_misspelt_argument_is_warned_of_then_sent(
    stack_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["call", stack_url, "greet", "nme=Ada"])
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "warning: Unknown argument 'nme' for tool greet: did you mean 'name'? (sending it anyway)",
        "error: Unknown argument 'nme' for tool greet: did you mean 'name'?",  # the server's
    ]
    assert code == 3


def test_the_warning_names_the_closest_known_argument() -> None:
    assert unknown_argument_warning("sparkline", {"heigth": 1}, SCHEMA) == (
        "warning: Unknown argument 'heigth' for tool sparkline: did you mean 'height'? "
        "(sending it anyway)"
    )


@pytest.mark.parametrize("extra", [True, {"type": "string"}])
def test_nothing_is_said_when_the_schema_allows_other_names(extra: object) -> None:
    schema = {**SCHEMA, "additionalProperties": extra}
    assert unknown_argument_warning("sparkline", {"heigth": 1}, schema) is None


def test_nothing_is_said_of_known_arguments() -> None:
    assert unknown_argument_warning("sparkline", {"height": 1}, SCHEMA) is None


REQUIRED = {"type": "object", "properties": {"name": {}, "greeting": {}}, "required": ["name"]}


def test_a_misspelt_required_argument_is_named_as_the_likely_typo() -> None:
    # `greet nmae=Ada`: the required `name` is missing because `nmae` was typed for it
    with pytest.raises(ArgumentError) as refused:
        parse_arguments(["nmae=Ada"], REQUIRED)
    assert str(refused.value) == (
        "missing required argument(s): name; unknown argument 'nmae': did you mean 'name'?"
    )


def test_a_missing_argument_with_an_unrelated_unknown_one_names_both() -> None:
    with pytest.raises(ArgumentError) as refused:
        parse_arguments(["colour=red"], REQUIRED)
    assert str(refused.value) == (
        "missing required argument(s): name; unknown argument 'colour' (the tool takes: "
        "name, greeting)"
    )


def test_only_missing_says_only_that() -> None:
    with pytest.raises(ArgumentError) as refused:
        parse_arguments(["greeting=hi"], REQUIRED)
    assert str(refused.value) == "missing required argument(s): name"


def test_the_cli_says_did_you_mean_for_a_missing_required_argument(
    stack_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["call", stack_url, "confirm_delete", "filenme=x.txt"])
    assert capsys.readouterr().err.splitlines() == [
        "error: confirm_delete: missing required argument(s): filename; unknown argument "
        "'filenme': did you mean 'filename'?"
    ]
    assert code == 2
