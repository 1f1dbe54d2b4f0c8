"""Payload templates: `${name}` keeps the argument's type, inside text it is its text, an
absent argument leaves its member out."""

from __future__ import annotations

from mcp_tasks_aws.targets.templates import render

VALUES = {"n": 3, "tags": ["a", "b"], "user": {"name": "ada"}, "taskId": "t1"}


def test_a_whole_placeholder_keeps_the_type() -> None:
    assert render({"count": "${n}", "tags": "${tags}"}, VALUES) == {"count": 3, "tags": ["a", "b"]}


def test_a_placeholder_inside_text_is_its_text() -> None:
    assert render("run ${n} for ${user.name} (${tags}) $${x}", VALUES) == (
        'run 3 for ada (["a","b"]) ${x}'
    )


def test_an_absent_argument_leaves_its_member_out() -> None:
    assert render({"a": "${missing}", "b": ["${missing}"], "c": 1}, VALUES) == {"b": [None], "c": 1}


def test_nested_values_and_literals_pass_through() -> None:
    template = {"meta": {"task": "${taskId}", "fixed": True}, "list": [1, "${user}"]}
    assert render(template, VALUES) == {
        "meta": {"task": "t1", "fixed": True},
        "list": [1, {"name": "ada"}],
    }
