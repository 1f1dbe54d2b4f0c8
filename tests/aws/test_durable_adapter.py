"""The durable executions adapter (`aws.durable`) against botocore's Lambda model, through our
own clients (the trimmed model, the call table's policies): each call's parameters are checked
against the service model by botocore's Stubber, and each answer is read as the port says.

- start: Invoke, Event, named after the task; an execution already started by that name is
  started (no error);
- answer: the callback completed with the JSON text; a callback gone is False, except on a
  copy the SDK resent (its first copy may have completed it);
- stop and status: the execution found by name on the unqualified function; only a running
  one is stopped; none found is None.
"""

from __future__ import annotations

from typing import Any

import botocore.session
import pytest
from botocore.stub import ANY, Stubber

from mcp_tasks_aws.aws.call_policies import REPEATABLE
from mcp_tasks_aws.aws.clients import Clients
from mcp_tasks_aws.aws.durable import LambdaDurableExecutions, unqualified

ALIAS = "arn:aws:lambda:us-east-1:123456789012:function:stack-DurableFunction:live"
FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:stack-DurableFunction"
TASK = "a" * 32
EXECUTION = f"{FUNCTION}:3/durable-execution/{TASK}/0f9c0c49-7a52-4a55-9a3b-91f0f1d1b0a1"


@pytest.fixture
def client() -> Any:
    session = botocore.session.get_session()
    session.set_config_variable("region", "us-east-1")
    session.set_credentials("testing", "testing")
    # Every call the adapter makes has a REPEATABLE row: this is the client they all go to.
    return Clients(session).client("lambda", REPEATABLE)


def test_unqualified_is_the_bare_name() -> None:
    assert unqualified(ALIAS) == "stack-DurableFunction"
    assert unqualified(FUNCTION) == "stack-DurableFunction"
    assert unqualified("fn:live") == "fn"


def test_start_invokes_the_alias_named_after_the_task(client: Any) -> None:
    with Stubber(client) as stub:
        stub.add_response(
            "invoke",
            {"StatusCode": 202},
            {
                "FunctionName": ALIAS,
                "InvocationType": "Event",
                "DurableExecutionName": TASK,
                "Payload": b'{"taskId": "' + TASK.encode() + b'"}',
            },
        )
        LambdaDurableExecutions(client, ALIAS).start(TASK, {"taskId": TASK})
        stub.assert_no_pending_responses()


def test_a_start_already_made_is_started(client: Any) -> None:
    with Stubber(client) as stub:
        stub.add_client_error(
            "invoke", "DurableExecutionAlreadyStartedException", http_status_code=409
        )
        LambdaDurableExecutions(client, ALIAS).start(TASK, {"taskId": TASK})


def test_another_start_error_is_raised(client: Any) -> None:
    with Stubber(client) as stub:
        stub.add_client_error("invoke", "ResourceNotFoundException", http_status_code=404)
        with pytest.raises(Exception, match="ResourceNotFoundException"):
            LambdaDurableExecutions(client, ALIAS).start(TASK, {"taskId": TASK})


def test_an_answer_completes_the_callback_with_the_json(client: Any) -> None:
    with Stubber(client) as stub:
        stub.add_response(
            "send_durable_execution_callback_success",
            {},
            {"CallbackId": "cb-1", "Result": b'{"q": 1}'},
        )
        assert LambdaDurableExecutions(client, ALIAS).answer("cb-1", '{"q": 1}') is True


@pytest.mark.parametrize(
    "code",
    ["ResourceNotFoundException", "CallbackTimeoutException", "InvalidParameterValueException"],
)
def test_a_callback_gone_is_false(client: Any, code: str) -> None:
    with Stubber(client) as stub:
        stub.add_client_error("send_durable_execution_callback_success", code, http_status_code=400)
        assert LambdaDurableExecutions(client, ALIAS).answer("cb-1", "{}") is False


def listed(status: str | None) -> dict[str, Any]:
    if status is None:
        return {"DurableExecutions": []}
    execution = {
        "DurableExecutionArn": EXECUTION,
        "DurableExecutionName": TASK,
        "FunctionArn": f"{FUNCTION}:3",
        "Status": status,
        "StartTimestamp": 1_700_000_000,
    }
    return {"DurableExecutions": [execution]}


LIST_PARAMS = {"FunctionName": "stack-DurableFunction", "DurableExecutionName": TASK}


@pytest.mark.parametrize("status", ["RUNNING", "SUCCEEDED", None])
def test_status_finds_the_execution_by_name(client: Any, status: str | None) -> None:
    with Stubber(client) as stub:
        stub.add_response("list_durable_executions_by_function", listed(status), LIST_PARAMS)
        assert LambdaDurableExecutions(client, ALIAS).status(TASK) == status


def test_stop_stops_a_running_execution(client: Any) -> None:
    with Stubber(client) as stub:
        stub.add_response("list_durable_executions_by_function", listed("RUNNING"), LIST_PARAMS)
        stub.add_response(
            "stop_durable_execution",
            {"StopTimestamp": 1_700_000_001},
            {"DurableExecutionArn": EXECUTION, "Error": ANY},
        )
        LambdaDurableExecutions(client, ALIAS).stop(TASK)
        stub.assert_no_pending_responses()


@pytest.mark.parametrize("status", ["STOPPED", "SUCCEEDED", None])
def test_stop_leaves_an_execution_that_is_not_running(client: Any, status: str | None) -> None:
    with Stubber(client) as stub:
        stub.add_response("list_durable_executions_by_function", listed(status), LIST_PARAMS)
        LambdaDurableExecutions(client, ALIAS).stop(TASK)
        stub.assert_no_pending_responses()
