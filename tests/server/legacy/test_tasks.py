"""The 2025-11-25 tasks utility in its sessions, over the real transport and the in-memory task
domain (no moto): `params.task`, tasks/get, tasks/list, tasks/cancel, the bad input each one
refuses, and who may see what. `tasks/result` and a task's questions are `test_task_results`.

Legs run when a test says so (`domain.run_leg`), as the state machine would run them.
"""

from __future__ import annotations

from typing import Any

import pytest

from mcp_tasks_aws.protocol.transport import HttpTransport
from support.domain import Domain, tools
from support.legacy import LegacyClient, task_transport
from support.mcp import TASKS_EXTENSION, McpClient

OTHER = "jwt:https://issuer|grace|app"
THIRTY_DAYS_MS = 30 * 24 * 3600 * 1000


@pytest.fixture
def domain() -> Domain:
    return Domain()


@pytest.fixture
def transport(domain: Domain) -> HttpTransport:
    return task_transport(domain.service, tools, page_size=3)


@pytest.fixture
def legacy(transport: HttpTransport) -> LegacyClient:
    client = LegacyClient(transport)
    client.initialize()
    return client


def create(legacy: LegacyClient, tool: str, arguments: dict[str, Any], **task: Any) -> str:
    result = legacy.result("tools/call", {"name": tool, "arguments": arguments, "task": task})
    task_id: str = result["task"]["taskId"]
    return task_id


def error_of(legacy: LegacyClient, method: str, params: dict[str, Any]) -> dict[str, Any]:
    response = legacy.request(method, params)
    assert response.status == 200, response.body
    error: dict[str, Any] = response.json["error"]
    return error


# -- capabilities and tools/list ----------------------------------------------------------------


def test_initialize_declares_tasks_and_tools_say_how_they_run(legacy: LegacyClient) -> None:
    capabilities = legacy.initialize()["capabilities"]
    assert capabilities["tasks"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    support = {
        tool["name"]: tool["execution"]["taskSupport"]
        for tool in legacy.result("tools/list")["tools"]
    }
    assert (support["shout"], support["maybe"], support["echo"]) == (
        "forbidden",
        "optional",
        "required",
    )


# -- tools/call with params.task ----------------------------------------------------------------


def test_a_call_with_params_task_answers_the_nested_create_task_result(
    legacy: LegacyClient, domain: Domain
) -> None:
    result = legacy.result(
        "tools/call", {"name": "echo", "arguments": {"text": "hi"}, "task": {"ttl": 60_000}}
    )
    task = result["task"]
    assert set(result) == {"task"}
    assert task["status"] == "working"
    assert (task["ttl"], task["pollInterval"]) == (60_000, 500)  # the server's floor
    assert task["createdAt"] == task["lastUpdatedAt"] == "2023-11-14T22:13:20.000Z"
    record = domain.record(task["taskId"])
    assert (record.tool, record.arguments, record.ttl_ms) == ("echo", {"text": "hi"}, 60_000)
    assert domain.runner.started == {task["taskId"]}


@pytest.mark.parametrize(
    ("tool", "task", "ttl"),
    [
        ("echo", {"ttl": 90_000}, 90_000),  # as asked
        ("echo", {}, 3_600_000),  # none asked: the server's default
        ("maybe", {}, 120_000),  # none asked: the tool's own
        ("maybe", {"ttl": 5_000}, 5_000),  # the client's ask wins over the tool's
        ("echo", {"ttl": 10**13}, THIRTY_DAYS_MS),  # never past the server's maximum
        ("echo", {"ttl": 3}, 1000),  # a task outlives its creation
    ],
)
def test_the_asked_ttl_is_honoured_within_the_servers_bounds(
    legacy: LegacyClient, domain: Domain, tool: str, task: dict[str, Any], ttl: int
) -> None:
    task_id = create(legacy, tool, {"text": "x"}, **task)
    assert legacy.result("tasks/get", {"taskId": task_id})["ttl"] == ttl
    assert domain.record(task_id).ttl_ms == ttl


@pytest.mark.parametrize("task", ["soon", 5, [], {"ttl": -1}, {"ttl": "60000"}, {"ttl": 1.5}])
def test_a_malformed_params_task_is_invalid_params_and_creates_nothing(
    legacy: LegacyClient, domain: Domain, task: Any
) -> None:
    error = error_of(legacy, "tools/call", {"name": "echo", "arguments": {}, "task": task})
    assert error["code"] == -32602
    assert "params.task" in error["message"]
    assert domain.store.all_records() == []


def test_params_task_on_a_tool_that_never_runs_as_a_task_is_method_not_found(
    legacy: LegacyClient, domain: Domain
) -> None:
    error = error_of(
        legacy, "tools/call", {"name": "shout", "arguments": {"text": "a"}, "task": {}}
    )
    assert error["code"] == -32601
    assert "taskSupport: forbidden" in error["message"]
    assert domain.store.all_records() == []


def test_without_params_task_an_optional_tool_runs_inline_and_a_task_only_one_is_refused(
    legacy: LegacyClient, domain: Domain
) -> None:
    inline = legacy.result("tools/call", {"name": "maybe", "arguments": {"text": "now"}})
    assert inline == {"content": [{"type": "text", "text": "maybe now"}]}
    error = error_of(legacy, "tools/call", {"name": "echo", "arguments": {"text": "a"}})
    assert error["code"] == -32601
    assert "call it with params.task" in error["message"]
    assert domain.store.all_records() == []


def test_an_unknown_tool_with_params_task_is_invalid_params(legacy: LegacyClient) -> None:
    error = error_of(legacy, "tools/call", {"name": "nope", "arguments": {}, "task": {}})
    assert (error["code"], error["message"]) == (-32602, "Unknown tool: nope")


# -- tasks/get ------------------------------------------------------------------------------------


def test_tasks_get_follows_the_task_to_its_end(legacy: LegacyClient, domain: Domain) -> None:
    task_id = create(legacy, "echo", {"text": "hi"})
    assert legacy.result("tasks/get", {"taskId": task_id})["status"] == "working"
    domain.clock.advance(1500)
    domain.run_leg(task_id)
    task = legacy.result("tasks/get", {"taskId": task_id})
    assert task["status"] == "completed"
    assert task["lastUpdatedAt"] == "2023-11-14T22:13:21.500Z"
    assert "statusMessage" not in task


def test_a_tool_error_reads_failed_here_and_completed_to_a_2026_client(
    legacy: LegacyClient, transport: HttpTransport, domain: Domain
) -> None:
    task_id = create(legacy, "crashing", {})
    domain.run_leg(task_id)
    task = legacy.result("tasks/get", {"taskId": task_id})
    assert task["status"] == "failed"
    assert task["statusMessage"] == (
        "Tool error: Tool crashing failed with an internal error (see the server logs)"
    )
    # The record is the one the Tasks extension shows: completed, with the isError result.
    assert domain.record(task_id).status == "completed"
    modern = McpClient(transport).result(
        "tasks/get",
        {"taskId": task_id},
        capabilities={"extensions": {TASKS_EXTENSION: {}}},
        headers={"mcp-name": task_id},
    )
    assert (modern["status"], modern["result"]["isError"]) == ("completed", True)


def test_a_protocol_fault_reads_failed_with_its_message(
    legacy: LegacyClient, domain: Domain
) -> None:
    task_id = create(legacy, "protocol_fault", {})
    domain.run_leg(task_id)
    task = legacy.result("tasks/get", {"taskId": task_id})
    assert (task["status"], task["statusMessage"]) == ("failed", "the backend refused")


# -- tasks/list -----------------------------------------------------------------------------------


def test_tasks_list_pages_the_callers_tasks_newest_first(
    legacy: LegacyClient, domain: Domain
) -> None:
    created = []
    for n in range(5):
        created.append(create(legacy, "echo", {"text": str(n)}))
        domain.clock.advance(10)
    seen: list[str] = []
    cursor: str | None = None
    for _ in range(5):
        page = legacy.result("tasks/list", {"cursor": cursor} if cursor else {})
        assert len(page["tasks"]) <= 3
        seen += [task["taskId"] for task in page["tasks"]]
        cursor = page.get("nextCursor")
        if cursor is None:
            break
    assert seen == list(reversed(created))


def test_tasks_list_shows_a_tool_error_as_failed(legacy: LegacyClient, domain: Domain) -> None:
    task_id = create(legacy, "crashing", {})
    domain.run_leg(task_id)
    [task] = legacy.result("tasks/list")["tasks"]
    assert (task["taskId"], task["status"]) == (task_id, "failed")
    assert "isError" in task["statusMessage"]


def test_a_cursor_is_opaque_and_only_its_callers(
    legacy: LegacyClient, transport: HttpTransport
) -> None:
    for n in range(4):
        create(legacy, "echo", {"text": str(n)})
    cursor = legacy.result("tasks/list")["nextCursor"]
    other = LegacyClient(transport, principal=OTHER)
    other.initialize()
    for bad, client in [
        (cursor, other),  # another caller's
        (cursor[:-2] + "AA", legacy),  # tampered with
        ("MTcwMDAwMDAwMDAwMC94", legacy),  # a raw store position
    ]:
        error = error_of(client, "tasks/list", {"cursor": bad})
        assert (error["code"], error["message"]) == (-32602, "Invalid cursor")


# -- tasks/cancel ---------------------------------------------------------------------------------


def test_tasks_cancel_answers_the_task_already_cancelled(
    legacy: LegacyClient, domain: Domain
) -> None:
    task_id = create(legacy, "echo", {"text": "hi"})
    task = legacy.result("tasks/cancel", {"taskId": task_id})
    assert (task["taskId"], task["status"]) == (task_id, "cancelled")
    assert task["statusMessage"] == "Cancelled at the client's request"
    assert domain.record(task_id).status == "cancelled"
    assert domain.runner.named("stop") == [task_id]


@pytest.mark.parametrize(
    ("tool", "ending", "shown"),
    [("echo", "leg", "completed"), ("crashing", "leg", "failed"), ("echo", "cancel", "cancelled")],
)
def test_tasks_cancel_of_a_terminal_task_is_invalid_params(
    legacy: LegacyClient, domain: Domain, tool: str, ending: str, shown: str
) -> None:
    task_id = create(legacy, tool, {"text": "x"} if tool == "echo" else {})
    if ending == "leg":
        domain.run_leg(task_id)
    else:
        legacy.result("tasks/cancel", {"taskId": task_id})
    before = domain.record(task_id)
    error = error_of(legacy, "tasks/cancel", {"taskId": task_id})
    assert error == {
        "code": -32602,
        "message": f"Cannot cancel task: already in terminal status '{shown}'",
    }
    assert domain.record(task_id) == before


# -- whose tasks ----------------------------------------------------------------------------------


def test_another_callers_task_answers_exactly_like_a_missing_one(
    legacy: LegacyClient, transport: HttpTransport, domain: Domain
) -> None:
    task_id = create(legacy, "echo", {"text": "mine"})
    other = LegacyClient(transport, principal=OTHER)
    other.initialize()
    missing = "0" * 32
    for method in ("tasks/get", "tasks/cancel", "tasks/result"):
        theirs = error_of(other, method, {"taskId": task_id})
        unknown = error_of(other, method, {"taskId": missing})
        assert (
            theirs
            == unknown
            == {
                "code": -32602,
                "message": "Failed to retrieve task: Task not found",
            }
        )
    assert other.result("tasks/list") == {"tasks": []}
    assert domain.record(task_id).status == "working"


def test_an_expired_task_says_so(legacy: LegacyClient, domain: Domain) -> None:
    task_id = create(legacy, "echo", {"text": "x"}, ttl=60_000)
    domain.clock.advance(61_000)
    error = error_of(legacy, "tasks/get", {"taskId": task_id})
    assert error == {"code": -32602, "message": "Failed to retrieve task: Task has expired"}
    assert legacy.result("tasks/list") == {"tasks": []}


@pytest.mark.parametrize("params", [{}, {"taskId": ""}, {"taskId": 7}])
def test_task_methods_need_a_task_id(legacy: LegacyClient, params: dict[str, Any]) -> None:
    for method in ("tasks/get", "tasks/cancel", "tasks/result"):
        assert error_of(legacy, method, params)["code"] == -32602
