"""The example declaration (examples/managed/tools.yaml) served by the embedded stack, as
`make run TOOLS=examples/managed/tools.yaml` serves it: each target kind on moto (a Lambda
stand-in, the Standard approval workflow with its AskFunction, the Express quote, the OpenAPI
inventory on a 127.0.0.1 stub), and the faults: a target missing at call time, a workflow
cancelled while it waits, a declined approval."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from mcp_tasks_aws.local.apigw_emulator import LocalLambdaContext, build_event
from mcp_tasks_aws.local.aws import REGION
from mcp_tasks_aws.local.lambdas import LAMBDAS
from mcp_tasks_aws.local.stack import EmbeddedStack
from mcp_tasks_aws.protocol.names import TASK_POLICY_META
from support.aws_calls import aws_calls
from support.tasks import TaskClient, WorkerDispatch, wait_until

TOOLS = "examples/managed/tools.yaml"
APPROVE = {"action": "accept", "content": {"approve": True, "approver": "ada"}}


@pytest.fixture(scope="module")
def stack() -> Iterator[EmbeddedStack]:
    with EmbeddedStack(env={"MCP_TASKS_TOOLS": TOOLS}) as running:
        yield running


@pytest.fixture
def client(stack: EmbeddedStack) -> TaskClient:
    return TaskClient(stack, WorkerDispatch(stack))


def call(client: TaskClient, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return client.rpc("tools/call", {"name": name, "arguments": arguments})


def text(result: dict[str, Any]) -> str:
    return "".join(block["text"] for block in result["content"])


def test_every_declared_tool_is_listed(client: TaskClient) -> None:
    listed = {t["name"]: t for t in client.result("tools/list", {})["tools"]}
    assert sorted(listed) == ["add_item", "deploy", "get_item", "list_items", "quote", "word_count"]
    assert listed["deploy"]["_meta"][TASK_POLICY_META] == "required"


def test_the_sync_lambda_runs_its_local_stand_in(client: TaskClient) -> None:
    result = call(client, "word_count", {"text": "one two\nthree"})["result"]
    assert result["structuredContent"] == {"words": 3, "lines": 2}


def test_a_function_missing_at_call_time_is_an_error_naming_it(client: TaskClient) -> None:
    handler = LAMBDAS.handlers.pop("word-count")
    try:
        message = call(client, "word_count", {"text": "x"})
    finally:
        LAMBDAS.handlers["word-count"] = handler
    assert message["error"] == {
        "code": -32603,
        "message": "Tool word_count: Lambda function word-count: ResourceNotFoundException",
    }


def test_bad_arguments_are_invalid_params(client: TaskClient) -> None:
    error = call(client, "deploy", {"version": "1.0", "environment": "staging"})["error"]
    assert error["code"] == -32602
    assert error["message"].startswith("Invalid arguments for tool deploy: version: must match")


def test_the_express_machine_runs_inline(client: TaskClient) -> None:
    result = call(client, "quote", {"item": "bolt", "quantity": 4})["result"]
    assert result["structuredContent"] == {
        "item": "bolt",
        "quantity": 4,
        "unitPrice": 2.5,
        "currency": "EUR",
    }
    refused = call(client, "quote", {"item": "bolt", "quantity": 500})["result"]
    assert refused["isError"] is True
    assert text(refused) == "OutOfStock: Not that many in stock (at most 100)."


def test_the_openapi_operations_reach_the_local_stub(client: TaskClient) -> None:
    listed = call(client, "list_items", {"limit": 1})["result"]["structuredContent"]
    assert [item["name"] for item in listed["items"]] == ["widget"]
    added = call(client, "add_item", {"body": {"name": "bolt", "quantity": 9}})["result"]
    assert added["structuredContent"]["name"] == "bolt"
    got = call(client, "get_item", {"itemId": added["structuredContent"]["id"]})["result"]
    assert got["structuredContent"]["quantity"] == 9
    missing = call(client, "get_item", {"itemId": "nope"})["result"]
    assert missing["isError"] is True
    assert text(missing).startswith("HTTP 404 from GET https://inventory.example.com/v1/items/")


def deploy(client: TaskClient, step_seconds: int = 0) -> str:
    arguments = {"version": "v2.1", "environment": "staging", "stepSeconds": step_seconds}
    return client.create("deploy", arguments)


def test_the_approval_workflow_asks_reports_and_completes(client: TaskClient) -> None:
    task_id = deploy(client, step_seconds=2)
    asked = client.wait_input(task_id, timeout=15)
    ((key, request),) = asked["inputRequests"].items()
    assert request["params"]["message"] == "Deploy v2.1 to staging?"
    assert client.update(task_id, {key: APPROVE})["result"] == {"resultType": "complete"}
    reported = wait_until(
        lambda: (
            (t := client.get(task_id)).get("statusMessage") == "1/2 · approved: deploying" and t
        ),
        timeout=15,
    )
    assert reported["status"] == "working"
    done = client.wait_terminal(task_id, timeout=20)
    assert done["status"] == "completed"
    assert done["result"]["structuredContent"] == {
        "deployed": "v2.1",
        "environment": "staging",
        "approvedBy": "ada",
    }


def test_a_declined_approval_takes_the_error_path_to_a_tool_error(client: TaskClient) -> None:
    task_id = deploy(client)
    key = next(iter(client.wait_input(task_id, timeout=15)["inputRequests"]))
    client.update(task_id, {key: {"action": "decline"}})
    done = client.wait_terminal(task_id, timeout=15)
    assert done["status"] == "completed"
    assert done["result"]["isError"] is True
    assert text(done["result"]) == "Rejected: The deployment was not approved."


def test_a_workflow_cancelled_while_it_waits_stays_cancelled(client: TaskClient) -> None:
    task_id = deploy(client)
    client.wait_input(task_id, timeout=15)
    assert "error" not in client.cancel(task_id)
    assert client.get(task_id)["status"] == "cancelled"
    record = client.store.get(task_id)
    assert record is not None
    assert record.execution_arn is not None
    sfn = boto3.client("stepfunctions", region_name=REGION)
    ended = wait_until(
        lambda: (
            (s := sfn.describe_execution(executionArn=record.execution_arn)["status"]) != "RUNNING"
            and s
        ),
        timeout=15,
    )
    assert ended in ("ABORTED", "FAILED")
    # The reconciler has seen the execution's end by now, or will: the task stays cancelled.
    wait_until(lambda: record.execution_arn in _reconciled(), timeout=10)
    assert client.get(task_id)["status"] == "cancelled"


def _reconciled() -> set[str]:
    sfn = boto3.client("stepfunctions", region_name=REGION)
    machine = "arn:aws:states:us-east-1:123456789012:stateMachine:deploy-approval"
    return {
        e["executionArn"]
        for status in ("ABORTED", "FAILED")
        for e in sfn.list_executions(stateMachineArn=machine, statusFilter=status)["executions"]
    }


# -- what a Standard-machine task costs (AWS calls the API function makes per operation) ---


def served(client: TaskClient, method: str, params: dict[str, Any]) -> tuple[Any, list[str]]:
    """The result of one request and the AWS calls the API handler made serving it."""
    name = params.get("name") if method == "tools/call" else params.get("taskId")
    event = build_event(
        method="POST",
        path="/mcp",
        headers=client.headers(method, name, None),
        body=client.body(method, params),
    )
    with aws_calls() as calls:
        response = client.stack.api_handler(event, LocalLambdaContext())
    assert response["statusCode"] == 200, response
    message = json.loads(response["body"])
    assert "error" not in message, message
    return message["result"], calls


def test_a_standard_machine_task_costs_two_one_two_and_three_calls(client: TaskClient) -> None:
    arguments = {"version": "v3.0", "environment": "staging", "stepSeconds": 0}
    created, create = served(client, "tools/call", {"name": "deploy", "arguments": arguments})
    assert create == ["dynamodb:PutItem", "stepfunctions:StartExecution"]
    task_id = created["taskId"]
    key = next(iter(client.wait_input(task_id, timeout=15)["inputRequests"]))
    assert served(client, "tasks/get", {"taskId": task_id})[1] == ["dynamodb:GetItem"]
    update = {"taskId": task_id, "inputResponses": {key: APPROVE}}
    assert served(client, "tasks/update", update)[1] == [
        "dynamodb:UpdateItem",
        "stepfunctions:SendTaskSuccess",
    ]
    assert client.wait_terminal(task_id, timeout=15)["status"] == "completed"
    # A cancel while the workflow waits: the marker, the stop, the waiting state failed.
    waiting = deploy(client)
    client.wait_input(waiting, timeout=15)
    assert served(client, "tasks/cancel", {"taskId": waiting})[1] == [
        "dynamodb:UpdateItem",
        "stepfunctions:StopExecution",
        "stepfunctions:SendTaskFailure",
    ]


@pytest.mark.parametrize(
    ("event", "error"),
    [
        (
            {"action": "ask", "taskId": "0" * 32, "executionArn": "x", "taskToken": "t"},
            "McpUnknownTask",
        ),
        ({"action": "ask", "taskId": "0" * 32, "executionArn": "x"}, "McpInvalidRequest"),
        ({"action": "forget", "taskId": "0" * 32}, "McpInvalidRequest"),
    ],
)
def test_the_ask_function_fails_with_an_error_named_for_the_states_catch(
    stack: EmbeddedStack, event: dict[str, Any], error: str
) -> None:
    request = {"method": "elicitation/create", "params": {"message": "?"}}
    with pytest.raises(Exception) as raised:
        stack.ask_handler({**event, "request": request}, LocalLambdaContext(function_name="ask"))
    assert type(raised.value).__name__ == error


def _execution_input(execution_arn: str) -> dict[str, Any]:
    sfn = boto3.client("stepfunctions", region_name=REGION)
    described = sfn.describe_execution(executionArn=execution_arn)
    value: dict[str, Any] = json.loads(described["input"])
    return value


def test_the_ask_function_serves_only_callers_holding_the_tasks_capability(
    client: TaskClient, stack: EmbeddedStack
) -> None:
    # Anyone allowed to invoke the function may know a task id, and so its execution's ARN:
    # without the capability its start put in the execution's input, nothing happens.
    task_id = deploy(client)
    client.wait_input(task_id, timeout=15)
    record = client.store.get(task_id)
    assert record is not None
    assert record.execution_arn is not None
    capability = _execution_input(record.execution_arn)["mcpTaskCapability"]
    context = LocalLambdaContext(function_name="ask")
    door = {"taskId": task_id, "executionArn": record.execution_arn}
    for forged in (None, "door.AAAAAAAA.e30.AAAAAAAAAAAAAAAAAAAAAA", capability + "x"):
        with pytest.raises(Exception) as raised:
            stack.ask_handler({**door, "action": "report", "message": "pwned"}, context)
        assert type(raised.value).__name__ == "McpUnknownTask"
        event = {**door, "action": "report", "message": "pwned", "capability": forged}
        with pytest.raises(Exception) as raised:
            stack.ask_handler(event, context)
        assert type(raised.value).__name__ == "McpUnknownTask"
    assert client.store.get(task_id).status_message != "pwned"  # type: ignore[union-attr]
    # With it, a report's numbers no float holds are bad input, not a crash.
    event = {**door, "action": "report", "message": "x", "capability": capability}
    with pytest.raises(Exception) as raised:
        stack.ask_handler({**event, "progress": 10**400}, context)
    assert type(raised.value).__name__ == "McpInvalidRequest"
    client.cancel(task_id)
