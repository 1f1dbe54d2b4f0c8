"""Every wire shape a 2025-11-25 session produces, validated against the published 2025-11-25
schema (the copy in tests/schemas). Responses come from the real transport with the
conformance tools, never built by hand.

That schema lets results carry extra fields, so the 2026-07-28 fields a legacy answer must not
carry (`resultType`, `ttlMs`, `cacheScope`) are checked by name as well.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from mcp_tasks_aws.protocol.transport import HttpResponse, HttpTransport
from support.legacy import (
    MODERN_ONLY,
    LegacyClient,
    legacy_transport,
    messages,
    priming_id,
    questions,
)
from support.mcp import McpClient
from support.schemas import LEGACY_MCP

assert_valid, validator = LEGACY_MCP.assert_valid, LEGACY_MCP.validator


@pytest.fixture(scope="module")
def transport() -> HttpTransport:
    return legacy_transport()


@pytest.fixture
def legacy(transport: HttpTransport) -> LegacyClient:
    client = LegacyClient(transport)
    client.initialize()
    return client


def test_the_copied_schema_is_a_valid_2020_12_schema() -> None:
    assert LEGACY_MCP.document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(LEGACY_MCP.document)


@pytest.mark.parametrize(
    ("instance", "definition"),
    [
        ({"protocolVersion": "2025-11-25", "capabilities": {}}, "InitializeResult"),
        (
            {
                "tools": [
                    {
                        "name": "x",
                        "inputSchema": {"type": "object"},
                        "execution": {"taskSupport": "sometimes"},
                    }
                ]
            },
            "ListToolsResult",
        ),
        (
            {"jsonrpc": "2.0", "id": 1, "method": "elicitation/create", "params": {"message": "x"}},
            "ElicitRequest",
        ),
        (
            {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "loud", "data": 1},
            },
            "LoggingMessageNotification",
        ),
    ],
    ids=[
        "initialize-without-serverInfo",
        "bad-taskSupport",
        "elicit-without-schema",
        "bad-log-level",
    ],
)
def test_the_validator_rejects_invalid_shapes(instance: Any, definition: str) -> None:
    assert list(validator(definition).iter_errors(instance))


def test_initialize_matches_the_schema(transport: HttpTransport) -> None:
    client = LegacyClient(transport)
    response = client.http.send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "contract", "version": "1"},
            },
        }
    )
    assert_valid(response.json, "JSONRPCResultResponse")
    assert_valid(response.json["result"], "InitializeResult")


Produce = Callable[[LegacyClient], HttpResponse]

RESULTS: list[tuple[str, Produce, str]] = [
    ("ping", lambda c: c.request("ping"), "EmptyResult"),
    ("set-level", lambda c: c.request("logging/setLevel", {"level": "info"}), "EmptyResult"),
    ("tools-list", lambda c: c.request("tools/list"), "ListToolsResult"),
    (
        "tools-call",
        lambda c: c.request("tools/call", {"name": "test_simple_text", "arguments": {}}),
        "CallToolResult",
    ),
    (
        "tools-call-error",
        lambda c: c.request("tools/call", {"name": "test_error_handling", "arguments": {}}),
        "CallToolResult",
    ),
    ("prompts-list", lambda c: c.request("prompts/list"), "ListPromptsResult"),
    ("resources-list", lambda c: c.request("resources/list"), "ListResourcesResult"),
    (
        "resource-templates",
        lambda c: c.request("resources/templates/list"),
        "ListResourceTemplatesResult",
    ),
    (
        "resources-read",
        lambda c: c.request("resources/read", {"uri": "conformance://readme"}),
        "ReadResourceResult",
    ),
    (
        "subscribe",
        lambda c: c.request("resources/subscribe", {"uri": "test://watched-resource"}),
        "EmptyResult",
    ),
]


@pytest.mark.parametrize(
    ("produce", "definition"), [r[1:] for r in RESULTS], ids=[r[0] for r in RESULTS]
)
def test_results_match_the_schema(legacy: LegacyClient, produce: Produce, definition: str) -> None:
    message = messages(produce(legacy))[-1]
    assert_valid(message, "JSONRPCResultResponse")
    assert_valid(message["result"], definition)
    assert not MODERN_ONLY & set(message["result"])


def test_each_listed_tool_matches_tool(legacy: LegacyClient) -> None:
    tools = legacy.result("tools/list")["tools"]
    for tool in tools:
        assert_valid(tool, "Tool")
    assert {t["execution"]["taskSupport"] for t in tools} == {"forbidden", "required"}


def test_log_notifications_match_the_schema(legacy: LegacyClient) -> None:
    legacy.result("logging/setLevel", {"level": "debug"})
    response = legacy.request("tools/call", {"name": "test_tool_with_logging", "arguments": {}})
    logs = [m for m in messages(response) if m.get("method") == "notifications/message"]
    assert len(logs) == 3
    for log in logs:
        assert_valid(log, "LoggingMessageNotification")
        assert_valid(log, "ServerNotification")


ANSWERS = {
    "elicitation/create": ({"action": "accept", "content": {"name": "Ada"}}, "ElicitRequest"),
    "sampling/createMessage": (
        {"role": "assistant", "content": {"type": "text", "text": "Hi"}, "model": "m"},
        "CreateMessageRequest",
    ),
    "roots/list": ({"roots": [{"uri": "file:///w"}]}, "ListRootsRequest"),
}


def test_server_requests_and_the_resumed_answer_match_the_schema(legacy: LegacyClient) -> None:
    params = {"name": "test_input_required_result_multiple_inputs", "arguments": {}}
    response = legacy.request("tools/call", params)
    asked = questions(response)
    assert sorted(q["method"] for q in asked) == sorted(ANSWERS)
    for question in asked:
        answer, definition = ANSWERS[question["method"]]
        assert_valid(question, definition)
        assert_valid(question, "ServerRequest")
        assert_valid(
            {"jsonrpc": "2.0", "id": question["id"], "result": answer}, "JSONRPCResultResponse"
        )
        legacy.answer(question["id"], answer)
    final = messages(legacy.resume(priming_id(response)))[-1]
    assert_valid(final, "JSONRPCResultResponse")
    assert_valid(final["result"], "CallToolResult")


ERRORS: list[tuple[str, Produce, int]] = [
    (
        "no-session",
        lambda c: McpClient(c.http.transport).send(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        ),
        400,
    ),
    ("ended-session", lambda c: (c.delete(), c.request("tools/list"))[1], 404),
    ("unknown-method", lambda c: c.request("subscriptions/listen", {"notifications": {}}), 200),
    (
        "task-only-tool",
        lambda c: c.request("tools/call", {"name": "failing_job", "arguments": {}}),
        200,
    ),
    ("unknown-response-id", lambda c: c.answer("nobody-asked", {"action": "accept"}), 400),
    ("unknown-stream", lambda c: c.resume("e1.e30.AAAAAAAAAAAAAAAAAAAAAA"), 404),
]


@pytest.mark.parametrize(("produce", "status"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_error_responses_match_the_schema(
    legacy: LegacyClient, produce: Produce, status: int
) -> None:
    response = produce(legacy)
    assert response.status == status, response.body
    assert_valid(response.json, "JSONRPCErrorResponse")
