"""What a handle costs in AWS calls, on the embedded stack (moto, the real API handler serving
one request in the test's thread; the worker's calls are not counted): a handle costs what a
task-creating call costs; `task_status` one read, plus one projected batch read per poll step
while it waits and one read once the task moved; `task_answer` a read, the guarded write, the
resume and a read."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_tasks_aws.local.apigw_emulator import LocalLambdaContext, build_event
from mcp_tasks_aws.local.stack import EmbeddedStack
from support.aws_calls import aws_calls
from support.mcp import running_stack

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")
VERSION = "2026-07-28"


@pytest.fixture(scope="module")
def stack() -> Iterator[EmbeddedStack]:
    with running_stack(
        MCP_TASKS_TOOLS="server.handle_tools",
        MCP_TASKS_INLINE_BUDGET_MS="5000",
        MCP_TASKS_LISTEN_POLL_MS="50",
    ) as running:
        yield running


def serve(
    stack: EmbeddedStack, name: str, arguments: dict[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """One tools/call of a client that declared nothing; (result, AWS calls it cost)."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": meta},
    }
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": VERSION,
        "Mcp-Method": "tools/call",
        "Mcp-Name": name,
    }
    event = build_event(method="POST", path="/mcp", headers=headers, body=json.dumps(body).encode())
    with aws_calls() as calls:
        response = stack.api_handler(event, LocalLambdaContext())
    assert response["statusCode"] == 200, response
    message: dict[str, Any] = json.loads(response["body"])
    assert "error" not in message, message
    return message["result"], calls


def status_of(stack: EmbeddedStack, task_id: str, wanted: str) -> dict[str, Any]:
    deadline = time.monotonic() + 10
    while True:
        result, _ = serve(stack, "task_status", {"taskId": task_id})
        if (result.get("structuredContent") or {}).get("status", "completed") == wanted:
            return result
        assert time.monotonic() < deadline, result
        time.sleep(0.05)


def test_a_handle_costs_what_creating_a_task_costs(stack: EmbeddedStack) -> None:
    result, calls = serve(stack, "archive", {"name": "cost"})
    assert calls == ["dynamodb:PutItem", "lambda:Invoke"]
    status_of(stack, result["structuredContent"]["taskId"], "completed")


def test_task_status_without_waiting_costs_one_read(stack: EmbeddedStack) -> None:
    handle, _ = serve(stack, "archive", {"name": "read"})
    task_id = handle["structuredContent"]["taskId"]
    status_of(stack, task_id, "completed")
    done, calls = serve(stack, "task_status", {"taskId": task_id})
    assert done["content"][0]["text"] == "Archived read."
    assert calls == ["dynamodb:GetItem"]


def test_a_waiting_task_status_costs_a_projected_read_per_poll_step(stack: EmbeddedStack) -> None:
    handle, _ = serve(stack, "build_report", {"rows": 1, "seconds": 0.6})
    task_id = handle["structuredContent"]["taskId"]
    done, calls = serve(stack, "task_status", {"taskId": task_id, "waitSeconds": 5})
    assert done["structuredContent"] == {"rows": 1, "summary": "1 rows counted"}
    # One read, the polls (one BatchGetItem of the head each), one read once it ended.
    assert calls[0] == calls[-1] == "dynamodb:GetItem"
    polls = calls[1:-1]
    assert polls, calls
    assert set(polls) == {"dynamodb:BatchGetItem"}, calls
    assert len(polls) <= 0.6 / 0.05 + 10  # bounded by the poll step, not by the wait


def test_answering_through_task_answer_costs_four_calls(stack: EmbeddedStack) -> None:
    handle, _ = serve(stack, "greet_later", {})
    task_id = handle["structuredContent"]["taskId"]
    status_of(stack, task_id, "input_required")
    record = stack.worker_app.store.get(task_id)
    deadline = time.monotonic() + 10
    while not (record and record.task_token):  # its execution holds it (a direct leg parks first)
        assert time.monotonic() < deadline
        time.sleep(0.05)
        record = stack.worker_app.store.get(task_id)
    answered, calls = serve(
        stack, "task_answer", {"taskId": task_id, "answers": {"name": {"name": "Ada"}}}
    )
    assert "Recorded 1 answer(s)" in answered["content"][0]["text"]
    assert calls == [
        "dynamodb:GetItem",
        "dynamodb:UpdateItem",
        "stepfunctions:SendTaskSuccess",
        "dynamodb:GetItem",
    ]
    assert status_of(stack, task_id, "completed")["content"][0]["text"] == "Hello, Ada!"
