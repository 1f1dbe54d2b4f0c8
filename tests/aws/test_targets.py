"""The AWS side of managed targets (`aws.targets`), against botocore's Stubber and moto:
the calls made, and each refusal as TargetUnavailable naming the target and the AWS code."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.stub import Stubber

from mcp_tasks_aws.aws.call_policies import REPEATABLE, CallPolicy
from mcp_tasks_aws.aws.clients import Clients
from mcp_tasks_aws.aws.targets import AwsTargets, StepFunctionsWorkflows
from mcp_tasks_aws.local.aws import REGION
from mcp_tasks_aws.targets.ports import HttpRequest
from mcp_tasks_aws.tasks.exceptions import TargetUnavailable

FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:count"
MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:approve"
SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:key-AbCdEf"


class StubbedClients(Clients):
    """Clients whose every client is stubbed (no network, no credentials needed)."""

    def __init__(self) -> None:
        session = botocore.session.get_session()
        session.set_config_variable("region", REGION)
        session.set_credentials("AKIDEXAMPLE", "secret")
        super().__init__(session)
        self.stubs: dict[str, Stubber] = {}

    def client(self, service: str, policy: CallPolicy) -> Any:
        # One stubbed client per service, whatever the policy of the call.
        return super().client(service, REPEATABLE)

    def stub(self, service: str) -> Stubber:
        if service not in self.stubs:
            stubber = Stubber(self.client(service, REPEATABLE))
            stubber.activate()
            self.stubs[service] = stubber
        return self.stubs[service]


@pytest.fixture
def clients() -> Iterator[StubbedClients]:
    made = StubbedClients()
    yield made
    for stubber in made.stubs.values():
        stubber.assert_no_pending_responses()


def test_invoke_is_request_response_with_the_qualifier(clients: StubbedClients) -> None:
    clients.stub("lambda").add_response(
        "invoke",
        {"StatusCode": 200, "Payload": io.BytesIO(b'{"words": 2}')},
        {
            "FunctionName": FUNCTION,
            "InvocationType": "RequestResponse",
            "Payload": b'{"text": "a b"}',
            "Qualifier": "live",
        },
    )
    invoked = AwsTargets(clients).invoke(FUNCTION, "live", b'{"text": "a b"}')
    assert json.loads(invoked.payload) == {"words": 2}
    assert invoked.function_error is None


def test_a_function_error_is_returned_not_raised(clients: StubbedClients) -> None:
    clients.stub("lambda").add_response(
        "invoke",
        {
            "StatusCode": 200,
            "FunctionError": "Unhandled",
            "Payload": io.BytesIO(b'{"errorType": "KeyError"}'),
        },
    )
    assert AwsTargets(clients).invoke(FUNCTION, None, b"{}").function_error == "Unhandled"


@pytest.mark.parametrize(
    "code", ["ResourceNotFoundException", "TooManyRequestsException", "AccessDeniedException"]
)
def test_a_missing_throttled_or_denied_function_names_it_and_the_code(
    clients: StubbedClients, code: str
) -> None:
    clients.stub("lambda").add_client_error("invoke", service_error_code=code, http_status_code=400)
    with pytest.raises(TargetUnavailable) as caught:
        AwsTargets(clients).invoke(FUNCTION, None, b"{}")
    assert caught.value.message == f"Lambda function {FUNCTION}: {code}"


def test_an_express_run_answers_status_output_error_and_cause(clients: StubbedClients) -> None:
    stub = clients.stub("stepfunctions")
    common = {
        "executionArn": MACHINE.replace("stateMachine", "express") + ":x",
        "startDate": "2026-01-01T00:00:00Z",
        "stopDate": "2026-01-01T00:00:01Z",
    }
    stub.add_response("start_sync_execution", {**common, "status": "SUCCEEDED", "output": "{}"})
    stub.add_response(
        "start_sync_execution", {**common, "status": "FAILED", "error": "E", "cause": "C"}
    )
    targets = AwsTargets(clients)
    assert targets.run_express(MACHINE, "{}").output == "{}"
    failed = targets.run_express(MACHINE, "{}")
    assert (failed.status, failed.error, failed.cause) == ("FAILED", "E", "C")


def test_secrets_are_read_once_then_cached(clients: StubbedClients) -> None:
    clients.stub("secretsmanager").add_response(
        "get_secret_value",
        {"ARN": SECRET, "Name": "key", "SecretString": "s3cret"},
        {"SecretId": SECRET},
    )
    targets = AwsTargets(clients)
    assert targets.secret(SECRET) == targets.secret(SECRET) == "s3cret"


def test_a_binary_secret_is_unusable_naming_it(clients: StubbedClients) -> None:
    clients.stub("secretsmanager").add_response(
        "get_secret_value", {"ARN": SECRET, "Name": "key", "SecretBinary": b"\x00k3y"}
    )
    with pytest.raises(TargetUnavailable) as caught:
        AwsTargets(clients).secret(SECRET)
    assert caught.value.message == f"Secret {SECRET}: Unusable (it holds binary data)"


def test_a_denied_secret_names_it(clients: StubbedClients) -> None:
    clients.stub("secretsmanager").add_client_error(
        "get_secret_value", service_error_code="AccessDeniedException"
    )
    with pytest.raises(TargetUnavailable, match=f"Secret {SECRET}: AccessDeniedException"):
        AwsTargets(clients).secret(SECRET)


def test_sigv4_signs_with_the_functions_credentials(clients: StubbedClients) -> None:
    request = HttpRequest("GET", "https://abc.execute-api.eu-west-1.amazonaws.com/p", {}, None, 5)
    signed = AwsTargets(clients).sign(request, "execute-api", "eu-west-1")
    authorization = signed.headers["Authorization"]
    assert authorization.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/eu-west-1/execute-api/aws4_request" in authorization
    assert "X-Amz-Date" in signed.headers


# -- workflows on moto -------------------------------------------------------------------------


@pytest.fixture
def sfn(local_aws: Any) -> Any:
    return boto3.client("stepfunctions", region_name=REGION)


@pytest.fixture
def machine(sfn: Any) -> str:
    iam = boto3.client("iam", region_name=REGION)
    try:
        role = iam.create_role(RoleName="flows", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    except iam.exceptions.EntityAlreadyExistsException:
        role = iam.get_role(RoleName="flows")["Role"]["Arn"]
    definition = {
        "StartAt": "Wait",
        "States": {"Wait": {"Type": "Wait", "Seconds": 30, "End": True}},
    }
    name = f"flow-{len(sfn.list_state_machines()['stateMachines'])}"
    made = sfn.create_state_machine(name=name, definition=json.dumps(definition), roleArn=role)
    return str(made["stateMachineArn"])


def test_a_workflow_starts_once_under_the_task_id_and_stops(sfn: Any, machine: str) -> None:
    flows = StepFunctionsWorkflows(sfn)
    arn = flows.start(machine, "a" * 32, {"taskId": "a" * 32})
    assert arn == machine.replace(":stateMachine:", ":execution:") + ":" + "a" * 32
    assert flows.start(machine, "a" * 32, {"taskId": "a" * 32}) == arn  # a retried start
    names = [e["name"] for e in sfn.list_executions(stateMachineArn=machine)["executions"]]
    assert names == ["a" * 32]
    flows.stop(arn)
    flows.stop(arn)  # not running any more: fine
    # moto's execution thread records the abort a moment after StopExecution returns (AWS
    # answers once it is recorded): wait for it, boundedly.
    deadline = time.monotonic() + 5
    while sfn.describe_execution(executionArn=arn)["status"] == "RUNNING":
        assert time.monotonic() < deadline, "the execution was not stopped"
        time.sleep(0.01)
    assert sfn.describe_execution(executionArn=arn)["status"] == "ABORTED"


def test_a_missing_machine_names_it_and_the_code(sfn: Any) -> None:
    missing = MACHINE.replace("approve", "nope")
    with pytest.raises(
        TargetUnavailable, match=f"State machine {missing}: StateMachineDoesNotExist"
    ):
        StepFunctionsWorkflows(sfn).start(missing, "b" * 32, {})


def test_a_used_token_is_reported_stale(sfn: Any) -> None:
    flows = StepFunctionsWorkflows(sfn)
    assert flows.answer("no-such-token", {"ok": True}) is False
    assert flows.refuse("no-such-token", "McpDeclined", "declined") is False
