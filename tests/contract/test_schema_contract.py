"""Every wire shape the server produces, validated against the published 2026-07-28 schema.

The schema is the copy in tests/schemas (the project must not depend on anything outside it).
Responses come from the real transport (conformance and demo tools), never built by hand.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing.exceptions import Unresolvable

from mcp_tasks_aws import ToolSet
from mcp_tasks_aws.app import build_transport
from mcp_tasks_aws.protocol.request_state import RequestStateCodec
from mcp_tasks_aws.protocol.transport import HttpResponse, HttpTransport
from mcp_tasks_aws.server.methods import SUPPORTED_VERSIONS, McpServer
from support.mcp import SECRET, McpClient, conformance_settings
from support.schemas import MCP, REGISTRY

assert_valid, validator = MCP.assert_valid, MCP.validator


def sse_messages(response: HttpResponse) -> list[Any]:
    return [
        json.loads(line[len("data:") :])
        for line in response.body.decode().split("\n")
        if line.startswith("data:")
    ]


@dataclass(frozen=True)
class Clients:
    conformance: McpClient
    demo: McpClient
    broken: McpClient


broken_tools = ToolSet(name="broken", version="0")


@broken_tools.prompt
def crashing_prompt() -> str:
    """A prompt whose rendering fails."""
    raise RuntimeError("template store unreachable")


@pytest.fixture(scope="module")
def clients() -> Clients:
    demo = build_transport(conformance_settings(tools_module="demo"))
    broken = HttpTransport(
        McpServer(broken_tools, state_codec=RequestStateCodec(SECRET)),
        supported_versions=SUPPORTED_VERSIONS,
    )
    return Clients(
        conformance=McpClient(build_transport(conformance_settings())),
        demo=McpClient(demo),
        broken=McpClient(broken),
    )


# -- the validator itself -----------------------------------------------------------------------


def test_the_copied_schema_is_a_valid_2020_12_schema() -> None:
    assert MCP.document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(MCP.document)


@pytest.mark.parametrize(
    ("instance", "definition"),
    [
        ({"content": []}, "CallToolResult"),
        ({"resultType": "complete", "content": [{"type": "text"}]}, "CallToolResult"),
        (
            {
                "resultType": "complete",
                "tools": [{"name": "x"}],
                "cacheScope": "public",
                "ttlMs": 1,
            },
            "ListToolsResult",
        ),
        (
            {"resultType": "complete", "tools": [], "cacheScope": "everyone", "ttlMs": 1},
            "ListToolsResult",
        ),
        (
            {"jsonrpc": "2.0", "id": 1, "error": {"code": -32600, "message": "x"}},
            "HeaderMismatchError",
        ),
        (
            {"jsonrpc": "2.0", "id": 1, "error": {"code": -32021, "message": "x"}},
            "MissingRequiredClientCapabilityError",
        ),
        (
            {
                "jsonrpc": "2.0",
                "id": 1,
                "error": {"code": -32022, "message": "x", "data": {"requested": "x"}},
            },
            "UnsupportedProtocolVersionError",
        ),
        (
            {"jsonrpc": "2.0", "id": 1, "error": {"code": "bad", "message": "x"}},
            "JSONRPCErrorResponse",
        ),
    ],
    ids=[
        "no-resultType",
        "text-without-text",
        "tool-without-inputSchema",
        "bad-cacheScope",
        "header-mismatch-wrong-code",
        "missing-capability-without-data",
        "unsupported-version-without-supported",
        "error-code-not-integer",
    ],
)
def test_the_validator_rejects_invalid_shapes(instance: Any, definition: str) -> None:
    # Refs into the document resolve (a nested shape can fail), so passing tests mean something.
    assert list(validator(definition).iter_errors(instance))


def test_a_ref_outside_the_document_does_not_resolve() -> None:
    with pytest.raises(Unresolvable):
        Draft202012Validator(
            {"$ref": f"{MCP.uri}#/$defs/NoSuchDefinition"}, registry=REGISTRY
        ).validate({})


# -- results ------------------------------------------------------------------------------------

Produce = Callable[[Clients], HttpResponse]

ALICE = {"action": "accept", "content": {"name": "Alice"}}


def _call(tool: str, arguments: dict[str, Any] | None = None, **kwargs: Any) -> Produce:
    return lambda c: c.conformance.call_tool(tool, arguments or {}, **kwargs)


def _answered(tool: str, responses: dict[str, Any]) -> Produce:
    """Round 1 asks; round 2 answers with `responses` and the state round 1 sealed."""

    def produce(c: Clients) -> HttpResponse:
        first = c.conformance.call_tool(tool, {}).json["result"]
        extra = {"inputResponses": responses, "requestState": first["requestState"]}
        return c.conformance.call_tool(tool, {}, extra_params=extra)

    return produce


def _prompt_answered(name: str, responses: dict[str, Any]) -> Produce:
    def produce(c: Clients) -> HttpResponse:
        first = c.conformance.request("prompts/get", {"name": name}).json["result"]
        params = {"name": name, "inputResponses": responses, "requestState": first["requestState"]}
        return c.conformance.request("prompts/get", params)

    return produce


def _demo_call(tool: str, arguments: dict[str, Any], **kwargs: Any) -> Produce:
    return lambda c: c.demo.call_tool(tool, arguments, **kwargs)


RESULTS: list[tuple[str, Produce, str, str, str]] = [
    # (id, produce, result definition, response definition, resultType)
    (
        "discover",
        lambda c: c.conformance.request("server/discover"),
        "DiscoverResult",
        "DiscoverResultResponse",
        "complete",
    ),
    (
        "tools-list",
        lambda c: c.conformance.request("tools/list"),
        "ListToolsResult",
        "ListToolsResultResponse",
        "complete",
    ),
    (
        "tools-list-demo",
        lambda c: c.demo.request("tools/list"),
        "ListToolsResult",
        "ListToolsResultResponse",
        "complete",
    ),
    (
        "call-text",
        _call("test_simple_text"),
        "CallToolResult",
        "CallToolResultResponse",
        "complete",
    ),
    (
        "call-structured-model",
        _demo_call("text_stats", {"text": "One. Two words."}),
        "CallToolResult",
        "CallToolResultResponse",
        "complete",
    ),
    (
        "call-structured-number",
        _demo_call("convert_temperature", {"value": 100, "to": "fahrenheit"}),
        "CallToolResult",
        "CallToolResultResponse",
        "complete",
    ),
    (
        "call-tool-error",
        _call("test_error_handling"),
        "CallToolResult",
        "CallToolResultResponse",
        "complete",
    ),
    (
        "call-invalid-arguments",
        _call("slow_compute", {"seconds": "soon"}),
        "CallToolResult",
        "CallToolResultResponse",
        "complete",
    ),
    (
        "call-after-input",
        _answered("test_input_required_result_elicitation", {"user_name": ALICE}),
        "CallToolResult",
        "CallToolResultResponse",
        "complete",
    ),
    (
        "input-required-elicitation",
        _call("test_input_required_result_elicitation"),
        "InputRequiredResult",
        "CallToolResultResponse",
        "input_required",
    ),
    (
        "input-required-elicitation-demo",
        _demo_call("delete_branch", {"repository": "octo/app", "branch": "feature"}),
        "InputRequiredResult",
        "CallToolResultResponse",
        "input_required",
    ),
    (
        "input-required-sampling",
        _call("test_input_required_result_sampling"),
        "InputRequiredResult",
        "CallToolResultResponse",
        "input_required",
    ),
    (
        "input-required-sampling-system-prompt",
        _demo_call("headline", {"article": "Text."}),
        "InputRequiredResult",
        "CallToolResultResponse",
        "input_required",
    ),
    (
        "input-required-roots",
        _call("test_input_required_result_list_roots"),
        "InputRequiredResult",
        "CallToolResultResponse",
        "input_required",
    ),
    (
        "input-required-multiple",
        _call("test_input_required_result_multiple_inputs"),
        "InputRequiredResult",
        "CallToolResultResponse",
        "input_required",
    ),
    (
        "input-required-prompt",
        lambda c: c.conformance.request(
            "prompts/get", {"name": "test_input_required_result_prompt"}
        ),
        "InputRequiredResult",
        "GetPromptResultResponse",
        "input_required",
    ),
    (
        "prompts-get",
        lambda c: c.demo.request(
            "prompts/get", {"name": "code_review", "arguments": {"language": "Go"}}
        ),
        "GetPromptResult",
        "GetPromptResultResponse",
        "complete",
    ),
    (
        "prompts-get-after-input",
        _prompt_answered(
            "test_input_required_result_prompt",
            {"user_context": {"action": "accept", "content": {"context": "C"}}},
        ),
        "GetPromptResult",
        "GetPromptResultResponse",
        "complete",
    ),
    (
        "prompts-list",
        lambda c: c.demo.request("prompts/list"),
        "ListPromptsResult",
        "ListPromptsResultResponse",
        "complete",
    ),
    (
        "prompts-list-conformance",
        lambda c: c.conformance.request("prompts/list"),
        "ListPromptsResult",
        "ListPromptsResultResponse",
        "complete",
    ),
    (
        "resources-list",
        lambda c: c.conformance.request("resources/list"),
        "ListResourcesResult",
        "ListResourcesResultResponse",
        "complete",
    ),
    (
        "resources-templates-list",
        lambda c: c.conformance.request("resources/templates/list"),
        "ListResourceTemplatesResult",
        "ListResourceTemplatesResultResponse",
        "complete",
    ),
    (
        "resources-read",
        lambda c: c.conformance.request("resources/read", {"uri": "conformance://readme"}),
        "ReadResourceResult",
        "ReadResourceResultResponse",
        "complete",
    ),
]


@pytest.mark.parametrize(
    ("produce", "result_def", "response_def", "result_type"),
    [case[1:] for case in RESULTS],
    ids=[case[0] for case in RESULTS],
)
def test_results_match_the_schema(
    clients: Clients, produce: Produce, result_def: str, response_def: str, result_type: str
) -> None:
    response = produce(clients)
    assert response.status == 200, response.body
    message = response.json
    assert_valid(message, response_def)
    assert_valid(message, "JSONRPCResultResponse")
    assert_valid(message["result"], result_def)
    assert_valid(message["result"], "ServerResult")
    # The schema leaves resultType open; the protocol fixes it per result.
    assert message["result"]["resultType"] == result_type
    if result_type == "input_required":
        assert message["result"]["inputRequests"]
        assert isinstance(message["result"]["requestState"], str)


def test_listed_tools_each_match_tool_and_their_results_match_output_schema(
    clients: Clients,
) -> None:
    tools = clients.demo.result("tools/list")["tools"]
    for tool in tools:
        assert_valid(tool, "Tool")
    by_name = {tool["name"]: tool for tool in tools}
    for name, arguments in [
        ("text_stats", {"text": "A b c. D."}),
        ("convert_temperature", {"value": 0, "to": "fahrenheit"}),
    ]:
        result = clients.demo.tool_result(name, arguments)
        Draft202012Validator(by_name[name]["outputSchema"]).validate(result["structuredContent"])


def test_log_notifications_on_the_stream_match_the_schema(clients: Clients) -> None:
    response = clients.conformance.call_tool("test_logging_tool", {}, log_level="debug")
    *notifications, last = sse_messages(response)
    assert notifications
    for notification in notifications:
        assert_valid(notification, "LoggingMessageNotification")
        assert_valid(notification, "JSONRPCNotification")
    assert_valid(last, "CallToolResultResponse")


# -- errors -------------------------------------------------------------------------------------

_DISCOVER = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "server/discover",
    "params": {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    },
}
_DISCOVER_HEADERS: dict[str, str | None] = {
    "mcp-method": "server/discover",
    "mcp-protocol-version": "2026-07-28",
}

ERRORS: list[tuple[str, Produce, int, str]] = [
    # (id, produce, HTTP status, definition of the error object or of the whole message)
    ("parse", lambda c: c.conformance.send(b"{"), 400, "ParseError"),
    ("invalid-request", lambda c: c.conformance.send([_DISCOVER]), 400, "InvalidRequestError"),
    (
        "method-not-allowed",
        lambda c: c.conformance.send(_DISCOVER, http_method="GET"),
        405,
        "InvalidRequestError",
    ),
    (
        "foreign-origin",
        lambda c: c.conformance.send(
            _DISCOVER, headers={**_DISCOVER_HEADERS, "origin": "http://evil.example"}
        ),
        403,
        "InvalidRequestError",
    ),
    (
        "unsupported-media-type",
        lambda c: c.conformance.send(_DISCOVER, headers={"content-type": "text/plain"}),
        415,
        "InvalidRequestError",
    ),
    (
        "not-acceptable",
        lambda c: c.conformance.send(_DISCOVER, headers={"accept": "text/html"}),
        406,
        "InvalidRequestError",
    ),
    (
        "method-not-found",
        lambda c: c.conformance.request("tasks/list"),
        404,
        "MethodNotFoundError",
    ),
    (
        "missing-meta",
        lambda c: c.conformance.request("server/discover", meta=None),
        400,
        "InvalidParamsError",
    ),
    ("unknown-tool", _call("no_such_tool"), 200, "InvalidParamsError"),
    (
        "invalid-cursor",
        lambda c: c.conformance.request("tools/list", {"cursor": "bogus"}),
        200,
        "InvalidParamsError",
    ),
    (
        "tampered-state",
        _call(
            "test_input_required_result_tampered_state",
            extra_params={"requestState": "v1.e30.AAAA-TAMPERED"},
        ),
        200,
        "InvalidParamsError",
    ),
    (
        "malformed-answer",
        _answered("test_input_required_result_elicitation", {"user_name": 12345}),
        200,
        "InvalidParamsError",
    ),
    (
        "prompt-failure",
        lambda c: c.broken.request("prompts/get", {"name": "crashing_prompt"}),
        200,
        "InternalError",
    ),
]


@pytest.mark.parametrize(
    ("produce", "status", "error_def"),
    [case[1:] for case in ERRORS],
    ids=[case[0] for case in ERRORS],
)
def test_error_responses_match_the_schema(
    clients: Clients, produce: Produce, status: int, error_def: str
) -> None:
    response = produce(clients)
    assert response.status == status, response.body
    message = response.json
    assert_valid(message, "JSONRPCErrorResponse")
    assert_valid(message, "JSONRPCMessage")
    assert_valid(message["error"], error_def)
    assert b"template store unreachable" not in response.body


MESSAGE_ERRORS: list[tuple[str, Produce, str, int]] = [
    # (id, produce, whole-message definition, code)
    (
        "version-header-mismatch",
        lambda c: c.conformance.request(
            "server/discover", headers={"mcp-protocol-version": "2025-11-25"}
        ),
        "HeaderMismatchError",
        -32020,
    ),
    (
        "method-header-missing",
        lambda c: c.conformance.request("server/discover", headers={"mcp-method": None}),
        "HeaderMismatchError",
        -32020,
    ),
    (
        "name-header-mismatch",
        lambda c: c.conformance.call_tool("greet", {}, headers={"mcp-name": "other"}),
        "HeaderMismatchError",
        -32020,
    ),
    (
        "missing-sampling",
        lambda c: c.conformance.call_tool("test_missing_capability", {}, capabilities={}),
        "MissingRequiredClientCapabilityError",
        -32021,
    ),
    (
        "missing-tasks-extension",
        lambda c: c.conformance.call_tool("failing_job", {}),
        "MissingRequiredClientCapabilityError",
        -32021,
    ),
    (
        "unsupported-version",
        lambda c: c.conformance.request("server/discover", version="2099-01-01"),
        "UnsupportedProtocolVersionError",
        -32022,
    ),
]


@pytest.mark.parametrize(
    ("produce", "definition", "code"),
    [case[1:] for case in MESSAGE_ERRORS],
    ids=[case[0] for case in MESSAGE_ERRORS],
)
def test_mcp_error_messages_match_their_whole_message_schema(
    clients: Clients, produce: Produce, definition: str, code: int
) -> None:
    response = produce(clients)
    assert response.status == 400
    message = response.json
    assert message["error"]["code"] == code
    assert_valid(message, definition)
    assert_valid(message, "JSONRPCErrorResponse")
