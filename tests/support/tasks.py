"""Durable tasks on the embedded stack: a small HTTP client for the Tasks extension, the worker
as the state machine sees it (routable per task), the two paths a task's first leg can take,
unsigned JWTs for other callers, and a bounded wait.

Every wait here has a deadline.
"""

from __future__ import annotations

import base64
import contextlib
import json
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest

from mcp_tasks_aws.aws.dynamodb import DynamoTaskStore
from mcp_tasks_aws.aws.stepfunctions import StepFunctionsRunner
from mcp_tasks_aws.local.aws import REGION
from mcp_tasks_aws.local.stack import EmbeddedStack
from mcp_tasks_aws.protocol.names import TERMINAL_STATUSES as TERMINAL
from support.mcp import PROTOCOL_VERSION, TASKS_EXTENSION

CAPABILITIES: dict[str, Any] = {
    "elicitation": {},
    "sampling": {},
    "extensions": {TASKS_EXTENSION: {}},
}
ANONYMOUS = "anonymous"

Handler = Callable[[dict[str, Any], Any], Any]

# Never let an environment proxy see loopback traffic.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def now_ms() -> int:
    return int(time.time() * 1000)


def jwt(sub: str) -> str:
    """An unsigned JWT with this subject (the embedded stack's authorizer reads it unverified)."""

    def b64(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    return f"{b64({'alg': 'none'})}.{b64({'sub': sub})}."


def jwt_principal(sub: str) -> str:
    """The principal `edge.apigw.principal_of` derives from `jwt(sub)` (no iss, no client)."""
    return f"jwt:|{sub}|"


def wait_until(predicate: Callable[[], Any], timeout: float = 5.0, interval: float = 0.03) -> Any:
    """Poll until `predicate()` is truthy; return its value, or fail at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            pytest.fail(f"condition not met within {timeout} s")
        time.sleep(interval)


# -- the embedded stack ----------------------------------------------------------------------


class WorkerDispatch:
    """The WorkerFunction as the state machine sees it: the real worker handler, unless a test
    routed a task (by id, or by its `label` argument) to another handler. Counts legs per task."""

    def __init__(self, stack: EmbeddedStack) -> None:
        self.stack = stack
        self.by_task: dict[str, Handler] = {}
        self.by_label: dict[str, Handler] = {}
        self.legs: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self, event: dict[str, Any], context: Any) -> Any:
        task_id = str(event.get("taskId"))
        with self._lock:
            self.legs[task_id] += 1
        handler = self.by_task.get(task_id)
        if handler is None and self.by_label:
            record = self.stack.worker_app.store.get(task_id)
            label = (record.arguments or {}).get("label") if record else None
            handler = self.by_label.get(str(label))
        return (handler or self.stack.worker_handler)(event, context)


class TaskClient:
    """JSON-RPC over HTTP to the embedded stack, with the 2026-07-28 envelope and headers."""

    def __init__(self, stack: EmbeddedStack, dispatch: WorkerDispatch) -> None:
        self.stack = stack
        self.dispatch = dispatch
        self._ids = 0
        self._lock = threading.Lock()

    # Handy handles on the stack's own adapters (the worker function's, same moto backends).
    @property
    def store(self) -> DynamoTaskStore:
        store = self.stack.worker_app.store
        assert isinstance(store, DynamoTaskStore)
        return store

    @property
    def runner(self) -> StepFunctionsRunner:
        runner = self.stack.worker_app.runner
        assert isinstance(runner, StepFunctionsRunner)
        return runner

    def body(self, method: str, params: dict[str, Any], rid: int | None = None) -> bytes:
        if rid is None:
            with self._lock:
                self._ids += 1
                rid = self._ids
        meta = {
            "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
            "io.modelcontextprotocol/clientCapabilities": CAPABILITIES,
        }
        message = {
            "jsonrpc": "2.0",
            "id": rid,
            "method": method,
            "params": {**params, "_meta": meta},
        }
        return json.dumps(message).encode()

    def headers(self, method: str, name: str | None, token: str | None) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": PROTOCOL_VERSION,
            "Mcp-Method": method,
        }
        if name is not None:
            headers["Mcp-Name"] = name
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        return headers

    def post(self, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        request = urllib.request.Request(self.stack.url, data=body, headers=headers, method="POST")
        try:
            with _OPENER.open(request, timeout=15) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            raw = error.read()
            return error.code, json.loads(raw) if raw else {}

    def rpc(
        self, method: str, params: dict[str, Any], *, token: str | None = None
    ) -> dict[str, Any]:
        """The JSON-RPC response message (result or error)."""
        name = params.get("name") if method == "tools/call" else params.get("taskId")
        _, message = self.post(self.body(method, params), self.headers(method, name, token))
        return message

    def result(self, method: str, params: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        message = self.rpc(method, params, **kwargs)
        assert "error" not in message, message
        result: dict[str, Any] = message["result"]
        return result

    # -- the Tasks extension --------------------------------------------------------------------

    def create(self, tool: str, arguments: dict[str, Any], **kwargs: Any) -> str:
        result = self.result("tools/call", {"name": tool, "arguments": arguments}, **kwargs)
        assert result["resultType"] == "task", result
        task_id: str = result["taskId"]
        return task_id

    def get(self, task_id: str, **kwargs: Any) -> dict[str, Any]:
        return self.result("tasks/get", {"taskId": task_id}, **kwargs)

    def update(self, task_id: str, responses: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        params = {"taskId": task_id, "inputResponses": responses}
        return self.rpc("tasks/update", params, **kwargs)

    def cancel(self, task_id: str, **kwargs: Any) -> dict[str, Any]:
        return self.rpc("tasks/cancel", {"taskId": task_id}, **kwargs)

    def wait_status(
        self,
        task_id: str,
        statuses: set[str] | frozenset[str],
        timeout: float = 6.0,
        token: str | None = None,
    ) -> dict[str, Any]:
        def reached() -> dict[str, Any] | None:
            task = self.get(task_id, token=token)
            return task if task["status"] in statuses else None

        task: dict[str, Any] = wait_until(reached, timeout)
        return task

    def wait_terminal(self, task_id: str, timeout: float = 6.0, **kwargs: Any) -> dict[str, Any]:
        return self.wait_status(task_id, TERMINAL, timeout, **kwargs)

    def wait_input(self, task_id: str, timeout: float = 6.0, **kwargs: Any) -> dict[str, Any]:
        return self.wait_status(task_id, {"input_required"}, timeout, **kwargs)

    def wait_held(self, task_id: str, timeout: float = 6.0, **kwargs: Any) -> dict[str, Any]:
        """Waiting for input with an execution's token attached (a task its direct leg parked
        shows input_required a moment before its execution holds it)."""
        task = self.wait_input(task_id, timeout, **kwargs)
        wait_until(lambda: (r := self.store.get(task_id)) and r.task_token, timeout)
        return task

    def execution(self, task_id: str) -> dict[str, Any]:
        sfn = boto3.client("stepfunctions", region_name=REGION)
        described: dict[str, Any] = sfn.describe_execution(
            executionArn=self.runner.execution_arn(task_id)
        )
        return described

    def executions_named(self, task_id: str) -> list[dict[str, Any]]:
        sfn = boto3.client("stepfunctions", region_name=REGION)
        found: list[dict[str, Any]] = []
        for page in sfn.get_paginator("list_executions").paginate(
            stateMachineArn=self.stack.aws.state_machine_arn
        ):
            found += [e for e in page["executions"] if e["name"] == task_id]
        return found


def elicit_answer(content: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": content}


PATHS = ("direct", "step_functions")


@contextlib.contextmanager
def on_path(stack: EmbeddedStack, path: str) -> Iterator[str]:
    """Create tasks on `path` for a while: `direct` (first legs run by an asynchronous invoke,
    as deployed) or `step_functions` (every leg in an execution, as for a tool that opts out)."""
    service = stack.api_app.tasks
    assert service is not None
    saved = service.direct_legs
    assert saved is not None, "the embedded stack should run first legs directly"
    service.direct_legs = saved if path == "direct" else None
    try:
        yield path
    finally:
        service.direct_legs = saved
