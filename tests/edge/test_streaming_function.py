"""The STREAMING door's API function, started as AWS's Lambda Web Adapter starts it: offline.

The adapter itself is a binary AWS publishes as a layer; it cannot be had here (no network
but package registries), so this test plays its part: it reads the function's handler
(`handlers/run.sh`) and environment from the transformed template (FrontDoor=STREAMING), runs
that command with that environment (the port is a free one instead of the template's 8080,
the AWS adapters pointed at a moto server on 127.0.0.1), waits on the readiness path the
template names, and sends each request as the adapter forwards an API Gateway REST invocation:
with the stage in the path and the `x-amzn-request-context` / `x-amzn-lambda-context`
headers. Then, timed by the client:

- an inline tool's progress notifications each arrive before the tool ends, in its answer;
  and the follow-up invocation API Gateway sends after a stream (the adapter posts it to the
  pass-through path the template names) is acknowledged;
- one listen window carries a task's status change and its completion, as they are written
  to DynamoDB, then ends.
"""

from __future__ import annotations

import http.client
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from infra.test_template import TEMPLATE, build_stack
from mcp_tasks_aws.local.template import Resolver, load_template
from mcp_tasks_aws.tasks import transitions
from support.records import ON_STACK
from support.tasks import CAPABILITIES, now_ms

ROOT = Path(__file__).resolve().parents[2]
VERSION = "2026-07-28"
REGION = "us-east-1"
ACCOUNT = "123456789012"
STAGE = "api"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@cache
def streaming_function() -> dict[str, Any]:
    """The API function as CloudFormation creates it behind the streaming door."""
    stack = build_stack(load_template(TEMPLATE), "streaming", {"FrontDoor": "STREAMING"})
    return dict(stack.choose(stack.resources()["ApiFunction"]["Properties"]))


class MotoAws:
    """A moto server on 127.0.0.1 with the stack's table and state secret."""

    def __init__(self) -> None:
        from moto.server import ThreadedMotoServer

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
        self.table = f"tasks-{secrets.token_hex(3)}"

    def client(self, service: str) -> Any:
        import boto3

        return boto3.client(
            service,
            endpoint_url=self.url,
            region_name=REGION,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )

    def start(self) -> None:
        self.server.start()
        table = load_template(TEMPLATE)["Resources"]["TaskTable"]["Properties"]
        self.client("dynamodb").create_table(
            TableName=self.table,
            AttributeDefinitions=table["AttributeDefinitions"],
            KeySchema=table["KeySchema"],
            BillingMode="PAY_PER_REQUEST",
            GlobalSecondaryIndexes=table["GlobalSecondaryIndexes"],
        )
        secret = self.client("secretsmanager").create_secret(
            Name=f"state-{secrets.token_hex(3)}", SecretString=secrets.token_hex(32)
        )
        self.secret_arn = str(secret["ARN"])

    def stop(self) -> None:
        self.server.stop()


def function_environment(aws: MotoAws, port: int) -> dict[str, str]:
    """The template's environment for the function, its references resolved to `aws`."""
    function = streaming_function()
    stack_id = f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/stk/{secrets.token_hex(4)}"
    refs = {
        "AWS::Partition": "aws",
        "AWS::Region": REGION,
        "AWS::AccountId": ACCOUNT,
        "AWS::StackName": "stk",
        "AWS::StackId": stack_id,
        "AWS::URLSuffix": "amazonaws.com",
        "ToolsModule": "demo",
        "DefaultTaskTtlMs": "86400000",
        "AllowedOrigins": "",
        "AuthMode": "NONE",
        "Tracing": "Disabled",
        "TaskTable": aws.table,
        "ResultBucket": "results",
        "StateSecret": aws.secret_arn,
        "WorkerFunctionAliaslive": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:worker:live",
        "DurableFunctionAliaslive": f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:durable:live",
    }
    resolve = Resolver(refs, lambda logical, name: f"{logical}.{name}").resolve
    env = {
        name: str(resolve(value)) for name, value in function["Environment"]["Variables"].items()
    }
    return {
        **env,
        "AWS_LWA_PORT": str(port),  # the template's 8080 is the sandbox's; here a free one
        "AWS_ENDPOINT_URL": aws.url,  # the AWS adapters reach moto
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
        "HOME": os.environ.get("HOME", "/tmp"),
    }


class Adapter:
    """What the Lambda Web Adapter does for one function: start it, wait, forward requests."""

    def __init__(self, environment: dict[str, str]) -> None:
        self.environment = environment
        self.port = int(environment["AWS_LWA_PORT"])
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 30.0) -> float:
        """Run the function's handler command; return the seconds until it was ready."""
        handler = streaming_function()["Handler"]
        started = time.monotonic()
        self.process = subprocess.Popen(
            ["/bin/bash", str(ROOT / handler)],
            cwd=ROOT,
            env=self.environment,
            start_new_session=True,
        )
        readiness = self.environment["AWS_LWA_READINESS_CHECK_PATH"]
        while time.monotonic() - started < timeout_s:
            if self.process.poll() is not None:
                raise RuntimeError(f"the function exited: {self.process.returncode}")
            try:
                status, _ = self.get(readiness)
                if status == 200:
                    return time.monotonic() - started
            except OSError:
                pass
            time.sleep(0.05)
        raise TimeoutError("the function never became ready")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=10)

    def get(self, path: str) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read()

    def invoke(self, body: dict[str, Any], headers: dict[str, str]) -> Any:
        """Forward an API Gateway REST invocation as the adapter does; the response streams."""
        context = {
            "stage": STAGE,
            "path": f"/{STAGE}/mcp",
            "requestId": secrets.token_hex(8),
            "identity": {"sourceIp": "203.0.113.9"},
        }
        forwarded = {
            **headers,
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "x-amzn-request-context": json.dumps(context),
            "x-amzn-lambda-context": json.dumps(
                {"deadline": int((time.time() + 250) * 1000), "request_id": "r"}
            ),
        }
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        started = time.monotonic()
        conn.request("POST", f"/{STAGE}/mcp", json.dumps(body), forwarded)
        return conn.getresponse(), started

    def follow_up(self) -> tuple[int, bytes]:
        """The invocation API Gateway sends after a stream: no HTTP request, so the adapter
        posts its payload to the pass-through path."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        path = self.environment["AWS_LWA_PASS_THROUGH_PATH"]
        conn.request("POST", path, json.dumps({"streamed": True}))
        response = conn.getresponse()
        return response.status, response.read()


@pytest.fixture(scope="module")
def aws() -> Iterator[MotoAws]:
    moto = MotoAws()
    previous = os.environ.get("MOTO_PORT")
    os.environ["MOTO_PORT"] = str(moto.port)  # moto's server mode wants its own port here
    moto.start()
    yield moto
    moto.stop()
    if previous is None:
        os.environ.pop("MOTO_PORT", None)
    else:
        os.environ["MOTO_PORT"] = previous


@pytest.fixture(scope="module")
def adapter(aws: MotoAws) -> Iterator[Adapter]:
    running = Adapter(function_environment(aws, free_port()))
    running.start()
    yield running
    running.stop()


def request(method: str, params: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    full_meta = {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        **meta,
    }
    return {"jsonrpc": "2.0", "id": 7, "method": method, "params": {**params, "_meta": full_meta}}


def messages(response: Any, started: float) -> Iterator[tuple[float, dict[str, Any]]]:
    while line := response.readline():
        if line.startswith(b"data:"):
            yield time.monotonic() - started, json.loads(line[5:])


def test_the_template_runs_the_function_under_the_adapter() -> None:
    from mcp_tasks_aws.edge.streaming import PASS_THROUGH_PATH, READINESS_PATH

    function = streaming_function()
    env = function["Environment"]["Variables"]
    assert function["Handler"] == "handlers/run.sh"
    assert os.access(ROOT / function["Handler"], os.X_OK)
    assert env["AWS_LAMBDA_EXEC_WRAPPER"] == "/opt/bootstrap"
    assert env["AWS_LWA_INVOKE_MODE"] == "response_stream"
    assert env["AWS_LWA_READINESS_CHECK_PATH"] == READINESS_PATH
    assert env["AWS_LWA_PASS_THROUGH_PATH"] == PASS_THROUGH_PATH
    (layer,) = function["Layers"]
    assert "layer:LambdaAdapterLayerArm64:" in layer["Fn::Sub"]
    assert function["Architectures"] == ["arm64"]
    # Longer than API Gateway's 29 s, under its 5-minute idle cut-off, above the answers
    window_s = int(env["MCP_TASKS_LISTEN_WINDOW_MS"]) / 1000
    inline_s = int(env["MCP_TASKS_INLINE_DEADLINE_MS"]) / 1000
    assert 29 < max(window_s, inline_s) < function["Timeout"] < 300
    assert "SnapStart" not in function


def test_inline_progress_streams_from_the_function(adapter: Adapter) -> None:
    files, seconds_per_file = 3, 0.5
    arguments = {"files": files, "seconds_per_file": seconds_per_file}
    body = request(
        "tools/call", {"name": "checksum_archive", "arguments": arguments}, {"progressToken": 1}
    )
    headers = {
        "mcp-protocol-version": VERSION,
        "mcp-method": "tools/call",
        "mcp-name": "checksum_archive",
    }
    response, started = adapter.invoke(body, headers)
    assert response.status == 200
    arrived = list(messages(response, started))
    progress = [at for at, m in arrived if m.get("method") == "notifications/progress"]
    (done,) = [at for at, m in arrived if "result" in m]
    assert len(progress) == files
    for index, at in enumerate(progress):  # each before the next file is even hashed
        assert at < done - (files - 1 - index) * seconds_per_file + 0.3, arrived
    # API Gateway's follow-up invocation after the stream: acknowledged
    status, acknowledged = adapter.follow_up()
    assert status == 200
    assert json.loads(acknowledged) == {"acknowledged": True}


def test_one_listen_window_carries_a_change_and_the_completion(
    adapter: Adapter, aws: MotoAws
) -> None:
    from mcp_tasks_aws.aws.dynamodb import DynamoTaskStore

    store = DynamoTaskStore(aws.client("dynamodb"), aws.table)
    record = ON_STACK.make(tool="checksum_archive", arguments={"files": 1, "seconds_per_file": 0})
    store.put_new(record)
    meta = {"io.modelcontextprotocol/clientCapabilities": CAPABILITIES}
    body = request("subscriptions/listen", {"notifications": {"taskIds": [record.task_id]}}, meta)
    headers = {"mcp-protocol-version": VERSION, "mcp-method": "subscriptions/listen"}
    response, started = adapter.invoke(body, headers)
    assert response.status == 200
    stream = messages(response, started)
    _, ack = next(stream)
    assert ack["params"]["notifications"]["taskIds"] == [record.task_id]
    _, snapshot = next(stream)
    assert snapshot["params"]["status"] == "working"

    # The leg reports, then completes: each write reaches the open window, in order.
    store.apply(record.task_id, *transitions.report(record.leg, "half way", now_ms()))
    changed_at, changed = next(stream)
    assert changed["params"]["statusMessage"] == "half way"
    result = {"content": [{"type": "text", "text": "done"}]}
    completed_write = time.monotonic() - started
    store.apply(record.task_id, *transitions.complete(record.leg, now_ms(), result=result))
    completed_at, completed = next(stream)
    assert completed["params"]["status"] == "completed"
    assert completed["params"]["result"]["content"][0]["text"] == "done"
    # Delivered within a poll step of the write (0.5 s), not at the window's end (240 s)
    assert completed_at - completed_write < 2.0
    assert changed_at < completed_at
    # ... and the window ends there: every watched task is terminal
    rest = list(stream)
    assert [m.get("result", {}).get("resultType") for _, m in rest] == ["complete"]
