"""Task handles for 2025-11-25 sessions that do not use tasks: a plain `tools/call` of a
task-only tool answers with a handle instead of -32601, and the handle tools follow it; a
task's question is asked with `elicitation/create` on the `task_status` POST's stream (the
inline-question path of `legacy.questions`), or comes back as text for `task_answer`.

Also pinned: `params.task` still makes a task whatever the session declared (the Python SDK
1.x sends no `tasks` capability); the listing a session gets (per session); a handle outlives
the session that made it; the -32601 refusal kept where handles are off.
"""

from __future__ import annotations

from typing import Any

import pytest

from mcp_tasks_aws.protocol.transport import HttpResponse
from server.handles_support import RELATED, HandleStack, next_call, text
from support.legacy import LegacyClient, last_event_id, messages, questions
from support.schemas import LEGACY_MCP

LEGACY_TASKS: dict[str, Any] = {"tasks": {"requests": {"tools": {"call": {}}}}}
OTHER = "jwt:https://issuer|mallory|app"


@pytest.fixture
def stack() -> HandleStack:
    return HandleStack()


def handle(legacy: LegacyClient, tool: str, arguments: dict[str, Any]) -> str:
    result = legacy.result("tools/call", {"name": tool, "arguments": arguments})
    assert "resultType" not in result  # a 2025-11-25 CallToolResult
    LEGACY_MCP.assert_valid(result, "CallToolResult")
    task_id: str = result["structuredContent"]["taskId"]
    assert result["_meta"] == {RELATED: {"taskId": task_id}}
    assert next_call(text(result)) == ("task_status", {"taskId": task_id, "waitSeconds": 2})
    return task_id


def status(legacy: LegacyClient, task_id: str) -> dict[str, Any]:
    return legacy.result("tools/call", {"name": "task_status", "arguments": {"taskId": task_id}})


def listing(legacy: LegacyClient) -> dict[str, dict[str, Any]]:
    return {tool["name"]: tool for tool in legacy.result("tools/list")["tools"]}


def test_a_plain_call_of_a_task_only_tool_gets_a_handle_not_32601(stack: HandleStack) -> None:
    legacy = stack.legacy({})
    task_id = handle(legacy, "archive", {"name": "logs"})
    assert stack.record(task_id).tool == "archive"
    working = status(legacy, task_id)
    assert working["structuredContent"]["status"] == "working"
    stack.run_leg(task_id)
    done = status(legacy, task_id)
    assert done == {
        "content": [{"type": "text", "text": "Archived logs."}],
        "_meta": {RELATED: {"taskId": task_id}},
    }


def test_params_task_makes_a_task_whatever_the_session_declared(stack: HandleStack) -> None:
    legacy = stack.legacy({})  # as the Python SDK 1.x task client: no tasks capability
    created = legacy.result(
        "tools/call", {"name": "archive", "arguments": {"name": "t"}, "task": {}}
    )
    assert set(created) == {"task"}
    assert created["task"]["status"] == "working"


def test_a_session_without_tasks_is_listed_the_handle_tools(stack: HandleStack) -> None:
    tools = listing(stack.legacy({}))
    assert list(tools)[-3:] == ["task_status", "task_answer", "task_cancel"]
    assert tools["task_status"]["execution"] == {"taskSupport": "forbidden"}
    # A plain call answers with a handle: clients that will not call a `required` tool
    # without tasks may call it.
    assert tools["archive"]["execution"] == {"taskSupport": "optional"}
    assert tools["refusing"]["execution"] == {"taskSupport": "required"}
    assert "outputSchema" not in tools["build_report"]
    for tool in tools.values():
        LEGACY_MCP.assert_valid(tool, "Tool")


def test_a_session_that_declared_tasks_sees_the_tools_as_they_are(stack: HandleStack) -> None:
    tools = listing(stack.legacy(LEGACY_TASKS))
    assert "task_status" not in tools
    assert tools["archive"]["execution"] == {"taskSupport": "required"}
    assert "outputSchema" in tools["build_report"]


def test_a_session_that_declared_tasks_gets_32601_for_a_plain_call_of_a_required_tool(
    stack: HandleStack,
) -> None:
    # What it is shown and what it gets agree: such a session sees `archive` listed
    # `taskSupport: required` and no handle tools, so a call without params.task is the
    # -32601 2025-11-25 prescribes, not a handle naming a tool it was never shown.
    legacy = stack.legacy(LEGACY_TASKS)
    assert listing(legacy)["archive"]["execution"] == {"taskSupport": "required"}
    response = legacy.request("tools/call", {"name": "archive", "arguments": {"name": "a"}})
    error = response.json["error"]
    assert error["code"] == -32601
    assert "call it with params.task" in error["message"]
    assert stack.store.all_records() == []
    # With params.task, the same session's call is its task.
    created = legacy.result(
        "tools/call", {"name": "archive", "arguments": {"name": "t"}, "task": {}}
    )
    assert created["task"]["status"] == "working"


def test_a_long_optional_tool_gets_a_handle_unless_the_session_uses_tasks(
    stack: HandleStack,
) -> None:
    task_id = handle(stack.legacy({}), "build_report", {"rows": 4})
    assert stack.record(task_id).tool == "build_report"
    inline = stack.legacy(LEGACY_TASKS).result(
        "tools/call", {"name": "build_report", "arguments": {"rows": 4}}
    )
    assert inline["structuredContent"] == {"rows": 4, "summary": "4 rows counted"}


def test_the_tasks_question_is_asked_with_elicitation_create_on_the_status_stream(
    stack: HandleStack,
) -> None:
    legacy = stack.legacy({"elicitation": {}})
    task_id = handle(legacy, "greet_later", {})
    stack.run_leg(task_id)
    response = legacy.request(
        "tools/call", {"name": "task_status", "arguments": {"taskId": task_id}}
    )
    assert response.headers["content-type"] == "text/event-stream"
    [question] = questions(response)
    assert question["method"] == "elicitation/create"
    assert question["params"]["message"] == "What is your name?"
    answer = {"action": "accept", "content": {"name": "Ada"}}
    assert legacy.answer(question["id"], answer).status == 202
    resumed = legacy.resume(last_event_id(response))
    final = messages(resumed)[-1]
    # The resumed status call passed the answer on (tasks/update's path) and says so.
    assert final["result"]["structuredContent"]["status"] == "working"
    assert stack.record(task_id).answers == {"name": answer}
    stack.run_leg(task_id)
    assert text(status(legacy, task_id)) == "Hello, Ada!"


def test_without_elicitation_the_question_is_text_and_task_answer_takes_it(
    stack: HandleStack,
) -> None:
    legacy = stack.legacy({})
    task_id = handle(legacy, "greet_later", {})
    stack.run_leg(task_id)
    asked = status(legacy, task_id)
    tool, arguments = next_call(text(asked)) or ("", {})
    assert tool == "task_answer"
    arguments["answers"] = {"name": {"name": 5}}
    wrong = legacy.request("tools/call", {"name": tool, "arguments": arguments})
    assert wrong.json["error"]["code"] == -32602
    assert "field 'name'" in wrong.json["error"]["message"]
    arguments["answers"] = {"name": {"name": "Grace"}}
    legacy.result("tools/call", {"name": tool, "arguments": arguments})
    stack.run_leg(task_id)
    assert text(status(legacy, task_id)) == "Hello, Grace!"


def test_a_handle_outlives_the_session_that_made_it(stack: HandleStack) -> None:
    first = stack.legacy({})
    task_id = handle(first, "archive", {"name": "kept"})
    assert first.delete().status in (200, 202, 204)
    stack.run_leg(task_id)
    later = stack.legacy({})  # a new session of the same caller
    assert text(status(later, task_id)) == "Archived kept."
    stranger = stack.legacy({}, principal=OTHER)
    refused: HttpResponse = stranger.request(
        "tools/call", {"name": "task_status", "arguments": {"taskId": task_id}}
    )
    assert refused.json["error"]["code"] == -32602
    # And a 2026-07-28 request of the same caller follows it too.
    assert text(stack.result("task_status", {"taskId": task_id})) == "Archived kept."


def test_with_handles_off_the_32601_refusal_stays() -> None:
    stack = HandleStack(enabled=False)
    legacy = stack.legacy({})
    response = legacy.request("tools/call", {"name": "archive", "arguments": {"name": "a"}})
    error = response.json["error"]
    assert error["code"] == -32601
    assert "call it with params.task" in error["message"]
    assert "task_status" not in listing(legacy)
    assert stack.store.all_records() == []
