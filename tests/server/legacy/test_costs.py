"""What a 2025-11-25 session costs in AWS calls, counted on the embedded stack's API handler
(the real DynamoDB adapter on moto), one request at a time in the test's own thread.

These are the counts the README's cost section gives.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from mcp_tasks_aws.local.apigw_emulator import LocalLambdaContext, build_event
from mcp_tasks_aws.local.stack import EmbeddedStack
from support.aws_calls import aws_calls
from support.legacy import LEGACY_VERSION

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


class Session:
    """A 2025-11-25 session driven through the API handler, counting each request's calls."""

    def __init__(self, stack: EmbeddedStack) -> None:
        self.stack = stack
        self.session_id: str | None = None
        self._ids = iter(range(1, 1000))

    def send(
        self, body: Any = None, *, method: str = "POST", **headers: str
    ) -> tuple[dict[str, Any], list[str]]:
        all_headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": LEGACY_VERSION,
            **({"mcp-session-id": self.session_id} if self.session_id else {}),
            **headers,
        }
        raw = json.dumps(body).encode() if body is not None else b""
        event = build_event(method=method, path="/mcp", headers=all_headers, body=raw)
        with aws_calls() as calls:
            response: dict[str, Any] = self.stack.api_handler(event, LocalLambdaContext())
        return response, calls

    def request(self, method: str, params: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        return self.send(
            {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params}
        )


def events(response: dict[str, Any]) -> list[dict[str, Any]]:
    parsed = []
    for block in response["body"].split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.split("\n") if ": " in line)
        if fields:
            parsed.append(fields)
    return parsed


@pytest.fixture
def session(stack: EmbeddedStack) -> Session:
    client = Session(stack)
    params = {
        "protocolVersion": LEGACY_VERSION,
        "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "costs", "version": "1"},
    }
    response, calls = client.request("initialize", params)
    assert response["statusCode"] == 200, response
    assert calls == []  # the session is a sealed token: nothing is stored
    client.session_id = response["headers"]["mcp-session-id"]
    return client


def test_each_request_in_a_session_reads_its_state_once(session: Session) -> None:
    response, calls = session.request("tools/list", {})
    assert response["statusCode"] == 200
    assert calls == ["dynamodb:GetItem"]


def test_set_level_and_delete_write_once(session: Session) -> None:
    _, calls = session.request("logging/setLevel", {"level": "info"})
    assert calls == ["dynamodb:GetItem", "dynamodb:UpdateItem"]
    response, calls = session.send(method="DELETE")
    assert response["statusCode"] == 204
    assert calls == ["dynamodb:GetItem", "dynamodb:UpdateItem"]


def test_a_question_round_costs_a_put_a_write_per_answer_and_the_resume(session: Session) -> None:
    params = {"name": "test_input_required_result_elicitation", "arguments": {}}
    asked, calls = session.request("tools/call", params)
    assert calls == ["dynamodb:GetItem", "dynamodb:PutItem"]
    parsed = events(asked)
    question = json.loads(parsed[1]["data"])
    answer = {
        "jsonrpc": "2.0",
        "id": question["id"],
        "result": {"action": "accept", "content": {"name": "A"}},
    }
    response, calls = session.send(answer)
    assert response["statusCode"] == 202
    assert calls == ["dynamodb:GetItem", "dynamodb:UpdateItem"]
    resumed, calls = session.send(
        method="GET", **{"last-event-id": parsed[0]["id"], "accept": "text/event-stream"}
    )
    assert "Hello, A!" in resumed["body"]
    # The session's state, the parked call, the claim that makes this resume the one that runs
    # the round (two GETs must not both run it), then the write that ends it.
    assert calls == [
        "dynamodb:GetItem",
        "dynamodb:GetItem",
        "dynamodb:UpdateItem",
        "dynamodb:UpdateItem",
    ]


# -- the 2025-11-25 tasks utility: the extension's costs, plus the session read -----------------


def wait_status(session: Session, task_id: str, status: str) -> dict[str, Any]:
    deadline = time.monotonic() + 10
    while True:
        # JSON only: a tasks/get that accepts SSE would carry the task's questions.
        body = {"jsonrpc": "2.0", "id": next(session._ids), "method": "tasks/get"}
        response, _ = session.send(
            {**body, "params": {"taskId": task_id}}, accept="application/json"
        )
        task: dict[str, Any] = json.loads(response["body"])["result"]
        if task["status"] == status:
            return task
        assert time.monotonic() < deadline, task
        time.sleep(0.05)


def test_task_operations_cost_what_the_extensions_do_plus_the_session_read(
    session: Session,
) -> None:
    params = {"name": "slow_compute", "arguments": {"seconds": 0, "label": "c"}, "task": {}}
    created, calls = session.request("tools/call", params)
    # (its first leg runs directly: an asynchronous invoke of the worker, as deployed; then
    # the task joins its session's list, for tasks/list)
    assert calls == ["dynamodb:GetItem", "dynamodb:PutItem", "lambda:Invoke", "dynamodb:UpdateItem"]
    task_id = json.loads(created["body"])["result"]["task"]["taskId"]
    _, calls = session.request("tasks/get", {"taskId": task_id})
    assert calls == ["dynamodb:GetItem", "dynamodb:GetItem"]
    wait_status(session, task_id, "completed")
    _, calls = session.request("tasks/result", {"taskId": task_id})
    assert calls == ["dynamodb:GetItem", "dynamodb:GetItem"]
    # The session's state, its list of tasks, then the page's tasks in one batch read.
    _, calls = session.request("tasks/list", {})
    assert calls == ["dynamodb:GetItem", "dynamodb:GetItem", "dynamodb:BatchGetItem"]


def test_a_tasks_question_costs_a_read_to_send_and_an_update_to_answer(session: Session) -> None:
    params = {"name": "confirm_delete", "arguments": {"filename": "a.txt"}, "task": {}}
    created, _ = session.request("tools/call", params)
    task_id = json.loads(created["body"])["result"]["task"]["taskId"]
    wait_status(session, task_id, "input_required")
    # Answered once its execution waits on a token (a direct leg parks a moment before)
    store = session.stack.worker_app.store
    deadline = time.monotonic() + 10
    while not ((record := store.get(task_id)) and record.task_token):
        assert time.monotonic() < deadline, "no execution took the task over"
        time.sleep(0.02)
    window, calls = session.request("tasks/result", {"taskId": task_id})
    # The session, the task, the question's hold (no other poller is sent it meanwhile); the
    # window ends as soon as it has sent the question.
    assert calls == ["dynamodb:GetItem", "dynamodb:GetItem", "dynamodb:PutItem"]
    question = json.loads(events(window)[1]["data"])
    answer = {
        "jsonrpc": "2.0",
        "id": question["id"],
        "result": {"action": "accept", "content": {"confirm": True}},
    }
    response, calls = session.send(answer)
    assert response["statusCode"] == 202
    assert calls == ["dynamodb:GetItem", "dynamodb:UpdateItem", "stepfunctions:SendTaskSuccess"]
    wait_status(session, task_id, "completed")


def test_a_tasks_question_on_tasks_get_costs_its_hold(session: Session) -> None:
    params = {"name": "confirm_delete", "arguments": {"filename": "b.txt"}, "task": {}}
    created, _ = session.request("tools/call", params)
    task_id = json.loads(created["body"])["result"]["task"]["taskId"]
    wait_status(session, task_id, "input_required")
    # The session, the task, the question's hold: taken, so the question goes on the stream.
    polled, calls = session.request("tasks/get", {"taskId": task_id})
    assert calls == ["dynamodb:GetItem", "dynamodb:GetItem", "dynamodb:PutItem"]
    assert [json.loads(e["data"]).get("method") for e in events(polled)] == [
        "elicitation/create",
        None,
    ]
    # Polled again while it is held: the same three calls (the hold's write is refused), and
    # only the task, in JSON.
    again, calls = session.request("tasks/get", {"taskId": task_id})
    assert calls == ["dynamodb:GetItem", "dynamodb:GetItem", "dynamodb:PutItem"]
    assert json.loads(again["body"])["result"]["status"] == "input_required"
