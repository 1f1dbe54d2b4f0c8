"""What a task costs: Step Functions state transitions per task, AWS calls per operation, on
both paths (first legs direct, and every leg on Step Functions).

Transitions are read from the execution history of the embedded stack's state machine (a
task whose first leg ran directly and asked nothing has no execution at all). AWS calls are
counted by wrapping botocore's `BaseClient._make_api_call` while the API handler serves one
request in the test's own thread (the worker and the state machine run in other threads and
are not counted).
"""

from __future__ import annotations

import json
import threading
from typing import Any

import boto3
import pytest

from mcp_tasks_aws.local.apigw_emulator import LocalLambdaContext, build_event
from mcp_tasks_aws.local.aws import REGION
from support.aws_calls import aws_calls
from support.tasks import TaskClient, elicit_answer, wait_until

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


def states_entered(tasks: TaskClient, task_id: str) -> list[str]:
    """The states an ended execution entered, in order (one transition each)."""
    status: str = wait_until(
        lambda: (s := tasks.execution(task_id)["status"]) != "RUNNING" and s, timeout=5
    )
    assert status == "SUCCEEDED", status
    sfn = boto3.client("stepfunctions", region_name=REGION)
    events = sfn.get_execution_history(
        executionArn=tasks.runner.execution_arn(task_id), maxResults=1000
    )["events"]
    return [e["type"] for e in events if e["type"].endswith("StateEntered")]


def test_a_task_without_input_takes_no_transition_on_the_direct_path(
    tasks: TaskClient, path: str
) -> None:
    # Given a task that asks nothing and finishes at once
    task_id = tasks.create("slow_compute", {"seconds": 0, "label": "transitions"})
    assert tasks.wait_terminal(task_id)["status"] == "completed"
    if path == "direct":
        # Then no execution ran it: zero state transitions
        assert tasks.executions_named(task_id) == []
    else:
        # Then its execution entered at most three states (RunLeg, Route, Done)
        entered = states_entered(tasks, task_id)
        assert 1 <= len(entered) <= 3, entered


def test_one_input_round_takes_at_most_five_transitions(tasks: TaskClient, path: str) -> None:
    # Given a task that asks one question, answered once (on the direct path, the first
    # leg asks and hands over: the execution's first leg only attaches its token)
    task_id = tasks.create("confirm_delete", {"filename": "t.txt"})
    waiting = tasks.wait_input(task_id)
    (key,) = waiting["inputRequests"]
    tasks.update(task_id, {key: elicit_answer({"confirm": True})})
    assert tasks.wait_terminal(task_id)["status"] == "completed"
    # Then its execution entered at most five states (two legs, two routes, done)
    entered = states_entered(tasks, task_id)
    assert 1 <= len(entered) <= 5, entered


# -- AWS calls per operation -------------------------------------------------------------------


def serve(
    tasks: TaskClient, method: str, params: dict[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """Serve one request with the stack's API handler in this thread; (message, AWS calls)."""
    name = params.get("name") if method == "tools/call" else params.get("taskId")
    event = build_event(
        method="POST",
        path="/mcp",
        headers=tasks.headers(method, name, None),
        body=tasks.body(method, params),
    )
    with aws_calls() as calls:
        response = tasks.stack.api_handler(event, LocalLambdaContext())
    assert response["statusCode"] == 200, response
    message: dict[str, Any] = json.loads(response["body"])
    assert "error" not in message, message
    return message, calls


def test_counter_sees_the_calls_of_this_thread_only(tasks: TaskClient) -> None:
    # The probe itself: one call here is counted, one in another thread is not.
    with aws_calls() as calls:
        tasks.store.get("0" * 32)
        other = threading.Thread(target=tasks.store.get, args=("1" * 32,))
        other.start()
        other.join(timeout=5)
    assert calls == ["dynamodb:GetItem"]


def test_creating_a_task_costs_at_most_two_calls(tasks: TaskClient, path: str) -> None:
    params = {"name": "slow_compute", "arguments": {"seconds": 0, "label": "cost-create"}}
    message, calls = serve(tasks, "tools/call", params)
    assert message["result"]["resultType"] == "task"
    started = "lambda:Invoke" if path == "direct" else "stepfunctions:StartExecution"
    assert calls == ["dynamodb:PutItem", started]
    tasks.wait_terminal(message["result"]["taskId"])


def test_getting_a_task_costs_one_call(tasks: TaskClient) -> None:
    # A waiting task and a completed one: one consistent read each
    waiting_id = tasks.create("confirm_delete", {"filename": "cost-get.txt"})
    tasks.wait_input(waiting_id)
    message, calls = serve(tasks, "tasks/get", {"taskId": waiting_id})
    assert message["result"]["status"] == "input_required"
    assert calls == ["dynamodb:GetItem"]

    done_id = tasks.create("slow_compute", {"seconds": 0, "label": "cost-get"})
    tasks.wait_terminal(done_id)
    message, calls = serve(tasks, "tasks/get", {"taskId": done_id})
    assert message["result"]["status"] == "completed"
    assert calls == ["dynamodb:GetItem"]
    tasks.cancel(waiting_id)


def test_updating_a_task_costs_at_most_two_calls(tasks: TaskClient) -> None:
    task_id = tasks.create("confirm_delete", {"filename": "cost-update.txt"})
    (key,) = tasks.wait_input(task_id)["inputRequests"]
    params = {"taskId": task_id, "inputResponses": {key: elicit_answer({"confirm": False})}}
    message, calls = serve(tasks, "tasks/update", params)
    assert message["result"] == {"resultType": "complete"}
    assert len(calls) <= 2, calls
    assert calls[0] == "dynamodb:UpdateItem"
    final = tasks.wait_terminal(task_id)
    assert final["result"]["content"][0]["text"] == "Kept cost-update.txt."


def test_cancelling_a_waiting_task_costs_at_most_two_calls(tasks: TaskClient, path: str) -> None:
    task_id = tasks.create("confirm_delete", {"filename": "cost-cancel.txt"})
    tasks.wait_input(task_id)
    message, calls = serve(tasks, "tasks/cancel", {"taskId": task_id})
    assert message["result"] == {"resultType": "complete"}
    assert len(calls) <= 2, calls
    assert calls[0] == "dynamodb:UpdateItem"
    assert tasks.get(task_id)["status"] == "cancelled"


def test_cancelling_a_working_task_costs_at_most_two_calls(tasks: TaskClient, path: str) -> None:
    task_id = tasks.create("slow_compute", {"seconds": 2, "label": "cost-cancel-working"})
    message, calls = serve(tasks, "tasks/cancel", {"taskId": task_id})
    assert message["result"] == {"resultType": "complete"}
    if path == "direct":
        assert calls == ["dynamodb:UpdateItem"]  # no execution to stop: the leg notices
    else:
        assert calls in (["dynamodb:UpdateItem", "stepfunctions:StopExecution"],), calls
    assert tasks.wait_terminal(task_id)["status"] == "cancelled"
