"""Every wire shape of the 2025-11-25 tasks utility, validated against that revision's schema (the
copy in tests/schemas): what `tools/call` with `params.task`, tasks/get, tasks/list,
tasks/cancel and tasks/result answer, the questions and status notifications a tasks/result
stream carries, and the errors. Responses come from the real transport over the in-memory task
domain, never built by hand.
"""

from __future__ import annotations

from typing import Any

import pytest

from support.domain import Domain, accept, tools
from support.legacy import (
    MODERN_ONLY,
    LegacyClient,
    last_event_id,
    messages,
    questions,
    task_transport,
)
from support.schemas import LEGACY_MCP

assert_valid, validator = LEGACY_MCP.assert_valid, LEGACY_MCP.validator


@pytest.fixture
def domain() -> Domain:
    return Domain()


@pytest.fixture
def legacy(domain: Domain) -> LegacyClient:
    client = LegacyClient(task_transport(domain.service, tools, page_size=2))
    client.initialize()
    return client


def create(legacy: LegacyClient, tool: str, arguments: dict[str, Any] | None = None) -> str:
    params = {"name": tool, "arguments": arguments or {}, "task": {"ttl": 60_000}}
    task_id: str = legacy.result("tools/call", params)["task"]["taskId"]
    return task_id


def assert_result(message: dict[str, Any], definition: str) -> None:
    assert_valid(message, "JSONRPCResultResponse")
    assert_valid(message["result"], definition)
    assert not MODERN_ONLY & set(message["result"])


def test_initialize_declares_the_tasks_capability(legacy: LegacyClient) -> None:
    result = legacy.initialize()
    assert_valid(result, "InitializeResult")
    assert_valid(result["capabilities"], "ServerCapabilities")


def test_the_tools_of_every_policy_match_the_schema(legacy: LegacyClient) -> None:
    tools_listed = legacy.result("tools/list")["tools"]
    for tool in tools_listed:
        assert_valid(tool, "Tool")
    assert {t["execution"]["taskSupport"] for t in tools_listed} == {
        "forbidden",
        "optional",
        "required",
    }


def test_create_get_list_and_cancel_match_the_schema(legacy: LegacyClient, domain: Domain) -> None:
    params = {"name": "echo", "arguments": {"text": "hi"}, "task": {"ttl": 60_000}}
    assert_valid({"name": "echo", "task": {"ttl": 60_000}}, "CallToolRequestParams")
    created = messages(legacy.request("tools/call", params))[-1]
    assert_result(created, "CreateTaskResult")
    task_id = created["result"]["task"]["taskId"]
    assert_result(messages(legacy.request("tasks/get", {"taskId": task_id}))[-1], "GetTaskResult")
    for _ in range(2):
        create(legacy, "echo", {"text": "more"})
    listed = messages(legacy.request("tasks/list"))[-1]
    assert_result(listed, "ListTasksResult")
    assert "nextCursor" in listed["result"]
    cancelled = messages(legacy.request("tasks/cancel", {"taskId": task_id}))[-1]
    assert_result(cancelled, "CancelTaskResult")


def test_an_unlimited_task_says_ttl_null(domain: Domain) -> None:
    domain.service.default_ttl_ms = None
    domain.service.max_ttl_ms = None
    client = LegacyClient(task_transport(domain.service, tools))
    client.initialize()
    created = messages(client.request("tools/call", {"name": "echo", "arguments": {}, "task": {}}))
    assert created[-1]["result"]["task"]["ttl"] is None
    assert_result(created[-1], "CreateTaskResult")


@pytest.mark.parametrize("tool", ["echo", "crashing"])
def test_task_results_match_the_schema(legacy: LegacyClient, domain: Domain, tool: str) -> None:
    task_id = create(legacy, tool, {"text": "hi"} if tool == "echo" else {})
    domain.run_leg(task_id)
    assert_result(messages(legacy.request("tasks/get", {"taskId": task_id}))[-1], "GetTaskResult")
    result = messages(legacy.request("tasks/result", {"taskId": task_id}))[-1]
    assert_result(result, "GetTaskPayloadResult")
    assert_valid(result["result"], "CallToolResult")
    assert_valid(
        result["result"]["_meta"]["io.modelcontextprotocol/related-task"], "RelatedTaskMetadata"
    )


def test_the_result_stream_matches_the_schema(legacy: LegacyClient, domain: Domain) -> None:
    task_id = create(legacy, "confirm", {"name": "a.txt"})
    domain.run_leg(task_id)
    stream = legacy.request("tasks/result", {"taskId": task_id})
    [question] = questions(stream)
    assert_valid(question, "ElicitRequest")
    assert_valid(question, "ServerRequest")
    answer = {"jsonrpc": "2.0", "id": question["id"], "result": accept(ok=True)}
    assert_valid(answer, "JSONRPCResultResponse")
    legacy.answer(question["id"], accept(ok=True))
    domain.run_leg(task_id)
    resumed = messages(legacy.resume(last_event_id(stream)))
    [notification] = [m for m in resumed if m.get("method") == "notifications/tasks/status"]
    assert_valid(notification, "TaskStatusNotification")
    assert_valid(notification, "ServerNotification")
    assert_result(resumed[-1], "GetTaskPayloadResult")


ERRORS: list[tuple[str, str, dict[str, Any]]] = [
    ("unknown-task", "tasks/get", {"taskId": "0" * 32}),
    ("unknown-task-result", "tasks/result", {"taskId": "0" * 32}),
    ("bad-cursor", "tasks/list", {"cursor": "nope"}),
    ("forbidden-tool", "tools/call", {"name": "shout", "arguments": {}, "task": {}}),
    ("bad-task-param", "tools/call", {"name": "echo", "arguments": {}, "task": {"ttl": -5}}),
]


@pytest.mark.parametrize(("method", "params"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors_match_the_schema(legacy: LegacyClient, method: str, params: dict[str, Any]) -> None:
    response = legacy.request(method, params)
    assert response.status == 200
    assert_valid(response.json, "JSONRPCErrorResponse")


def test_a_failed_tasks_result_and_a_refused_cancel_match_the_schema(
    legacy: LegacyClient, domain: Domain
) -> None:
    task_id = create(legacy, "protocol_fault")
    domain.run_leg(task_id)
    assert_valid(legacy.request("tasks/result", {"taskId": task_id}).json, "JSONRPCErrorResponse")
    assert_valid(legacy.request("tasks/cancel", {"taskId": task_id}).json, "JSONRPCErrorResponse")


def test_the_validator_rejects_a_task_without_its_ttl() -> None:
    # Why `ttl` is sent even when null: the schema requires it.
    task = {"taskId": "t", "status": "working", "createdAt": "x", "lastUpdatedAt": "x"}
    assert list(validator("CreateTaskResult").iter_errors({"task": task}))
    assert not list(validator("CreateTaskResult").iter_errors({"task": {**task, "ttl": None}}))
