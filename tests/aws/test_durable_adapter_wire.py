"""The durable executions adapter (`aws/durable.py`) over HTTP, against AWS's local durable
execution service (the testing package's `WebRunner`, what `dex-local-runner start-server`
serves) on 127.0.0.1: the calls the API and the sweeper make, in their real shape, through
botocore's Lambda client.

The runner can start an execution only through its own start route (Lambda's `Invoke` is not
its to serve), and invokes the function at a Lambda endpoint: none listens here, so the
execution stays RUNNING, retrying its first invocation. That is enough for what is checked:
- status: ListDurableExecutionsByFunction finds it by name (none for an unknown name);
- stop: StopDurableExecution stops it, and a second stop changes nothing;
- answer: SendDurableExecutionCallbackSuccess for a callback that is not waiting is False
  (the error the service answers is one the adapter reads as "gone").
"""

from __future__ import annotations

import json
import socket
import threading
import urllib.request
from collections.abc import Iterator
from typing import Any

import botocore.session
import pytest
from aws_durable_execution_sdk_python_testing import WebRunner, WebRunnerConfig
from aws_durable_execution_sdk_python_testing.web.server import WebServiceConfig

from mcp_tasks_aws.aws.durable import LambdaDurableExecutions

ACCOUNT, REGION, FUNCTION = "123456789012", "us-west-2", "durable-wire"
TASK = "b" * 32


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def service() -> Iterator[str]:
    port, nobody = free_port(), free_port()  # nothing listens on the Lambda endpoint
    config = WebRunnerConfig(
        web_service=WebServiceConfig(host="127.0.0.1", port=port),
        lambda_endpoint=f"http://127.0.0.1:{nobody}",
        local_runner_endpoint=f"http://127.0.0.1:{port}",
        local_runner_region=REGION,
    )
    runner = WebRunner(config)
    runner.start()
    thread = threading.Thread(target=runner.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        runner._server.shutdown()  # serve_forever's loop; `stop` then closes the rest
        runner.stop()
        thread.join(timeout=5)


def start(url: str, name: str) -> str:
    body = {
        "AccountId": ACCOUNT,
        "FunctionName": FUNCTION,
        "FunctionQualifier": "1",
        "ExecutionName": name,
        "ExecutionTimeoutSeconds": 300,
        "ExecutionRetentionPeriodDays": 1,
        "Input": json.dumps({"taskId": name}),
    }
    request = urllib.request.Request(
        f"{url}/start-durable-execution",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        started: dict[str, Any] = json.loads(response.read())
    return str(started["ExecutionArn"])


def adapter(url: str) -> LambdaDurableExecutions:
    session = botocore.session.get_session()
    client = session.create_client(
        "lambda",
        region_name=REGION,
        endpoint_url=url,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    # As the template configures it: the alias's ARN.
    alias = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{FUNCTION}:live"
    return LambdaDurableExecutions(client, alias)


def test_status_and_stop_find_the_execution_by_name(service: str) -> None:
    executions = adapter(service)
    assert executions.status(TASK) is None
    start(service, TASK)
    assert executions.status(TASK) == "RUNNING"
    executions.stop(TASK)
    assert executions.status(TASK) == "STOPPED"
    executions.stop(TASK)  # stopping it again changes nothing
    assert executions.status(TASK) == "STOPPED"


def test_an_answer_to_a_callback_nobody_waits_on_is_false(service: str) -> None:
    assert adapter(service).answer("no-such-callback", '{"q": 1}') is False
