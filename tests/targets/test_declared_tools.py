"""Declared tools behind the real transport, their targets faked (`support.targets.FakeCalls`):
what each target kind sends, and what the client reads back."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mcp_tasks_aws.targets.ports import HttpAnswer, HttpRequest, SyncRun
from mcp_tasks_aws.targets.tools import declared_tools
from mcp_tasks_aws.tools.registry import ToolDefinitionError, ToolSet
from support.mcp import McpClient
from support.targets import OBJECT, SECRET_ARN, FakeCalls, bound, json_answer, tool, write

COUNTS = {
    "type": "object",
    "properties": {"words": {"type": "integer"}},
    "required": ["words"],
}
EXPRESS = "arn:aws:states:us-east-1:123456789012:stateMachine:quote"


@pytest.fixture
def calls() -> FakeCalls:
    return FakeCalls()


@pytest.fixture
def served(
    tmp_path: Path, calls: FakeCalls, make_client: Callable[..., McpClient]
) -> Callable[..., McpClient]:
    def serve(*tools: dict[str, Any]) -> McpClient:
        return make_client(bound(write(tmp_path, *tools), calls))

    return serve


def text_of(result: dict[str, Any]) -> str:
    return "".join(block["text"] for block in result["content"])


# -- lambda -------------------------------------------------------------------------------------


def test_a_sync_lambda_gets_the_templated_payload_and_answers_structured_content(
    served: Callable[..., McpClient], calls: FakeCalls
) -> None:
    calls.functions["counter"] = lambda event: {"words": len(event["body"].split())}
    target = {"kind": "lambda", "function": "counter", "payload": {"body": "${text}", "k": 1}}
    client = served(tool("count", target, outputSchema=COUNTS))
    result = client.tool_result("count", {"text": "one two three"})
    assert result["structuredContent"] == {"words": 3}
    assert json.loads(text_of(result)) == {"words": 3}
    assert calls.calls == [("invoke", ("counter", None, {"body": "one two three", "k": 1}))]
    listed = client.result("tools/list")["tools"][0]
    assert listed["outputSchema"] == COUNTS


def test_a_qualified_function_arn_is_invoked_with_its_qualifier(
    served: Callable[..., McpClient], calls: FakeCalls
) -> None:
    arn = "arn:aws:lambda:us-east-1:123456789012:function:counter"
    calls.functions[arn] = lambda event: "ok"
    client = served(tool("count", {"kind": "lambda", "function": f"{arn}:live"}))
    assert text_of(client.tool_result("count", {"text": "x"})) == "ok"
    assert calls.calls == [("invoke", (arn, "live", {"text": "x"}))]


def test_a_function_error_is_a_tool_error_with_its_type_and_message(
    served: Callable[..., McpClient], calls: FakeCalls
) -> None:
    def broken(event: Any) -> Any:
        raise KeyError("no such document")

    calls.functions["counter"] = broken
    client = served(tool("count", {"kind": "lambda", "function": "counter"}))
    result = client.tool_result("count", {"text": "x"})
    assert result["isError"] is True
    assert text_of(result) == "Lambda function counter failed: KeyError: 'no such document'"


def test_arguments_failing_the_declared_schema_are_invalid_params_naming_the_argument(
    served: Callable[..., McpClient], calls: FakeCalls
) -> None:
    client = served(tool("count", {"kind": "lambda", "function": "counter"}))
    response = client.call_tool("count", {"text": 7})
    assert response.status == 200
    error = client.error(response)
    assert error["code"] == -32602
    assert error["message"] == "Invalid arguments for tool count: text: must be of type string"
    missing = client.error(client.call_tool("count", {}))
    assert missing["message"] == "Invalid arguments for tool count: arguments: missing text"
    assert calls.calls == []


@pytest.mark.parametrize("code", ["ResourceNotFoundException", "TooManyRequestsException"])
def test_a_missing_or_throttled_function_is_an_error_naming_it_and_the_code(
    served: Callable[..., McpClient], calls: FakeCalls, code: str
) -> None:
    calls.unavailable["counter"] = code
    client = served(tool("count", {"kind": "lambda", "function": "counter"}))
    response = client.call_tool("count", {"text": "x"})
    assert response.status == 200  # never the server's own 5xx
    error = client.error(response)
    assert error["code"] == -32603
    assert error["message"] == f"Tool count: Lambda function counter: {code}"


# -- express ------------------------------------------------------------------------------------


def express_tool(**fields: Any) -> dict[str, Any]:
    target = {"kind": "stateMachine", "type": "EXPRESS", "arn": EXPRESS, "toolErrors": ["Nope"]}
    return tool("quote", target, **fields)


def test_an_express_machine_runs_inline_with_the_arguments_as_input(
    served: Callable[..., McpClient], calls: FakeCalls
) -> None:
    calls.express[EXPRESS] = lambda payload: SyncRun(
        "SUCCEEDED", json.dumps({"words": len(payload["arguments"]["text"])})
    )
    client = served(express_tool(outputSchema=COUNTS))
    result = client.tool_result("quote", {"text": "abc"})
    assert result["structuredContent"] == {"words": 3}
    assert calls.calls == [("run_express", (EXPRESS, {"arguments": {"text": "abc"}}))]


def test_an_express_failure_named_a_tool_error_is_an_is_error_result(
    served: Callable[..., McpClient], calls: FakeCalls
) -> None:
    calls.express[EXPRESS] = lambda payload: SyncRun("FAILED", None, "Nope", "out of stock")
    result = served(express_tool()).tool_result("quote", {"text": "abc"})
    assert result["isError"] is True
    assert text_of(result) == "Nope: out of stock"


def test_any_other_express_failure_is_an_error_carrying_error_and_cause(
    served: Callable[..., McpClient], calls: FakeCalls
) -> None:
    calls.express[EXPRESS] = lambda payload: SyncRun("TIMED_OUT", None, "States.Timeout", "late")
    client = served(express_tool())
    error = client.error(client.call_tool("quote", {"text": "abc"}))
    assert error["code"] == -32603
    assert error["message"] == "Tool quote: the workflow timed out (States.Timeout)"
    assert error["data"] == {"status": "TIMED_OUT", "error": "States.Timeout", "cause": "late"}


# -- http ---------------------------------------------------------------------------------------

ITEM_SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "limit": {"type": "integer"},
        "note": {"type": "string"},
    },
    "required": ["id"],
}


def http_tool(method: str = "GET", **target: Any) -> dict[str, Any]:
    spec = {"kind": "http", "method": method, "url": "https://api.example.com/items/{id}"}
    return tool("item", {**spec, **target}, inputSchema=ITEM_SCHEMA)


def answering(answer: HttpAnswer) -> Callable[[HttpRequest], HttpAnswer]:
    return lambda request: answer


def test_an_http_get_fills_the_url_and_the_query(
    served: Callable[..., McpClient], calls: FakeCalls
) -> None:
    calls.http = answering(json_answer(200, {"id": "a/b", "name": "widget"}))
    client = served(http_tool(query=["limit"]))
    result = client.tool_result("item", {"id": "a?b#c", "limit": 3})
    assert json.loads(text_of(result)) == {"id": "a/b", "name": "widget"}
    ((_, request),) = calls.calls
    assert request.url == "https://api.example.com/items/a%3Fb%23c?limit=3"
    assert request.body is None


def test_an_http_post_sends_the_other_arguments_as_json(
    served: Callable[..., McpClient], calls: FakeCalls
) -> None:
    calls.http = answering(json_answer(201, {"ok": True}))
    served(http_tool("POST")).tool_result("item", {"id": "7", "note": "hi"})
    ((_, request),) = calls.calls
    assert request.url == "https://api.example.com/items/7"
    assert json.loads(request.body) == {"note": "hi"}
    assert request.headers["content-type"] == "application/json"


def test_a_non_2xx_answer_is_a_tool_error_with_the_status_and_a_cut_body(
    served: Callable[..., McpClient], calls: FakeCalls
) -> None:
    calls.http = answering(HttpAnswer(503, {}, b"x" * 5000))
    result = served(http_tool(query=["limit"])).tool_result("item", {"id": "7", "limit": 1})
    assert result["isError"] is True
    text = text_of(result)
    assert text.startswith("HTTP 503 from GET https://api.example.com/items/7: xxx")
    assert "limit" not in text  # the query string is left out
    assert len(text) < 1100


@pytest.mark.parametrize(
    ("auth", "header", "value"),
    [
        ({"type": "apiKey", "secretArn": SECRET_ARN}, "x-api-key", "s3cret"),
        ({"type": "apiKey", "secretArn": SECRET_ARN, "header": "X-Key"}, "x-key", "s3cret"),
        ({"type": "bearer", "secretArn": SECRET_ARN}, "authorization", "Bearer s3cret"),
    ],
)
def test_api_keys_and_bearer_tokens_come_from_secrets_manager(
    served: Callable[..., McpClient],
    calls: FakeCalls,
    auth: dict[str, Any],
    header: str,
    value: str,
) -> None:
    calls.secrets[SECRET_ARN] = "s3cret"
    calls.http = answering(json_answer(200, {}))
    served(http_tool(auth=auth)).tool_result("item", {"id": "7"})
    request = calls.calls[-1][1]
    assert request.headers[header] == value
    assert ("secret", SECRET_ARN) in calls.calls


def test_sigv4_signs_for_the_region_in_the_url(
    served: Callable[..., McpClient], calls: FakeCalls
) -> None:
    calls.http = answering(json_answer(200, {}))
    url = "https://abc.execute-api.eu-west-1.amazonaws.com/prod/items/{id}"
    served(http_tool(url=url, auth={"type": "sigv4"})).tool_result("item", {"id": "7"})
    assert ("sign", ("execute-api", "eu-west-1")) in calls.calls
    assert calls.calls[-1][1].headers["authorization"].startswith("AWS4-HMAC-SHA256")


def test_an_unreachable_host_is_an_error_naming_it(
    served: Callable[..., McpClient], calls: FakeCalls
) -> None:
    from mcp_tasks_aws.tasks.exceptions import TargetUnavailable

    def refuse(request: HttpRequest) -> HttpAnswer:
        raise TargetUnavailable("HTTP target api.example.com", "ConnectionRefusedError")

    calls.http = refuse
    client = served(http_tool())
    error = client.error(client.call_tool("item", {"id": "7"}))
    assert error["message"] == "Tool item: HTTP target api.example.com: ConnectionRefusedError"


# -- mixing with code tools --------------------------------------------------------------------


def test_a_code_tool_set_includes_declared_tools(
    tmp_path: Path, calls: FakeCalls, make_client: Callable[..., McpClient]
) -> None:
    tools = ToolSet()

    @tools.tool
    def hello(name: str) -> str:
        """Say hello."""
        return f"hello {name}"

    calls.functions["counter"] = lambda event: {"words": 1}
    tools.include(
        bound(write(tmp_path, tool("count", {"kind": "lambda", "function": "counter"})), calls)
    )
    client = make_client(tools)
    assert {t["name"] for t in client.result("tools/list")["tools"]} == {"hello", "count"}
    assert text_of(client.tool_result("hello", {"name": "x"})) == "hello x"
    assert json.loads(text_of(client.tool_result("count", {"text": "x"}))) == {"words": 1}
    # A code tool's bad arguments stay a tool error, as before.
    assert client.tool_result("hello", {"name": 3})["isError"] is True


def test_including_a_tool_name_twice_is_refused(tmp_path: Path) -> None:
    tools = ToolSet()

    @tools.tool
    def count(text: str) -> str:
        """Count."""
        return text

    declared = declared_tools(write(tmp_path, tool("count", {"kind": "lambda", "function": "f"})))
    with pytest.raises(ToolDefinitionError, match="tool 'count' is registered twice"):
        tools.include(declared)


# -- undeclared arguments ----------------------------------------------------------------------


def test_an_argument_the_declared_schema_does_not_name_is_refused_naming_it(
    served: Callable[..., McpClient], calls: FakeCalls
) -> None:
    calls.functions["counter"] = lambda event: {"words": 1}
    calls.express[EXPRESS] = lambda payload: SyncRun("SUCCEEDED", "{}")
    calls.http = answering(json_answer(200, {}))
    client = served(
        tool("count", {"kind": "lambda", "function": "counter"}),
        express_tool(),
        http_tool("POST"),
        tool("deploy", {"kind": "stateMachine", "arn": EXPRESS.replace("quote", "deploy")}),
    )
    for name, arguments, unknown in [
        ("count", {"text": "x", "admin": True}, ["admin"]),
        ("quote", {"text": "x", "taskId": "forged"}, ["taskId"]),
        ("item", {"id": "7", "note": "hi", "role": "owner", "owner": "me"}, ["role", "owner"]),
        ("deploy", {"text": "v1", "approvedBy": "me"}, ["approvedBy"]),
    ]:
        response = client.call_tool(name, arguments)
        assert response.status == 200
        error = client.error(response)
        assert error["code"] == -32602, error
        assert error["data"] == {"unknownArguments": unknown}
        assert all(repr(argument) in error["message"] for argument in unknown), error
    assert calls.calls == []  # no event, input or body carried them
    listed = {t["name"]: t["inputSchema"] for t in client.result("tools/list")["tools"]}
    assert listed["count"] == {**OBJECT, "additionalProperties": False}


CLOSED: dict[str, Any] = {"additionalProperties": False}


@pytest.mark.parametrize(
    ("extra_schema", "arguments", "listed_extra"),
    [
        ({"additionalProperties": True}, {"text": "x", "more": [1]}, {}),
        ({"additionalProperties": {"type": "integer"}}, {"text": "x", "n": 2}, {}),
        ({"unevaluatedProperties": {"type": "integer"}}, {"text": "x", "n": 3}, {}),
        ({"patternProperties": {"^x-": {}}}, {"text": "x", "x-a": 1}, CLOSED),
    ],
)
def test_a_schema_that_says_which_other_arguments_it_takes_is_respected(
    served: Callable[..., McpClient],
    calls: FakeCalls,
    extra_schema: dict[str, Any],
    arguments: dict[str, Any],
    listed_extra: dict[str, Any],
) -> None:
    calls.functions["counter"] = lambda event: {"words": 1}
    schema = {**OBJECT, **extra_schema}
    client = served(tool("count", {"kind": "lambda", "function": "counter"}, inputSchema=schema))
    client.tool_result("count", arguments)
    assert calls.calls == [("invoke", ("counter", None, arguments))]
    listed = client.result("tools/list")["tools"][0]["inputSchema"]
    assert listed == {**schema, **listed_extra}


def test_an_open_schema_still_checks_what_it_says_about_other_arguments(
    served: Callable[..., McpClient], calls: FakeCalls
) -> None:
    schema = {**OBJECT, "additionalProperties": {"type": "integer"}}
    client = served(tool("count", {"kind": "lambda", "function": "counter"}, inputSchema=schema))
    error = client.error(client.call_tool("count", {"text": "x", "n": "two"}))
    assert error["code"] == -32602
    assert error["message"] == "Invalid arguments for tool count: n: must be of type integer"
    assert calls.calls == []


def test_arguments_named_inside_a_composed_schema_are_declared_too(
    served: Callable[..., McpClient], calls: FakeCalls
) -> None:
    calls.functions["counter"] = lambda event: {"words": 1}
    schema = {
        "type": "object",
        "$defs": {"paging": {"properties": {"page": {"type": "integer"}}}},
        "allOf": [{"$ref": "#/$defs/paging"}],
        "anyOf": [
            {"properties": {"text": {"type": "string"}}, "required": ["text"]},
            {"properties": {"url": {"type": "string"}}, "required": ["url"]},
        ],
        "if": {"properties": {"url": {"const": "x"}}},
        "then": {"properties": {"why": {"type": "string"}}},
        "dependentSchemas": {"url": {"properties": {"depth": {"type": "integer"}}}},
    }
    client = served(tool("count", {"kind": "lambda", "function": "counter"}, inputSchema=schema))
    arguments = {"url": "u", "page": 2, "depth": 1, "why": "w"}
    client.tool_result("count", arguments)
    assert calls.calls == [("invoke", ("counter", None, arguments))]
    error = client.error(client.call_tool("count", {"text": "t", "pgae": 2}))
    assert error["message"] == "Unknown argument 'pgae' for tool count: did you mean 'page'?"
    error = client.error(client.call_tool("count", {"text": "t", "page": "two"}))
    assert error["message"] == "Invalid arguments for tool count: page: must be of type integer"
    listed = client.result("tools/list")["tools"][0]["inputSchema"]
    assert listed["additionalProperties"] is False
    assert sorted(listed["properties"]) == ["depth", "page", "text", "url", "why"]
    assert {k: v for k, v in listed.items() if k not in ("properties", "additionalProperties")} == {
        k: v for k, v in schema.items()
    }


def test_a_cause_step_functions_wrote_is_never_logged_whole(
    served: Callable[..., McpClient], calls: FakeCalls, caplog: pytest.LogCaptureFixture
) -> None:
    # States.Runtime quotes the state's input, answers included; a workflow's own cause (a
    # Lambda state's stack trace) is logged whole, for whoever runs the stack.
    answer = "my-secret-answer"
    quoted = (
        f"An error occurred while executing the state 'Pick'.\nThe input '{{\"a\": \"{answer}\"}}'"
    )
    trace = "Traceback (most recent call last):\n  File handler.py, line 3\nValueError: no stock"
    calls.express[EXPRESS] = lambda payload: SyncRun("FAILED", None, "States.Runtime", quoted)
    client = served(express_tool())
    with caplog.at_level("INFO", logger="mcp_tasks_aws.targets.tools"):
        client.call_tool("quote", {"text": "abc"})
        calls.express[EXPRESS] = lambda payload: SyncRun("FAILED", None, "ValueError", trace)
        client.call_tool("quote", {"text": "abc"})
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert answer not in logged
    assert "not logged: Step Functions' own" in logged
    assert "File handler.py, line 3" in logged
