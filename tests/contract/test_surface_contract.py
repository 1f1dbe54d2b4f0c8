"""The wire shapes of the server's wider surface, validated against the published schema:
content blocks, prompts with images and resources, resources and templates, completions,
progress notifications, and the errors of each (SEP-2164 not found, SEP-2243 mismatches).

Every response comes from the real transport serving the conformance fixtures or the demo.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from mcp_tasks_aws.app import build_transport
from mcp_tasks_aws.protocol.transport import HttpResponse
from support.mcp import McpClient, conformance_settings
from support.schemas import MCP

assert_valid = MCP.assert_valid

Produce = Callable[[McpClient], HttpResponse]


@pytest.fixture(scope="module")
def conformance() -> McpClient:
    return McpClient(build_transport(conformance_settings()))


@pytest.fixture(scope="module")
def demo() -> McpClient:
    return McpClient(build_transport(conformance_settings(tools_module="demo")))


def _call(tool: str, arguments: dict[str, Any] | None = None, **kwargs: Any) -> Produce:
    return lambda c: c.call_tool(tool, arguments or {}, **kwargs)


def _request(method: str, params: dict[str, Any]) -> Produce:
    return lambda c: c.request(method, params)


def _complete(ref: dict[str, Any], name: str, value: str) -> Produce:
    return _request("completion/complete", {"ref": ref, "argument": {"name": name, "value": value}})


RESULTS: list[tuple[str, Produce, str, str, str]] = [
    # (id, produce, result definition, response definition, content block definition or "")
    (
        "image",
        _call("test_image_content"),
        "CallToolResult",
        "CallToolResultResponse",
        "ImageContent",
    ),
    (
        "audio",
        _call("test_audio_content"),
        "CallToolResult",
        "CallToolResultResponse",
        "AudioContent",
    ),
    (
        "embedded-resource",
        _call("test_embedded_resource"),
        "CallToolResult",
        "CallToolResultResponse",
        "EmbeddedResource",
    ),
    ("mixed", _call("test_multiple_content_types"), "CallToolResult", "CallToolResultResponse", ""),
    (
        "json-schema-tool",
        _call("json_schema_2020_12_tool", {"name": "A", "email": "a@b"}),
        "CallToolResult",
        "CallToolResultResponse",
        "TextContent",
    ),
    (
        "json-schema-tool-refused",
        _call("json_schema_2020_12_tool", {"contactMethod": "phone"}),
        "CallToolResult",
        "CallToolResultResponse",
        "TextContent",
    ),
    (
        "custom-header-tool",
        _call("route_by_region", {"region": "eu"}, headers={"mcp-param-region": "eu"}),
        "CallToolResult",
        "CallToolResultResponse",
        "TextContent",
    ),
    (
        "prompt-with-arguments",
        _request(
            "prompts/get",
            {"name": "test_prompt_with_arguments", "arguments": {"arg1": "a", "arg2": "b"}},
        ),
        "GetPromptResult",
        "GetPromptResultResponse",
        "",
    ),
    (
        "prompt-embedded-resource",
        _request(
            "prompts/get",
            {"name": "test_prompt_with_embedded_resource", "arguments": {"resourceUri": "x://1"}},
        ),
        "GetPromptResult",
        "GetPromptResultResponse",
        "",
    ),
    (
        "prompt-image",
        _request("prompts/get", {"name": "test_prompt_with_image"}),
        "GetPromptResult",
        "GetPromptResultResponse",
        "",
    ),
    (
        "read-text",
        _request("resources/read", {"uri": "test://static-text"}),
        "ReadResourceResult",
        "ReadResourceResultResponse",
        "",
    ),
    (
        "read-binary",
        _request("resources/read", {"uri": "test://static-binary"}),
        "ReadResourceResult",
        "ReadResourceResultResponse",
        "",
    ),
    (
        "read-template",
        _request("resources/read", {"uri": "test://template/123/data"}),
        "ReadResourceResult",
        "ReadResourceResultResponse",
        "",
    ),
    (
        "templates-list",
        _request("resources/templates/list", {}),
        "ListResourceTemplatesResult",
        "ListResourceTemplatesResultResponse",
        "",
    ),
    (
        "complete-prompt",
        _complete({"type": "ref/prompt", "name": "test_prompt_with_arguments"}, "arg1", "pa"),
        "CompleteResult",
        "CompleteResultResponse",
        "",
    ),
    (
        "complete-template",
        _complete({"type": "ref/resource", "uri": "test://template/{id}/data"}, "id", "12"),
        "CompleteResult",
        "CompleteResultResponse",
        "",
    ),
    (
        "complete-nothing",
        _complete({"type": "ref/prompt", "name": "test_prompt_with_arguments"}, "arg2", ""),
        "CompleteResult",
        "CompleteResultResponse",
        "",
    ),
]


@pytest.mark.parametrize(
    ("produce", "result_def", "response_def", "block_def"),
    [case[1:] for case in RESULTS],
    ids=[case[0] for case in RESULTS],
)
def test_results_match_the_schema(
    conformance: McpClient, produce: Produce, result_def: str, response_def: str, block_def: str
) -> None:
    response = produce(conformance)
    assert response.status == 200, response.body
    message = response.json
    assert_valid(message, response_def)
    assert_valid(message["result"], result_def)
    assert_valid(message["result"], "ServerResult")
    assert message["result"]["resultType"] == "complete"
    for block in message["result"].get("content", []):
        assert_valid(block, "ContentBlock")
    if block_def:
        assert_valid(message["result"]["content"][0], block_def)
    for prompt_message in message["result"].get("messages", []):
        assert_valid(prompt_message, "PromptMessage")


def test_the_mixed_result_holds_each_kind(conformance: McpClient) -> None:
    content = conformance.tool_result("test_multiple_content_types")["content"]
    for block, definition in zip(
        content, ["TextContent", "ImageContent", "EmbeddedResource"], strict=True
    ):
        assert_valid(block, definition)
    assert_valid(content[2]["resource"], "TextResourceContents")


def test_binary_resource_contents_are_blob_contents(conformance: McpClient) -> None:
    contents = conformance.result("resources/read", {"uri": "test://static-binary"})["contents"]
    assert_valid(contents[0], "BlobResourceContents")


def test_the_handwritten_and_header_tools_are_valid_tools(conformance: McpClient) -> None:
    tools = {t["name"]: t for t in conformance.result("tools/list")["tools"]}
    for name in ("json_schema_2020_12_tool", "route_by_region", "test_image_content"):
        assert_valid(tools[name], "Tool")


def test_discover_with_completions_and_templates_matches_the_schema(conformance: McpClient) -> None:
    result = conformance.result("server/discover")
    assert_valid(result, "DiscoverResult")
    assert result["capabilities"]["completions"] == {}


def test_progress_notifications_match_the_schema(conformance: McpClient) -> None:
    response = conformance.request(
        "tools/call",
        {"name": "test_tool_with_progress", "arguments": {}},
        meta={
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "progressToken": 7,
        },
    )
    messages = [
        json.loads(line[len("data:") :])
        for line in response.body.decode().split("\n")
        if line.startswith("data:")
    ]
    *notifications, last = messages
    assert [n["params"]["progress"] for n in notifications] == [0, 50, 100]
    for notification in notifications:
        assert_valid(notification, "ProgressNotification")
        assert_valid(notification, "JSONRPCNotification")
    assert_valid(last, "CallToolResultResponse")


def test_demo_results_with_content_match_the_schema(demo: McpClient) -> None:
    image = demo.tool_result("sparkline", {"values": [1, 3, 2, 5]})
    assert_valid({"resultType": "complete", **image}, "CallToolResult")
    assert_valid(image["content"][0], "TextContent")
    assert_valid(image["content"][1], "ImageContent")
    prompt = demo.result(
        "completion/complete",
        {
            "ref": {"type": "ref/prompt", "name": "code_review"},
            "argument": {"name": "language", "value": "py"},
        },
    )
    assert_valid(prompt, "CompleteResult")
    assert prompt["completion"]["values"] == ["python"]


# -- errors --------------------------------------------------------------------------------------

ERRORS: list[tuple[str, Produce, int, str]] = [
    # (id, produce, HTTP status, definition of the error object or of the whole message)
    (
        "resource-not-found",
        _request("resources/read", {"uri": "test://nonexistent"}),
        200,
        "InvalidParamsError",
    ),
    (
        "template-matches-nothing",
        _request("resources/read", {"uri": "test://template/1/2/data"}),
        200,
        "InvalidParamsError",
    ),
    (
        "complete-unknown-prompt",
        _complete({"type": "ref/prompt", "name": "nope"}, "x", ""),
        200,
        "InvalidParamsError",
    ),
]


@pytest.mark.parametrize(
    ("produce", "status", "error_def"),
    [case[1:] for case in ERRORS],
    ids=[case[0] for case in ERRORS],
)
def test_error_responses_match_the_schema(
    conformance: McpClient, produce: Produce, status: int, error_def: str
) -> None:
    response = produce(conformance)
    assert response.status == status, response.body
    message = response.json
    assert_valid(message, "JSONRPCErrorResponse")
    assert_valid(message["error"], error_def)


def test_resource_not_found_carries_the_uri(conformance: McpClient) -> None:
    error = conformance.error(conformance.request("resources/read", {"uri": "test://nope"}))
    assert error["data"] == {"uri": "test://nope"}


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"mcp-param-region": "us"},
        {"mcp-param-region": "=?base64?ZXU?="},
        {"mcp-param-region": "=?base64?ZX!!?="},
    ],
)
def test_custom_header_mismatches_match_the_header_mismatch_schema(
    conformance: McpClient, headers: dict[str, str]
) -> None:
    response = conformance.call_tool("route_by_region", {"region": "eu"}, headers=headers)
    assert response.status == 400
    assert_valid(response.json, "HeaderMismatchError")
    assert_valid(response.json, "JSONRPCErrorResponse")
