"""AWS calls per MCP operation, on the embedded stack over HTTP, on both paths.

The embedded stack (moto in this process, the conformance tools) serves each request with the
real `handlers/api.py`. A botocore `before-call.*.*` hook on the API function's own DynamoDB,
Step Functions and Lambda clients records every API call it makes (one per call, whatever the
retries); the worker and the reconciler have clients of their own, which are not counted.
Requests are sent one at a time, so the calls recorded between sending a request and reading
its answer are the calls that request cost. Each operation is measured on the direct path
(first legs run by an asynchronous invoke of the worker, as deployed) and on the Step
Functions path (every leg in an execution, as for a tool with `direct=False`).

Targets: a task-creating tools/call <= 2, tasks/get 1, tasks/update <= 2 (the update that
resumes the task and a partial one, which answers one of two outstanding requests),
tasks/cancel <= 2 (a working task and one waiting for input). A MISS is reported, not failed;
an HTTP error or a task that does not reach the expected state fails the section.

The same operations from a 2025-11-25 session (that revision's tasks utility) have the same
targets, plus
tasks/list (1 Query on the owner index) and tasks/result; every request in such a session
also reads the session's state once (one GetItem), which the targets show as "+1". A task's
question reaches such a session on the `tasks/result` window, or, for a client that only polls,
on the `tasks/get` that finds the task waiting; either way it costs the task's read and the
question's hold for that poller (server/legacy/task_questions.py): = 2 on the window, <= 2
on tasks/get.

Managed (issue 20): a task whose work is a declared Standard machine's execution (the
approval workflow of examples/managed/tools.yaml), on its own stack: create 2 (PutItem,
StartExecution), get 1, the answer 2 (UpdateItem, SendTaskSuccess), cancel while the workflow
waits 3 (UpdateItem, StopExecution, SendTaskFailure). The AskFunction's and the reconciler's
calls (2 each per ask, report and end) are not the API's and are not counted here.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from common import PROJECT_ROOT
from legacy_client import LegacyHttpClient
from mcp_client import McpHttpClient, McpHttpError, task_id_of

SETTLE_TIMEOUT_S = 15.0


class CallCounter:
    """Records the operation name of every API call made through the hooked clients."""

    def __init__(self, clients: list[Any]) -> None:
        self._lock = threading.Lock()
        self._calls: list[str] = []
        for client in clients:
            client.meta.events.register("before-call.*.*", self._record)

    def _record(self, model: Any, **_: Any) -> None:
        with self._lock:
            self._calls.append(str(model.name))

    def measure(self, action: Callable[[], Any]) -> tuple[Any, list[str]]:
        """Run `action` (one HTTP request) and return its value and the calls it made."""
        with self._lock:
            start = len(self._calls)
        value = action()
        with self._lock:
            return value, self._calls[start:]


class Harness:
    """An embedded stack with the conformance tools, and what the sections need from it."""

    def __init__(self, stack: Any) -> None:
        from mcp_tasks_aws.local.aws import LAMBDAS

        self.stack = stack
        self.client = McpHttpClient(stack.url)
        app = stack.api_app
        try:
            clients = [app.store.client, app.runner.client]
            if app.direct_legs is not None:
                clients.append(app.direct_legs.client)
        except AttributeError as exc:
            raise McpHttpError(f"cannot find the API function's AWS clients: {exc}") from exc
        self.counter = CallCounter(clients)
        # Know when a worker leg is running, so the mock is never stopped under one.
        self._in_flight = 0
        self._lock = threading.Lock()
        name = stack.aws.function_name("WorkerFunction")
        inner = LAMBDAS.handlers[name]

        def tracked(event: dict[str, Any], context: Any) -> Any:
            with self._lock:
                self._in_flight += 1
            try:
                return inner(event, context)
            finally:
                with self._lock:
                    self._in_flight -= 1

        LAMBDAS.handlers[name] = tracked
        import boto3

        self.sfn = boto3.client("stepfunctions", region_name="us-east-1")

    def wait_held(self, task_id: str) -> None:
        """Wait until an execution's token is on the task (a task its direct leg parked shows
        input_required a moment before its execution attaches)."""
        self._wait_record(task_id, lambda record: bool(record.task_token), "no execution holds")

    def wait_asking(self, task_id: str) -> None:
        """Wait until the task waits on its token with questions outstanding, read from the
        store: no MCP request of the measured session sees the task first (a 2025-11-25
        `tasks/get` of a task in input_required carries its questions, and holds them)."""
        self._wait_record(task_id, lambda record: record.waiting_on_token, "nothing asks in")

    def _wait_record(self, task_id: str, ready: Callable[[Any], bool], failing: str) -> None:
        store = self.stack.worker_app.store
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        while not (record := store.get(task_id)) or not ready(record):
            if time.monotonic() > deadline:
                raise McpHttpError(f"{failing} task {task_id} after {SETTLE_TIMEOUT_S}s")
            time.sleep(0.01)

    def has_execution(self, task_id: str) -> bool:
        """Whether an execution named after the task exists (a direct leg that finished the
        task started none)."""
        found = self.sfn.list_executions(stateMachineArn=self.stack.aws.state_machine_arn)
        return any(e["name"] == task_id for e in found["executions"])

    def execution_arn(self, task_id: str) -> str:
        base = self.stack.aws.state_machine_arn.replace(":stateMachine:", ":execution:", 1)
        return f"{base}:{task_id}"

    def wait_execution_ended(self, task_id: str, timeout: float = SETTLE_TIMEOUT_S) -> str:
        deadline = time.monotonic() + timeout
        arn = self.execution_arn(task_id)
        while True:
            status = str(self.sfn.describe_execution(executionArn=arn)["status"])
            if status != "RUNNING":
                return status
            if time.monotonic() > deadline:
                raise McpHttpError(f"execution of {task_id} still RUNNING after {timeout}s")
            time.sleep(0.02)

    def settle(self, timeout: float = SETTLE_TIMEOUT_S) -> bool:
        """Wait until no worker leg runs and no execution is RUNNING."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                idle = self._in_flight == 0
            if idle:
                running = self.sfn.list_executions(
                    stateMachineArn=self.stack.aws.state_machine_arn, statusFilter="RUNNING"
                )["executions"]
                if not running:
                    return True
            time.sleep(0.05)
        return False


PATHS = {
    "direct": "direct path (first leg: asynchronous invoke)",
    "step_functions": "Step Functions path (every leg in an execution)",
}


@contextmanager
def embedded_stack(path: str = "direct") -> Iterator[Harness]:
    """Start the embedded stack (conformance tools) on a free loopback port, its first legs
    run directly (`direct`, as deployed) or in an execution (`step_functions`)."""
    from mcp_tasks_aws.local.stack import EmbeddedStack

    env = {"MCP_TASKS_TOOLS": "conformance"}
    if path == "step_functions":
        env["MCP_TASKS_WORKER_FUNCTION"] = ""  # no direct legs: every task on Step Functions
    with EmbeddedStack(host="127.0.0.1", env=env) as stack:
        harness = Harness(stack)
        try:
            yield harness
        finally:
            if not harness.settle():
                print("warning: the stack was still busy when stopped")


@dataclass
class Row:
    operation: str
    calls: list[str]
    target: int
    exact: bool = False
    session_reads: int = 0
    """Calls a 2025-11-25 session adds to every request (its state: one GetItem)."""

    @property
    def verdict(self) -> str:
        allowed = self.target + self.session_reads
        ok = len(self.calls) == allowed if self.exact else len(self.calls) <= allowed
        return "PASS" if ok else "MISS"

    @property
    def target_text(self) -> str:
        extra = f"+{self.session_reads}" if self.session_reads else ""
        return f"= {self.target}{extra}" if self.exact else f"<= {self.target}{extra}"


def _answer(keys: list[str]) -> dict[str, Any]:
    return {key: {"action": "accept", "content": {"name": "Ada", "confirm": True}} for key in keys}


def measure(h: Harness) -> list[Row]:
    client, counter = h.client, h.counter
    rows: list[Row] = []

    # tools/call that creates a task, then tasks/get while working and once completed.
    created, calls = counter.measure(
        lambda: client.call_tool("slow_compute", {"seconds": 0, "label": "calls"})
    )
    rows.append(Row("tools/call (creates a task)", calls, 2))
    task_id = task_id_of(created)
    _, calls = counter.measure(lambda: client.get_task(task_id))
    rows.append(Row("tasks/get (just created)", calls, 1, exact=True))
    done = client.wait_for_task(task_id, {"completed"})
    if "result" not in done:
        raise McpHttpError(f"completed task without a result: {done}")
    _, calls = counter.measure(lambda: client.get_task(task_id))
    rows.append(Row("tasks/get (completed, result)", calls, 1, exact=True))

    # tasks/update: multi_input asks two things at once; answer one, then the other.
    task_id = task_id_of(client.call_tool("multi_input", {}))
    waiting = client.wait_for_task(task_id, {"input_required"}, also="inputRequests")
    keys = sorted(waiting["inputRequests"])
    if len(keys) != 2:
        raise McpHttpError(f"multi_input should ask two things: {waiting}")
    h.wait_held(task_id)  # answered as a person would: once the execution waits on its token
    _, calls = counter.measure(lambda: client.get_task(task_id))
    rows.append(Row("tasks/get (input_required)", calls, 1, exact=True))
    update = {"taskId": task_id}
    _, calls = counter.measure(
        lambda: client.request("tasks/update", {**update, "inputResponses": _answer(keys[:1])})
    )
    rows.append(Row("tasks/update (partial: 1 of 2)", calls, 2))
    _, calls = counter.measure(
        lambda: client.request("tasks/update", {**update, "inputResponses": _answer(keys[1:])})
    )
    rows.append(Row("tasks/update (resumes the task)", calls, 2))
    client.wait_for_task(task_id, {"completed"})

    # tasks/cancel of a working task (its worker is running the tool).
    task_id = task_id_of(client.call_tool("slow_compute", {"seconds": 2, "label": "cancel-me"}))
    client.wait_for_task(task_id, {"working"}, also="statusMessage")
    _, calls = counter.measure(lambda: client.request("tasks/cancel", {"taskId": task_id}))
    rows.append(Row("tasks/cancel (working)", calls, 2))
    client.wait_for_task(task_id, {"cancelled"})

    # tasks/cancel of a task waiting for input (no compute running).
    task_id = task_id_of(client.call_tool("confirm_delete", {"filename": "notes.txt"}))
    client.wait_for_task(task_id, {"input_required"}, also="inputRequests")
    h.wait_held(task_id)
    _, calls = counter.measure(lambda: client.request("tasks/cancel", {"taskId": task_id}))
    rows.append(Row("tasks/cancel (input_required)", calls, 2))
    client.wait_for_task(task_id, {"cancelled"})
    return rows


def measure_legacy(h: Harness) -> list[Row]:
    """The same operations from a 2025-11-25 session (each request also reads the session)."""
    client, counter = LegacyHttpClient(h.client.url), h.counter
    rows: list[Row] = []

    def row(operation: str, calls: list[str], target: int, exact: bool = False) -> None:
        rows.append(Row(f"2025-11-25 {operation}", calls, target, exact, session_reads=1))

    _, calls = counter.measure(client.initialize)
    rows.append(Row("2025-11-25 initialize (a sealed token)", calls, 0, exact=True))
    client.initialized()
    args = {"seconds": 0, "label": "legacy-calls"}
    task_id, calls = counter.measure(lambda: client.create_task("slow_compute", args))
    # + the session's own list of its tasks (one UpdateItem): a 2025-11-25 tasks/list shows
    # only the session's tasks, since without auth every caller is one principal (19.18).
    row("tools/call with params.task (and the session's task list)", calls, 3)
    _, calls = counter.measure(lambda: client.get_task(task_id))
    row("tasks/get", calls, 1, exact=True)
    client.wait_for_task(task_id, {"completed"})
    _, calls = counter.measure(lambda: client.request("tasks/result", {"taskId": task_id}))
    row("tasks/result (completed)", calls, 1, exact=True)
    _, calls = counter.measure(lambda: client.request("tasks/list"))
    # The session's task ids (one GetItem), then those tasks (one BatchGetItem): no Query.
    row("tasks/list (the session's tasks)", calls, 2, exact=True)

    # A task's question: the tasks/result window that delivers it, then the answer. The task
    # is seen waiting in the store, not by polling tasks/get, which would carry the question
    # itself (below) and hold it from this window.
    task_id = client.create_task("confirm_delete", {"filename": "notes.txt"})
    h.wait_asking(task_id)
    asked, calls = counter.measure(lambda: client.messages("tasks/result", {"taskId": task_id}))
    # The task, and the question held for this session (one conditional write) before it is
    # sent, so no other poller is asked meanwhile (server/legacy/task_questions.py).
    row("tasks/result (window with a question)", calls, 2, exact=True)
    answer = {"action": "accept", "content": {"confirm": True}}
    status, calls = counter.measure(lambda: client.answer(one_question(asked), answer))
    if status != 202:
        raise McpHttpError(f"the answer was not accepted: HTTP {status}")
    row("answer to a task's question (resumes)", calls, 2)
    client.wait_for_task(task_id, {"completed"})

    # A client that only polls tasks/get (the Inspector, ext-tasks' 2025-11-25 requester):
    # the tasks/get that finds the task waiting carries its question on SSE (and holds it for
    # this poller: the task, the session, the hold).
    task_id = client.create_task("confirm_delete", {"filename": "notes.txt"})
    h.wait_asking(task_id)
    asked, calls = counter.measure(lambda: client.messages("tasks/get", {"taskId": task_id}))
    row("tasks/get (input_required, carries the question)", calls, 2)
    status = client.answer(one_question(asked), answer)
    if status != 202:
        raise McpHttpError(f"the answer was not accepted: HTTP {status}")
    client.wait_for_task(task_id, {"completed"})

    task_id = client.create_task("slow_compute", {"seconds": 2, "label": "legacy-cancel"})
    _, calls = counter.measure(lambda: client.request("tasks/cancel", {"taskId": task_id}))
    row("tasks/cancel (working)", calls, 2)
    return rows


def one_question(messages: list[dict[str, Any]]) -> Any:
    """The id of the one server->client request among a stream's `messages`."""
    questions = [m for m in messages if "method" in m and "id" in m]
    if len(questions) != 1:
        raise McpHttpError(f"confirm_delete should ask one question on the stream: {messages}")
    return questions[0]["id"]


MANAGED_EXAMPLE = PROJECT_ROOT / "examples" / "managed" / "tools.yaml"
MANAGED_LABEL = "managed: a declared Standard machine's execution is the task (examples/managed)"


def measure_managed() -> list[Row]:
    """The approval workflow's task, operation by operation (the module docstring's targets)."""
    from mcp_tasks_aws.local.stack import EmbeddedStack

    # The declaration's local stand-ins (examples.managed.functions) import from the root.
    if str(PROJECT_ROOT) not in sys.path:
        sys.path.insert(0, str(PROJECT_ROOT))
    rows: list[Row] = []
    with EmbeddedStack(host="127.0.0.1", env={"MCP_TASKS_TOOLS": str(MANAGED_EXAMPLE)}) as stack:
        app = stack.api_app
        # The task store and the workflows adapter (its Step Functions client is the runner's).
        counter = CallCounter([app.store.client, app.workflows.client])
        client = McpHttpClient(stack.url)
        arguments = {"version": "v1.0", "environment": "staging", "stepSeconds": 0}

        created, calls = counter.measure(lambda: client.call_tool("deploy", arguments))
        rows.append(Row("tools/call (starts the execution)", calls, 2, exact=True))
        task_id = task_id_of(created)
        _, calls = counter.measure(lambda: client.get_task(task_id))
        rows.append(Row("tasks/get (working)", calls, 1, exact=True))
        asked = client.wait_for_task(task_id, {"input_required"}, also="inputRequests")
        _, calls = counter.measure(lambda: client.get_task(task_id))
        rows.append(Row("tasks/get (the workflow's question)", calls, 1, exact=True))
        answer = {"action": "accept", "content": {"approve": True, "approver": "bench"}}
        responses = {key: answer for key in asked["inputRequests"]}
        update = {"taskId": task_id, "inputResponses": responses}
        _, calls = counter.measure(lambda: client.request("tasks/update", update))
        rows.append(Row("tasks/update (resumes the waiting state)", calls, 2, exact=True))
        client.wait_for_task(task_id, {"completed"})
        _, calls = counter.measure(lambda: client.get_task(task_id))
        rows.append(Row("tasks/get (completed, the output)", calls, 1, exact=True))

        waiting = task_id_of(client.call_tool("deploy", arguments))
        client.wait_for_task(waiting, {"input_required"}, also="inputRequests")
        _, calls = counter.measure(lambda: client.request("tasks/cancel", {"taskId": waiting}))
        rows.append(Row("tasks/cancel (the workflow waits)", calls, 3, exact=True))
        client.wait_for_task(waiting, {"cancelled"})
    return rows


def main(args: argparse.Namespace) -> int:
    measured: dict[str, list[Row]] = {}
    try:
        for path in PATHS:
            with embedded_stack(path) as harness:
                measured[path] = measure(harness)
                if path == "direct":  # as deployed: 2025-11-25 sessions' tasks too
                    measured[path] += measure_legacy(harness)
        measured["managed"] = measure_managed()
    except McpHttpError as exc:
        print(f"FAILED {exc}")
        return 1
    print("AWS API calls made by the API function while serving one request (embedded stack)")
    for path, rows in measured.items():
        print(f"-- {PATHS.get(path, MANAGED_LABEL)}")
        width = max(len(row.operation) for row in rows) + 2
        print(f"{'operation':<{width}}{'calls':>5}  {'target':<7} {'verdict':<8}names")
        for row in rows:
            names = ", ".join(row.calls) or "-"
            print(
                f"{row.operation:<{width}}{len(row.calls):>5}  {row.target_text:<7} "
                f"{row.verdict:<8}{names}"
            )
    return 0
