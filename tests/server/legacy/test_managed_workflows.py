"""A declared workflow's question reaches a 2025-11-25 client through `tasks/result` (the same
record the 2026-07-28 side reads): its answer resumes the workflow's waiting state, a decline
fails that state with McpDeclined, and the execution's end is the call's result."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcp_tasks_aws.protocol.transport import HttpResponse
from support.domain import ALICE, accept
from support.legacy import LegacyClient, last_event_id, messages, questions, task_transport
from support.targets import DONE, Flow, flow_of

RELATED = "io.modelcontextprotocol/related-task"


@pytest.fixture
def flow(tmp_path: Path) -> Flow:
    return flow_of(tmp_path, outputSchema=DONE)


@pytest.fixture
def legacy(flow: Flow) -> LegacyClient:
    client = LegacyClient(task_transport(flow.service, flow.toolset), principal=ALICE)
    client.initialize()
    return client


def start(legacy: LegacyClient, flow: Flow) -> str:
    params = {"name": "deploy", "arguments": {"text": "v1"}, "task": {}}
    task_id: str = legacy.result("tools/call", params)["task"]["taskId"]
    flow.ask(flow.record(task_id), "token-1")  # its own execution asks (with its capability)
    return task_id


def result_stream(legacy: LegacyClient, task_id: str) -> HttpResponse:
    return legacy.request("tasks/result", {"taskId": task_id})


def test_the_question_goes_out_on_tasks_result_and_the_answer_resumes_the_state(
    legacy: LegacyClient, flow: Flow
) -> None:
    task_id = start(legacy, flow)
    response = result_stream(legacy, task_id)
    [question] = questions(response)
    assert question["method"] == "elicitation/create"
    assert question["params"]["message"] == "Deploy?"
    assert question["params"]["_meta"] == {RELATED: {"taskId": task_id}}
    assert legacy.answer(question["id"], accept(done=True)).status == 202
    assert flow.workflows.named("answer") == [("token-1", accept(done=True))]
    # The execution ends: the call's result is its output, structured as declared.
    flow.settle(flow.record(task_id), "SUCCEEDED", output=json.dumps({"done": True}))
    done = legacy.resume(last_event_id(response))
    final: dict[str, Any] = [m for m in messages(done) if "result" in m][-1]
    assert final["result"]["structuredContent"] == {"done": True}


def test_a_declined_question_fails_the_waiting_state(legacy: LegacyClient, flow: Flow) -> None:
    task_id = start(legacy, flow)
    [question] = questions(result_stream(legacy, task_id))
    assert legacy.answer(question["id"], {"action": "decline"}).status == 202
    assert flow.workflows.named("refuse") == [("token-1", "McpDeclined")]


def test_cancel_in_this_era_stops_the_execution(legacy: LegacyClient, flow: Flow) -> None:
    task_id = start(legacy, flow)
    assert legacy.result("tasks/cancel", {"taskId": task_id})["status"] == "cancelled"
    assert flow.workflows.named("stop") == [flow.record(task_id).execution_arn]
