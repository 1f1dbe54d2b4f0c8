"""A declared workflow's answer (SendTaskSuccess / SendTaskFailure) and its start
(StartExecution) meet throttling or a 5xx as the task runner's do: `Throttled` (a 503 with
Retry-After at the edge), not a raw ClientError (a 500) nor `TargetUnavailable` (the task
failed for good); a stale token is False. One helper serves both adapters' answers."""

from __future__ import annotations

from typing import Any

import botocore.session
import pytest
from botocore.stub import Stubber

from mcp_tasks_aws.aws.targets import StepFunctionsWorkflows
from mcp_tasks_aws.tasks.exceptions import TargetUnavailable
from mcp_tasks_aws.tasks.ports import Throttled


def _client() -> Any:
    session = botocore.session.get_session()
    return session.create_client(
        "stepfunctions",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


@pytest.mark.parametrize("code", ["ThrottlingException", "ServiceUnavailable"])
@pytest.mark.parametrize("move", ["answer", "refuse"])
def test_a_busy_step_functions_is_throttled_not_a_crash(code: str, move: str) -> None:
    client = _client()
    operation = "send_task_success" if move == "answer" else "send_task_failure"
    flows = StepFunctionsWorkflows(client)
    send = (
        (lambda: flows.answer("token", {"approve": True}))
        if move == "answer"
        else (lambda: flows.refuse("token", "McpDeclined", "declined"))
    )
    with Stubber(client) as stub:
        stub.add_client_error(operation, code, http_status_code=400 if "Thr" in code else 503)
        with pytest.raises(Throttled):
            send()


def test_a_stale_token_is_false() -> None:
    client = _client()
    with Stubber(client) as stub:
        stub.add_client_error("send_task_success", "TaskTimedOut")
        assert StepFunctionsWorkflows(client).answer("token", {}) is False


MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:approve"


@pytest.mark.parametrize(
    ("code", "status"), [("ThrottlingException", 400), ("InternalFailure", 500)]
)
def test_a_busy_start_is_throttled_as_the_port_says(code: str, status: int) -> None:
    """Item 19: throttling or a 5xx at StartExecution is `Throttled` (503, try again), not
    `TargetUnavailable` (the task failed for good)."""
    client = _client()
    with Stubber(client) as stub:
        stub.add_client_error("start_execution", code, http_status_code=status)
        with pytest.raises(Throttled):
            StepFunctionsWorkflows(client).start(MACHINE, "t" * 32, {"taskId": "t" * 32})


def test_a_refused_start_still_names_the_machine() -> None:
    client = _client()
    with Stubber(client) as stub:
        stub.add_client_error("start_execution", "AccessDeniedException", http_status_code=400)
        with pytest.raises(TargetUnavailable) as raised:
            StepFunctionsWorkflows(client).start(MACHINE, "t" * 32, {})
    assert raised.value.code == "AccessDeniedException"
    assert MACHINE in raised.value.message
