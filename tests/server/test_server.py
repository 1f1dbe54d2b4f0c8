"""The MCP server behind the transport: lists, tool calls, prompts and multi round-trip input."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel, Field

from mcp_tasks_aws import ToolContext, ToolError, ToolSet
from support.mcp import TASKS_EXTENSION, McpClient

ACCEPT_ALICE = {"action": "accept", "content": {"name": "Alice"}}
Factory = Callable[..., McpClient]


# -- a tool set of our own ----------------------------------------------------------------------

custom = ToolSet(name="server-tests", version="9.9.9")


class Forecast(BaseModel):
    city: str
    high: float = Field(description="Highest temperature in Celsius")


@custom.tool
def forecast(city: str) -> Forecast:
    """Tomorrow's forecast for a city."""
    return Forecast(city=city, high=21.5)


@custom.tool
def to_fahrenheit(celsius: float) -> float:
    """Convert Celsius to Fahrenheit."""
    return celsius * 9 / 5 + 32


@custom.tool
def explode(reason: str) -> str:
    """Always fails with an unexpected exception."""
    raise RuntimeError(f"disk full while {reason}")


@custom.tool
def refuse() -> str:
    """Always fails with a tool error."""
    raise ToolError("no, thanks")


@custom.tool
async def confirm_value(value: int, ctx: ToolContext) -> str:
    """Asks the user to confirm a value."""
    form = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    answer = await ctx.elicit(f"Use {value}?", form, key="confirm")
    return f"value {value} confirmed={(answer.content or {}).get('ok')}"


@custom.prompt
def review(language: str, focus: str = "correctness") -> str:
    """A code review request.

    Args:
        language: The programming language.
        focus: What to concentrate on.
    """
    return f"Review this {language} code for {focus}."


@pytest.fixture
def custom_client(make_client: Factory) -> McpClient:
    return make_client(custom)


def _numbered_toolset(count: int) -> ToolSet:
    toolset = ToolSet()
    for i in range(count):

        def fn(i: int = i) -> str:
            return str(i)

        toolset.tool(name=f"tool_{i}", description=f"Tool number {i}")(fn)
    return toolset


def _state_payload(state: str) -> dict[str, Any]:
    body = state.split(".")[2]
    payload: dict[str, Any] = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    return payload


def _journal(state: str) -> dict[str, Any]:
    """The answers a state carries in clear."""
    answers: dict[str, Any] = _state_payload(state)["a"]
    return answers


def _text(result: dict[str, Any]) -> str:
    return "".join(block["text"] for block in result["content"] if block["type"] == "text")


# -- server/discover ----------------------------------------------------------------------------


def test_discover_advertises_what_the_toolset_has(client: McpClient, make_client: Factory) -> None:
    conformance = client.result("server/discover")
    assert conformance["resultType"] == "complete"
    assert conformance["supportedVersions"] == ["2026-07-28"]
    capabilities = conformance["capabilities"]
    assert (capabilities["tools"], capabilities["prompts"], capabilities["resources"]) == (
        {},
        {},
        {},
    )
    info = conformance["_meta"]["io.modelcontextprotocol/serverInfo"]
    assert info == {"name": "mcp-tasks-aws-conformance", "version": "0.1.0"}
    # A tool set without prompts or resources does not advertise them; nor tasks without a backend.
    bare = make_client(_numbered_toolset(1)).result("server/discover")
    assert bare["capabilities"]["tools"] == {}
    assert "prompts" not in bare["capabilities"]
    assert "resources" not in bare["capabilities"]
    assert TASKS_EXTENSION not in json.dumps(bare)


def test_discover_advertises_logging_since_tools_can_log(client: McpClient) -> None:
    # Given a server whose tools send notifications/message when a request sets a log level
    logged = client.call_tool("test_logging_tool", {}, log_level="info")
    assert b"notifications/message" in logged.body
    # Then discovery says so: ServerCapabilities.logging is "present if the server supports
    # sending log messages to the client".
    assert client.result("server/discover")["capabilities"].get("logging") == {}


# -- tools/list ---------------------------------------------------------------------------------


def test_tools_list_pages_through_all_tools(make_client: Factory) -> None:
    # Given seven tools served three per page
    paged = make_client(_numbered_toolset(7), page_size=3)
    # When the client follows nextCursor
    first = paged.result("tools/list")
    second = paged.result("tools/list", {"cursor": first["nextCursor"]})
    third = paged.result("tools/list", {"cursor": second["nextCursor"]})
    # Then it sees three pages, in registration order, and the last has no cursor
    names = [[tool["name"] for tool in page["tools"]] for page in (first, second, third)]
    assert names == [["tool_0", "tool_1", "tool_2"], ["tool_3", "tool_4", "tool_5"], ["tool_6"]]
    assert "nextCursor" not in third
    assert first["nextCursor"] != second["nextCursor"]


def test_tools_list_fits_one_page_without_cursor(make_client: Factory) -> None:
    result = make_client(_numbered_toolset(3), page_size=3).result("tools/list")
    assert len(result["tools"]) == 3
    assert "nextCursor" not in result


@pytest.mark.parametrize(
    "cursor",
    [
        "not-a-cursor",
        "",
        "%%%",
        base64.urlsafe_b64encode(b"99").decode(),
        base64.urlsafe_b64encode(b"-1").decode(),
        base64.urlsafe_b64encode(b"three").decode(),
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),
    ],
)
def test_invalid_cursor_is_invalid_params(make_client: Factory, cursor: str) -> None:
    paged = make_client(_numbered_toolset(7), page_size=3)
    response = paged.request("tools/list", {"cursor": cursor})
    assert paged.error(response)["code"] == -32602


def test_tools_list_order_is_registration_order_and_stable(make_client: Factory) -> None:
    toolset = ToolSet()
    for name in ("zeta", "alpha", "mid"):
        toolset.tool(name=name, description=f"The {name} tool")(lambda: "x")
    lister = make_client(toolset)
    runs = [[t["name"] for t in lister.result("tools/list")["tools"]] for _ in range(3)]
    assert runs == [["zeta", "alpha", "mid"]] * 3


def test_every_conformance_tool_has_a_description_and_an_object_schema(client: McpClient) -> None:
    tools = client.result("tools/list")["tools"]
    assert len(tools) >= 10
    assert tools[0]["name"] == "test_simple_text"
    for tool in tools:
        assert isinstance(tool["description"], str)
        assert tool["description"].strip(), tool["name"]
        assert tool["inputSchema"]["type"] == "object"


# -- tools/call ---------------------------------------------------------------------------------


def test_simple_text_tool(client: McpClient) -> None:
    result = client.tool_result("test_simple_text")
    assert result == {
        "resultType": "complete",
        "content": [{"type": "text", "text": "This is a simple text response for testing."}],
    }


def test_tool_arguments_reach_the_tool(client: McpClient) -> None:
    assert _text(client.tool_result("greet", {"name": "Ada"})) == "Hello, Ada!"
    assert _text(client.tool_result("greet")) == "Hello, World!"


@pytest.mark.parametrize("name", ["no_such_tool", "Greet", "greet.v2"])
def test_unknown_tool_is_invalid_params(client: McpClient, name: str) -> None:
    response = client.call_tool(name, {})
    assert response.status == 200
    error = client.error(response)
    assert error["code"] == -32602
    assert name in error["message"]


@pytest.mark.parametrize(
    ("arguments", "fields"),
    [
        ({"seconds": "soon", "label": "x"}, ["seconds"]),
        ({"label": "x"}, ["seconds"]),
        ({}, ["seconds", "label"]),
        ({"seconds": 0, "label": ["not", "a", "string"]}, ["label"]),
    ],
)
def test_invalid_arguments_are_an_error_result_naming_the_field(
    client: McpClient, arguments: dict[str, Any], fields: list[str]
) -> None:
    # When a tool is called with arguments that do not match its schema
    result = client.tool_result("slow_compute", arguments)
    # Then the model gets an isError result it can read and correct, not a protocol error
    assert result["resultType"] == "complete"
    assert result["isError"] is True
    text = _text(result)
    for field in fields:
        assert field in text
    assert "slow_compute" in text


def test_tool_error_is_an_error_result_with_exactly_its_message(client: McpClient) -> None:
    result = client.tool_result("test_error_handling")
    assert result["isError"] is True
    assert _text(result) == "This tool intentionally returns an error for testing"


def test_unexpected_exception_is_an_error_result(custom_client: McpClient) -> None:
    result = custom_client.tool_result("explode", {"reason": "saving"})
    assert result["resultType"] == "complete"
    assert result["isError"] is True
    assert "explode" in _text(result)
    assert "Traceback" not in _text(result)


def test_custom_tool_error(custom_client: McpClient) -> None:
    result = custom_client.tool_result("refuse")
    assert result["isError"] is True
    assert _text(result) == "no, thanks"


def _output_schema(lister: McpClient, name: str) -> dict[str, Any] | None:
    tools = {t["name"]: t for t in lister.result("tools/list")["tools"]}
    return tools[name].get("outputSchema")


def test_model_return_gives_structured_content_matching_output_schema(
    custom_client: McpClient,
) -> None:
    schema = _output_schema(custom_client, "forecast")
    assert schema is not None
    assert schema["type"] == "object"
    assert set(schema["properties"]) == {"city", "high"}
    result = custom_client.tool_result("forecast", {"city": "Lyon"})
    assert result["structuredContent"] == {"city": "Lyon", "high": 21.5}
    jsonschema.validate(result["structuredContent"], schema)
    # Clients without structured-content support still get the same data as text.
    assert json.loads(_text(result)) == {"city": "Lyon", "high": 21.5}


def test_non_object_return_is_wrapped_in_result(custom_client: McpClient) -> None:
    schema = _output_schema(custom_client, "to_fahrenheit")
    assert schema == {
        "type": "object",
        "properties": {"result": {"type": "number"}},
        "required": ["result"],
    }
    result = custom_client.tool_result("to_fahrenheit", {"celsius": 100})
    assert result["structuredContent"] == {"result": 212.0}
    jsonschema.validate(result["structuredContent"], schema)
    assert json.loads(_text(result)) == 212.0


def test_text_tools_have_no_output_schema_nor_structured_content(client: McpClient) -> None:
    assert _output_schema(client, "greet") is None
    assert "structuredContent" not in client.tool_result("greet")


# -- prompts and resources ----------------------------------------------------------------------


def test_prompts_get_renders_with_arguments(custom_client: McpClient) -> None:
    result = custom_client.result(
        "prompts/get", {"name": "review", "arguments": {"language": "Rust"}}
    )
    assert result["resultType"] == "complete"
    assert result["messages"] == [
        {
            "role": "user",
            "content": {"type": "text", "text": "Review this Rust code for correctness."},
        }
    ]


@pytest.mark.parametrize(
    "arguments", [None, {}, {"focus": "speed"}], ids=["no-arguments", "empty", "only-optional"]
)
def test_prompts_get_missing_required_argument_is_invalid_params(
    custom_client: McpClient, arguments: dict[str, str] | None
) -> None:
    params: dict[str, Any] = {"name": "review"}
    if arguments is not None:
        params["arguments"] = arguments
    error = custom_client.error(custom_client.request("prompts/get", params))
    assert error["code"] == -32602
    assert "language" in error["message"]


def test_prompts_list_describes_arguments(custom_client: McpClient) -> None:
    prompts = custom_client.result("prompts/list")["prompts"]
    assert prompts == [
        {
            "name": "review",
            "description": "A code review request.",
            "arguments": [
                {"name": "language", "required": True, "description": "The programming language."},
                {"name": "focus", "required": False, "description": "What to concentrate on."},
            ],
        }
    ]


def test_unknown_prompt_and_resource_are_invalid_params(client: McpClient) -> None:
    assert client.error(client.request("prompts/get", {"name": "nope"}))["code"] == -32602
    assert client.error(client.request("resources/read", {"uri": "nope://x"}))["code"] == -32602


def test_resources_list_and_read(client: McpClient) -> None:
    resources = client.result("resources/list")["resources"]
    assert [r["uri"] for r in resources] == [
        "conformance://readme",
        "test://static-text",
        "test://static-binary",
        "test://watched-resource",
    ]
    read = client.result("resources/read", {"uri": "conformance://readme"})
    assert read["contents"] == [
        {
            "uri": "conformance://readme",
            "mimeType": "text/plain",
            "text": "This server runs the MCP conformance fixtures.",
        }
    ]


# -- multi round-trip requests ------------------------------------------------------------------

ELICIT_TOOL = "test_input_required_result_elicitation"


def _retry(
    client: McpClient,
    name: str,
    *,
    responses: Any = None,
    state: str | None = None,
    arguments: dict[str, Any] | None = None,
    **kwargs: Any,
) -> Any:
    extra: dict[str, Any] = {"inputResponses": responses}
    if state is not None:
        extra["requestState"] = state
    return client.call_tool(name, arguments or {}, extra_params=extra, **kwargs)


def test_elicitation_round_trip_with_request_state(client: McpClient) -> None:
    # Given a first round that asks the user's name
    first = client.tool_result(ELICIT_TOOL)
    assert first["resultType"] == "input_required"
    assert list(first["inputRequests"]) == ["user_name"]
    request = first["inputRequests"]["user_name"]
    assert request["method"] == "elicitation/create"
    assert request["params"]["message"] == "What is your name?"
    assert request["params"]["requestedSchema"]["required"] == ["name"]
    assert isinstance(first["requestState"], str)
    # When the client retries with the answer and the state, with a new id
    second = _retry(
        client,
        ELICIT_TOOL,
        responses={"user_name": ACCEPT_ALICE},
        state=first["requestState"],
        rid=2,
    )
    # Then the call completes with the answer
    assert second.status == 200
    assert second.json["id"] == 2
    assert second.json["result"]["resultType"] == "complete"
    assert _text(second.json["result"]) == "Hello, Alice!"


def _answer(
    client: McpClient,
    name: str,
    responses: Any,
    *,
    arguments: dict[str, Any] | None = None,
    **kwargs: Any,
) -> Any:
    """Round 1 (the tool asks), then round 2 with `responses` and the state round 1 sealed."""
    first = client.tool_result(name, arguments, **kwargs)
    assert first["resultType"] == "input_required", first
    return _retry(
        client,
        name,
        responses=responses,
        state=first["requestState"],
        arguments=arguments,
        **kwargs,
    )


def test_answers_given_up_front_without_a_state_are_taken(client: McpClient) -> None:
    # A first call may answer before it is asked (the conformance suite's
    # ignore-extra-params scenario); unknown keys are ignored.
    response = _retry(
        client, ELICIT_TOOL, responses={"user_name": ACCEPT_ALICE, "extra": {"action": "x"}}
    )
    assert _text(response.json["result"]) == "Hello, Alice!"


def test_a_state_takes_only_the_keys_it_sealed_as_outstanding(client: McpClient) -> None:
    # Given round 2 of a two-round tool, whose state carries step1's answer
    tool = "test_input_required_result_multi_round"
    first = client.tool_result(tool)
    second = _retry(client, tool, responses={"step1": ACCEPT_ALICE}, state=first["requestState"])
    state = second.json["result"]["requestState"]
    # When round 3 answers step2 and also tries to rewrite step1's sealed answer
    third = _retry(
        client,
        tool,
        responses={
            "step1": {"action": "accept", "content": {"name": "Mallory"}},
            "step2": {"action": "accept", "content": {"color": "blue"}},
        },
        state=state,
    )
    # Then the sealed answer stands
    assert _text(third.json["result"]) == "Alice likes blue."


def test_declined_elicitation_reaches_the_tool(client: McpClient) -> None:
    second = _answer(client, ELICIT_TOOL, {"user_name": {"action": "decline"}})
    assert _text(second.json["result"]) == "Hello, stranger!"


@pytest.mark.parametrize(
    "responses",
    [None, {}, {"wrong_key": ACCEPT_ALICE}, {"User_Name": ACCEPT_ALICE}],
    ids=["null", "empty", "wrong-key", "wrong-case"],
)
def test_unanswered_question_is_asked_again(client: McpClient, responses: Any) -> None:
    first = client.tool_result(ELICIT_TOOL)
    again = _retry(client, ELICIT_TOOL, responses=responses, state=first["requestState"])
    result = again.json["result"]
    assert result["resultType"] == "input_required"
    assert list(result["inputRequests"]) == ["user_name"]


def test_extra_keys_are_ignored_and_not_carried(client: McpClient) -> None:
    result = _answer(
        client,
        "test_input_required_result_multi_round",
        {"step1": ACCEPT_ALICE, "stray": {"action": "accept"}},
    ).json["result"]
    assert list(result["inputRequests"]) == ["step2"]
    assert set(_journal(result["requestState"])) == {"step1"}


@pytest.mark.parametrize(
    "answer",
    [12345, "Alice", {"action": "maybe"}, {"content": {"name": "Alice"}}, [ACCEPT_ALICE]],
    ids=["number", "string", "bad-action", "no-action", "list"],
)
def test_malformed_answer_is_an_error_not_a_completion(client: McpClient, answer: Any) -> None:
    response = _answer(client, ELICIT_TOOL, {"user_name": answer})
    error = client.error(response)
    assert error["code"] == -32602


def test_input_responses_that_are_not_an_object_are_invalid_params(client: McpClient) -> None:
    response = _retry(client, ELICIT_TOOL, responses=12345)
    assert client.error(response)["code"] == -32602


def test_multi_round_issues_a_new_state_each_round(client: McpClient) -> None:
    tool = "test_input_required_result_multi_round"
    # Round 1: step1 is asked
    first = client.tool_result(tool)
    assert list(first["inputRequests"]) == ["step1"]
    # Round 2: answering step1 asks step2, under a different state
    second = _retry(client, tool, responses={"step1": ACCEPT_ALICE}, state=first["requestState"])
    second_result = second.json["result"]
    assert second_result["resultType"] == "input_required"
    assert list(second_result["inputRequests"]) == ["step2"]
    assert second_result["inputRequests"]["step2"]["params"]["message"].startswith("Step 2")
    assert second_result["requestState"] != first["requestState"]
    # Round 3: only step2 is sent; step1 travels in the state
    third = _retry(
        client,
        tool,
        responses={"step2": {"action": "accept", "content": {"color": "blue"}}},
        state=second_result["requestState"],
    )
    assert _text(third.json["result"]) == "Alice likes blue."


def test_partial_answers_to_simultaneous_questions_are_kept(client: McpClient) -> None:
    tool = "test_input_required_result_multiple_inputs"
    first = client.tool_result(tool)
    assert set(first["inputRequests"]) == {"user_name", "greeting", "client_roots"}
    # Round 2: only the name is answered; the other two are asked again
    second = _retry(
        client, tool, responses={"user_name": ACCEPT_ALICE}, state=first["requestState"]
    ).json["result"]
    assert second["resultType"] == "input_required"
    assert set(second["inputRequests"]) == {"greeting", "client_roots"}
    # Round 3: the rest is answered; the name given in round 2 must not be lost
    third = _retry(
        client,
        tool,
        responses={
            "greeting": {"role": "assistant", "content": {"type": "text", "text": "Hi"}},
            "client_roots": {"roots": [{"uri": "file:///src"}]},
        },
        state=second["requestState"],
    ).json["result"]
    assert third["resultType"] == "complete", third
    assert _text(third) == "name=Alice; greeting=Hi; roots=1"


def test_sampling_and_roots_round_trips(client: McpClient) -> None:
    sampled = _answer(
        client,
        "test_input_required_result_sampling",
        {
            "capital_question": {
                "role": "assistant",
                "content": {"type": "text", "text": "Paris"},
                "model": "m",
            }
        },
    )
    assert _text(sampled.json["result"]) == "The model answered: Paris"
    roots = _answer(
        client,
        "test_input_required_result_list_roots",
        {"client_roots": {"roots": [{"uri": "file:///a"}, {"uri": "file:///b"}]}},
    )
    assert _text(roots.json["result"]) == "Roots: file:///a, file:///b"


def test_prompt_round_trip(client: McpClient) -> None:
    name = "test_input_required_result_prompt"
    first = client.result("prompts/get", {"name": name})
    assert first["resultType"] == "input_required"
    assert list(first["inputRequests"]) == ["user_context"]
    second = client.result(
        "prompts/get",
        {
            "name": name,
            "inputResponses": {"user_context": {"action": "accept", "content": {"context": "X"}}},
            "requestState": first["requestState"],
        },
    )
    assert second["resultType"] == "complete"
    assert second["messages"][0]["content"]["text"] == "Use this context: X"


def _confirm_state(client: McpClient, tool: str, **kwargs: Any) -> str:
    first = client.tool_result(tool, **kwargs)
    assert first["resultType"] == "input_required"
    state: str = first["requestState"]
    return state


CONFIRM_YES = {"confirm": {"action": "accept", "content": {"ok": True}}}


def test_state_is_accepted_by_the_tool_and_principal_it_was_issued_to(client: McpClient) -> None:
    state = _confirm_state(client, "test_input_required_result_request_state", principal="alice")
    response = _retry(
        client,
        "test_input_required_result_request_state",
        responses=CONFIRM_YES,
        state=state,
        principal="alice",
    )
    assert "state-ok" in _text(response.json["result"])


def test_state_issued_for_one_tool_is_refused_for_another(client: McpClient) -> None:
    # Given a state issued by a tool that asks under the same key as another tool
    state = _confirm_state(client, "test_input_required_result_request_state")
    # When it is presented to the other tool
    response = _retry(
        client, "test_input_required_result_tampered_state", responses=CONFIRM_YES, state=state
    )
    # Then it is refused
    error = client.error(response)
    assert error["code"] == -32602
    assert "requestState" in error["message"]


def test_state_issued_to_one_principal_is_refused_for_another(client: McpClient) -> None:
    state = _confirm_state(client, "test_input_required_result_request_state", principal="alice")
    response = _retry(
        client,
        "test_input_required_result_request_state",
        responses=CONFIRM_YES,
        state=state,
        principal="mallory",
    )
    assert client.error(response)["code"] == -32602


def test_state_issued_for_other_arguments_is_refused(custom_client: McpClient) -> None:
    state = custom_client.tool_result("confirm_value", {"value": 1})["requestState"]
    ok = _retry(
        custom_client, "confirm_value", responses=CONFIRM_YES, state=state, arguments={"value": 1}
    )
    assert _text(ok.json["result"]) == "value 1 confirmed=True"
    refused = _retry(
        custom_client, "confirm_value", responses=CONFIRM_YES, state=state, arguments={"value": 2}
    )
    assert custom_client.error(refused)["code"] == -32602


def test_tampered_state_is_refused(client: McpClient) -> None:
    tool = "test_input_required_result_tampered_state"
    state = _confirm_state(client, tool)
    response = _retry(client, tool, responses=CONFIRM_YES, state=state + "-TAMPERED")
    error = client.error(response)
    assert error["code"] == -32602
    assert "confirmed" not in response.body.decode()


def test_undeclared_capability_is_400_missing_capability(client: McpClient) -> None:
    response = client.call_tool("test_missing_capability", {}, capabilities={"elicitation": {}})
    assert response.status == 400
    error = client.error(response)
    assert error["code"] == -32021
    assert error["data"] == {"requiredCapabilities": {"sampling": {}}}


def test_declared_capability_is_asked_through(client: McpClient) -> None:
    result = client.tool_result("test_missing_capability", capabilities={"sampling": {}})
    assert result["resultType"] == "input_required"
    [request] = result["inputRequests"].values()
    assert request["method"] == "sampling/createMessage"


def test_only_declared_capabilities_are_asked(client: McpClient) -> None:
    result = client.tool_result(
        "test_input_required_result_capabilities", capabilities={"sampling": {}}
    )
    assert result["resultType"] == "input_required"
    methods = {r["method"] for r in result["inputRequests"].values()}
    assert methods == {"sampling/createMessage"}
    none_declared = client.tool_result("test_input_required_result_capabilities", capabilities={})
    assert _text(none_declared) == "The client declared no input capability."


def test_capabilities_are_not_remembered_between_requests(client: McpClient) -> None:
    # A request that declares sampling does not make the next one, which does not, able to sample.
    client.tool_result("test_missing_capability", capabilities={"sampling": {}})
    response = client.call_tool("test_missing_capability", {}, capabilities={})
    assert client.error(response)["code"] == -32021


def test_lists_never_answer_input_required(client: McpClient) -> None:
    for method in ("tools/list", "prompts/list", "resources/list"):
        assert client.result(method)["resultType"] == "complete"
