"""The declaration file: what loads, and the one-line errors for what cannot be served.

Each error names the file, the tool and the field (never a traceback); the same message comes
out of `config.load_toolset`, which `make run` and the deployed functions use."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcp_tasks_aws.config import ToolsModuleError, load_toolset
from mcp_tasks_aws.targets.declaration import DeclarationError, load_declaration
from support.targets import EXAMPLE, MACHINE, OBJECT, SECRET_ARN, tool, write

FUNCTION = {"kind": "lambda", "function": "echo-fn"}


def error_of(path: Path) -> str:
    with pytest.raises(DeclarationError) as caught:
        load_declaration(path)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_the_example_declaration_loads_one_tool_of_each_kind() -> None:
    declaration = load_declaration(EXAMPLE)
    kinds = {t.name: (t.target.kind, t.task_policy) for t in declaration.tools}
    assert kinds == {
        "word_count": ("lambda", "inline"),
        "deploy": ("stateMachine", "required"),
        "quote": ("stateMachine", "inline"),
        "list_items": ("http", "inline"),
        "add_item": ("http", "inline"),
        "get_item": ("http", "inline"),
    }
    deploy = next(t for t in declaration.tools if t.name == "deploy")
    assert deploy.target.definition == EXAMPLE.parent / "approval.asl.json"  # type: ignore[union-attr]


def test_json_is_accepted_too(tmp_path: Path) -> None:
    path = write(tmp_path, tool("echo", FUNCTION), name="tools.json")
    assert [t.name for t in load_declaration(path).tools] == ["echo"]


def test_mcp_tasks_tools_may_name_a_declaration(tmp_path: Path) -> None:
    toolset = load_toolset(str(write(tmp_path, tool("echo", FUNCTION))))
    assert list(toolset.tools) == ["echo"]
    # Listed closed: the declared schema names what reaches the target, and nothing else does.
    assert toolset.tools["echo"].to_wire()["inputSchema"] == {
        **OBJECT,
        "additionalProperties": False,
    }


def test_load_toolset_says_a_declaration_error_in_one_line(tmp_path: Path) -> None:
    path = write(tmp_path, tool("echo", {"kind": "sqs", "queue": "q"}))
    with pytest.raises(ToolsModuleError, match=r"tool 'echo': target\.kind: unknown target kind"):
        load_toolset(str(path))


@pytest.mark.parametrize(
    ("target", "field", "problem"),
    [
        ({"kind": "sqs"}, "target.kind", "unknown target kind 'sqs' (one of: lambda, stateMachine"),
        ({"kind": "lambda"}, "target", "missing 'function'"),
        ({"kind": "lambda", "function": "f", "extra": 1}, "target", "unknown field 'extra'"),
        (
            {"kind": "lambda", "function": "arn:aws:lambda:us-east-1:1:function:f"},
            "target.function",
            "neither a function name nor a Lambda function ARN",
        ),
        (
            {"kind": "stateMachine", "arn": "arn:aws:states:us-east-1:123456789012:activity:x"},
            "target.arn",
            "is not a state machine ARN",
        ),
        ({"kind": "http", "method": "GET", "url": "ftp://x/{id}"}, "target.url", "not an http"),
        (
            {"kind": "http", "method": "GET", "url": "https://x/{id}"},
            "target.url",
            "{id} is not one of inputSchema's properties",
        ),
        (
            {"kind": "http", "method": "GET", "url": "https://x", "auth": {"type": "bearer"}},
            "target.auth.secretArn",
            "bearer needs it",
        ),
        (
            {
                "kind": "http",
                "method": "GET",
                "url": "https://x",
                "auth": {"type": "apiKey", "secretArn": "arn:aws:s3:::bucket"},
            },
            "target.auth.secretArn",
            "is not a Secrets Manager secret ARN",
        ),
        (
            {
                "kind": "http",
                "method": "GET",
                "url": "https://x",
                "auth": {
                    "type": "bearer",
                    "secretArn": "arn:aws:secretsmanager:us-east-1:123456789012:secret:billing",
                },
            },
            "target.auth.secretArn",
            "'arn:aws:secretsmanager:us-east-1:123456789012:secret:billing' is a partial secret "
            "ARN: give the complete one, ending in the 6 characters Secrets Manager adds to the "
            "name (billing-AbCdEf); IAM matches only that",
        ),
        (
            {
                "kind": "http",
                "method": "GET",
                "url": "https://x.lambda-url.us-east-1.on.aws/",
                "auth": {"type": "sigv4", "service": "lambda", "function": "arn:aws:s3:::b"},
            },
            "target.auth.function",
            "is neither a function name nor a Lambda function ARN",
        ),
        (
            {
                "kind": "http",
                "method": "GET",
                "url": "https://x",
                "auth": {"type": "bearer", "secretArn": SECRET_ARN, "function": "f"},
            },
            "target.auth.function",
            "only sigv4 for service lambda (a function URL) names a function",
        ),
        (
            {"kind": "http", "method": "GET", "url": "https://x", "headers": {"Host": "y"}},
            "target.headers",
            "'Host' is set by the HTTP client from the request itself",
        ),
        (
            {
                "kind": "http",
                "method": "GET",
                "url": "https://x",
                "headerArguments": {"Content-Length": "message"},
            },
            "target.headerArguments",
            "'Content-Length' is set by the HTTP client from the request itself",
        ),
    ],
)
def test_a_bad_target_names_file_tool_and_field(
    tmp_path: Path, target: dict[str, Any], field: str, problem: str
) -> None:
    path = write(tmp_path, tool("echo", target))
    assert error_of(path).startswith(f"{path}: tool 'echo': {field}: ")
    assert problem in error_of(path)


@pytest.mark.parametrize(
    ("schema", "field", "problem"),
    [
        (
            {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"},
            "inputSchema.$schema",
            "is not JSON Schema 2020-12",
        ),
        ({"type": "string"}, "inputSchema.type", 'must be "object"'),
        (
            {"type": "object", "properties": {"n": {"type": "integer", "minimum": "one"}}},
            "inputSchema.properties.n.minimum",
            "not valid JSON Schema 2020-12",
        ),
    ],
)
def test_a_schema_that_is_not_2020_12_is_refused(
    tmp_path: Path, schema: dict[str, Any], field: str, problem: str
) -> None:
    path = write(tmp_path, tool("echo", FUNCTION, inputSchema=schema))
    message = error_of(path)
    assert message.startswith(f"{path}: tool 'echo': {field}: "), message
    assert problem in message


def test_the_2020_12_dialect_may_be_named(tmp_path: Path) -> None:
    schema = {**OBJECT, "$schema": "https://json-schema.org/draft/2020-12/schema"}
    path = write(tmp_path, tool("echo", FUNCTION, inputSchema=schema))
    assert load_declaration(path).tools[0].input_schema == schema


def test_two_tools_with_one_name_are_refused(tmp_path: Path) -> None:
    path = write(tmp_path, tool("echo", FUNCTION), tool("echo", FUNCTION))
    assert error_of(path) == f"{path}: tool 'echo': name: two tools have this name"


def test_a_tool_without_a_name_is_named_by_its_place(tmp_path: Path) -> None:
    entry = tool("echo", FUNCTION)
    del entry["name"]
    path = write(tmp_path, tool("first", FUNCTION), entry)
    assert error_of(path) == f"{path}: tool '#2': (top level): missing 'name'"


def test_a_standard_machine_runs_only_as_a_task(tmp_path: Path) -> None:
    target = {"kind": "stateMachine", "arn": MACHINE}
    path = write(tmp_path, tool("approve", target, task="optional"))
    assert "tool 'approve': task: a Standard state machine runs only as a task" in error_of(path)
    assert load_declaration(write(tmp_path, tool("approve", target))).tools[0].task == None  # noqa: E711


def test_a_missing_or_broken_file_is_one_line(tmp_path: Path) -> None:
    assert error_of(tmp_path / "nope.yaml") == f"{tmp_path / 'nope.yaml'}: file: no such file"
    broken = tmp_path / "broken.yaml"
    broken.write_text("version: 1\ntools: [\n")
    assert error_of(broken).startswith(f"{broken}: file: is not YAML or JSON")
    (tmp_path / "list.yaml").write_text("- 1\n")
    assert "must hold a mapping" in error_of(tmp_path / "list.yaml")


def test_an_unknown_top_level_field_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, tool("echo", FUNCTION), extra=True)
    assert error_of(path) == f"{path}: (top level): unknown field 'extra'"


def test_a_schema_whose_arguments_cannot_be_read_must_say_whether_it_takes_others(
    tmp_path: Path,
) -> None:
    schema = {"type": "object", "allOf": [{"$ref": "https://example.com/args.json"}]}
    path = write(tmp_path, tool("echo", FUNCTION, inputSchema=schema))
    assert error_of(path) == (
        f"{path}: tool 'echo': inputSchema.allOf.0.$ref: 'https://example.com/args.json' cannot "
        "be read here to know which arguments the target takes: refer inside the schema "
        "(#/$defs/...), or say additionalProperties or unevaluatedProperties at its root"
    )
    said = {**schema, "additionalProperties": True}
    assert load_declaration(write(tmp_path, tool("echo", FUNCTION, inputSchema=said))).tools
