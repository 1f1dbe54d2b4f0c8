"""What the managed-target tests share: declarations written on the fly, a fake of the calls
declared tools make (`targets.ports.TargetCalls`) and of the workflows port, both recording
what they were asked, `Flow`: a declared Standard machine's tool over the in-memory task
domain (service, doors, worker), and `Upstream`: a real HTTP server on 127.0.0.1 recording
what it read off the socket."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from mcp_tasks_aws.targets.ports import HttpAnswer, HttpRequest, Invoked, SyncRun
from mcp_tasks_aws.targets.tools import bindings_of, declared_tools
from mcp_tasks_aws.tasks.exceptions import TargetUnavailable
from mcp_tasks_aws.tasks.legs import LegRunner
from mcp_tasks_aws.tasks.memory import InMemoryTaskStore
from mcp_tasks_aws.tasks.model import TaskRecord
from mcp_tasks_aws.tasks.reconcile import settle_workflow_end
from mcp_tasks_aws.tasks.service import TaskService
from mcp_tasks_aws.tasks.workflow import CAPABILITY_KEY, DoorKeys, WorkflowDoors
from mcp_tasks_aws.tools.registry import ToolSet
from support.clock import Clock
from support.domain import ALICE, CAPABILITIES, START_MS, RecordingRunner, ResultBucket

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "managed" / "tools.yaml"
MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:approve"
SECRET_ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:api-key-AbCdEf"
OBJECT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
DONE = {"type": "object", "properties": {"done": {"type": "boolean"}}, "required": ["done"]}
DOOR_SECRET = b"d" * 32
"""The state secret a Flow's capabilities are sealed with."""
QUESTION = {
    "method": "elicitation/create",
    "params": {"mode": "form", "message": "Deploy?", "requestedSchema": DONE},
}


def tool(name: str, target: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """One tool entry of a declaration."""
    return {
        "name": name,
        "description": f"The {name} tool.",
        "inputSchema": OBJECT,
        "target": target,
        **fields,
    }


def write(folder: Path, *tools: dict[str, Any], name: str = "tools.yaml", **top: Any) -> Path:
    """A declaration file in `folder` holding `tools` (and other top-level keys)."""
    path = folder / name
    document = {"version": 1, "tools": list(tools), **top}
    text = json.dumps(document) if name.endswith(".json") else yaml.safe_dump(document)
    path.write_text(text)
    return path


@dataclass
class FakeCalls:
    """TargetCalls that answer from tables and record each call."""

    functions: dict[str, Callable[[Any], Any]] = field(default_factory=dict)
    express: dict[str, Callable[[Any], SyncRun]] = field(default_factory=dict)
    http: Callable[[HttpRequest], HttpAnswer] | None = None
    secrets: dict[str, str] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)
    """Target (function name, machine ARN, host) -> the AWS error code its call raises."""
    calls: list[tuple[str, Any]] = field(default_factory=list)

    def invoke(self, function: str, qualifier: str | None, payload: bytes) -> Invoked:
        self.calls.append(("invoke", (function, qualifier, json.loads(payload))))
        if function in self.unavailable:
            raise TargetUnavailable(f"Lambda function {function}", self.unavailable[function])
        try:
            value = self.functions[function](json.loads(payload))
        except Exception as exc:
            error = {"errorType": type(exc).__name__, "errorMessage": str(exc)}
            return Invoked(json.dumps(error).encode(), "Unhandled")
        return Invoked(json.dumps(value).encode())

    def run_express(self, machine_arn: str, payload: str) -> SyncRun:
        self.calls.append(("run_express", (machine_arn, json.loads(payload))))
        if machine_arn in self.unavailable:
            raise TargetUnavailable(f"State machine {machine_arn}", self.unavailable[machine_arn])
        return self.express[machine_arn](json.loads(payload))

    def secret(self, secret_arn: str) -> str:
        self.calls.append(("secret", secret_arn))
        return self.secrets[secret_arn]

    def sign(self, request: HttpRequest, service: str, region: str) -> HttpRequest:
        self.calls.append(("sign", (service, region)))
        signed = f"AWS4-HMAC-SHA256 Credential=test/{region}/{service}"
        return request._replace(headers={**request.headers, "authorization": signed})

    def fetch(self, request: HttpRequest) -> HttpAnswer:
        self.calls.append(("fetch", request))
        assert self.http is not None, "no HTTP answers set"
        return self.http(request)


def bound(path: Path | str, calls: FakeCalls) -> ToolSet:
    """The declaration's tool set with its calls going to `calls`."""
    toolset = declared_tools(path)
    for binding in bindings_of(toolset):
        binding.bind(calls)
    return toolset


def json_answer(status: int, body: Any) -> HttpAnswer:
    return HttpAnswer(status, {"Content-Type": "application/json"}, json.dumps(body).encode())


@dataclass
class RecordingWorkflows:
    """`tasks.ports.Workflows` that records each call; a token works once, as on AWS, and
    executions exist once started (`describe`)."""

    calls: list[tuple[str, Any]] = field(default_factory=list)
    used_tokens: set[str] = field(default_factory=set)
    outputs: dict[str, str] = field(default_factory=dict)
    unavailable: str | None = None
    """The AWS error code the next start raises (TargetUnavailable), if any."""
    failing: set[str] = field(default_factory=set)
    """Calls that raise the next time they are made, before they land (an AWS fault)."""
    script: dict[str, list[str]] = field(default_factory=dict)
    """Call -> how its next calls go, in turn: `fail` (raises before it lands), `unheard`
    (lands, then raises: its answer was lost) or `ok`; then `ok`."""
    executions: dict[str, str] = field(default_factory=dict)
    """Execution ARN -> status, for every execution started."""
    dead_tokens: set[str] = field(default_factory=set)
    """Tokens of waiting states that timed out: they answer nothing any more."""

    def _record(self, name: str, subject: Any) -> str:
        self.calls.append((name, subject))
        if name in self.failing:
            self.failing.discard(name)
            raise RuntimeError(f"injected {name} fault")
        outcome = self.script[name].pop(0) if self.script.get(name) else "ok"
        if outcome == "fail":
            raise RuntimeError(f"injected {name} fault")
        return outcome

    def start(self, machine_arn: str, name: str, payload: dict[str, Any]) -> str:
        outcome = self._record("start", (machine_arn, name, payload))
        if self.unavailable is not None:
            raise TargetUnavailable(f"State machine {machine_arn}", self.unavailable)
        arn = machine_arn.replace(":stateMachine:", ":execution:") + f":{name}"
        self.executions.setdefault(arn, "RUNNING")  # a second start of it is a no-op
        if outcome == "unheard":
            raise TimeoutError("start landed, but its answer was lost (injected)")
        return arn

    def describe(self, execution_arn: str) -> str | None:
        self._record("describe", execution_arn)
        return self.executions.get(execution_arn)

    def still_waiting(self, task_token: str) -> bool:
        self._record("still_waiting", task_token)
        return task_token not in self.dead_tokens and task_token not in self.used_tokens

    def stop(self, execution_arn: str) -> None:
        self._record("stop", execution_arn)

    def _use(self, token: str) -> bool:
        if token in self.used_tokens or token in self.dead_tokens:
            return False
        self.used_tokens.add(token)
        return True

    def answer(self, task_token: str, output: Any) -> bool:
        self._record("answer", (task_token, output))
        return self._use(task_token)

    def refuse(self, task_token: str, error: str, cause: str) -> bool:
        self._record("refuse", (task_token, error))
        return self._use(task_token)

    def output(self, execution_arn: str) -> str | None:
        self._record("output", execution_arn)
        return self.outputs.get(execution_arn)

    def named(self, name: str) -> list[Any]:
        return [subject for call, subject in self.calls if call == name]


@dataclass
class Flow:
    """A declared Standard machine's tool, the task service and doors around it."""

    toolset: ToolSet
    clock: Clock = field(default_factory=lambda: Clock(START_MS))
    runner: RecordingRunner = field(default_factory=RecordingRunner)
    workflows: RecordingWorkflows = field(default_factory=RecordingWorkflows)
    results: ResultBucket = field(default_factory=ResultBucket)

    def __post_init__(self) -> None:
        self.store = InMemoryTaskStore(clock=self.clock)
        self.service = TaskService(
            self.store,
            self.runner,
            workflows=self.workflows,
            results=self.results,
            clock=self.clock,
        )
        self.keys = DoorKeys(DOOR_SECRET, clock=self.clock)
        self.service.door_keys = self.keys
        self.doors = WorkflowDoors(self.store, self.keys, self.workflows, clock=self.clock)
        self.legs = LegRunner(
            self.store,
            self.runner,
            self.toolset,
            results=self.results,
            clock=self.clock,
        )

    def create(self, arguments: dict[str, Any] | None = None, **kwargs: Any) -> TaskRecord:
        spec = self.toolset.tools["deploy"]
        capabilities = kwargs.pop("capabilities", CAPABILITIES)
        return self.service.create(ALICE, spec, arguments or {"text": "v1"}, capabilities)

    def record(self, task_id: str) -> TaskRecord:
        record = self.store.get(task_id)
        assert record is not None
        return record

    def capability(self, record: TaskRecord) -> str:
        """The capability the task's start put in its execution's input."""
        for _, name, payload in self.workflows.named("start"):
            if name == record.task_id:
                capability: str = payload[CAPABILITY_KEY]
                return capability
        raise AssertionError(f"task {record.task_id} was never started")

    def ask(
        self, record: TaskRecord, token: str = "token-1", request: dict[str, Any] | None = None
    ) -> str:
        """The task's own execution asks (its ARN, its capability)."""
        assert record.execution_arn is not None
        return self.doors.ask(
            record.task_id,
            record.execution_arn,
            token,
            request or QUESTION,
            self.capability(record),
        )

    def report(self, record: TaskRecord, message: str, *numbers: Any) -> bool:
        """The task's own execution reports (`numbers`: progress, total)."""
        assert record.execution_arn is not None
        capability = self.capability(record)
        arn = record.execution_arn
        return self.doors.report(record.task_id, arn, message, *numbers, capability=capability)

    def settle(self, record: TaskRecord, status: str, **details: Any) -> str:
        assert record.execution_arn is not None
        return self.settle_run(record.task_id, record.execution_arn, status, **details)

    def settle_run(self, task_id: str, execution_arn: str, status: str, **details: Any) -> str:
        """The reconciler on the status-change event of execution `execution_arn`."""
        return settle_workflow_end(
            self.legs, self.workflows, task_id, execution_arn, status, **details
        )


def flow_of(folder: Path, **target: Any) -> Flow:
    """A Flow whose tool `deploy` runs the Standard machine MACHINE (`Rejected` a tool error)."""
    outputs = target.pop("outputSchema", None)
    spec = {"kind": "stateMachine", "arn": MACHINE, "toolErrors": ["Rejected"], **target}
    fields = {"outputSchema": outputs} if outputs else {}
    return Flow(declared_tools(write(folder, tool("deploy", spec, **fields))))


# -- a real upstream on 127.0.0.1 ----------------------------------------------------------------


@dataclass
class Received:
    """One request as the upstream read it off the socket."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


Answer = tuple[int, dict[str, str], Iterable[bytes]]


@dataclass
class Upstream:
    """A real HTTP server on 127.0.0.1 (a free port) that records every request it receives,
    raw path included, and answers with `answer(received)`: a status, headers, and the body as
    chunks written one after the other (HTTP/1.0: the body ends when the connection closes, so
    a generator streams as long as the reader reads). `sent` counts the body bytes the socket
    took and `cut_off` whether the reader went away before the last chunk."""

    answer: Callable[[Received], Answer] = lambda received: (200, {}, [b"{}"])
    received: list[Received] = field(default_factory=list)
    sent: int = 0
    cut_off: bool = False

    def __post_init__(self) -> None:
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                received = Received(
                    self.command,
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    self.rfile.read(length),
                )
                upstream.received.append(received)
                status, headers, chunks = upstream.answer(received)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                try:
                    for chunk in chunks:
                        self.wfile.write(chunk)
                        upstream.sent += len(chunk)
                except (BrokenPipeError, ConnectionResetError):
                    upstream.cut_off = True

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _serve

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    @property
    def paths(self) -> list[str]:
        return [received.path for received in self.received]


def sending_for_real(calls: FakeCalls) -> FakeCalls:
    """`calls` whose HTTP requests go out through `targets.http.send` (the network)."""
    from mcp_tasks_aws.targets.http import send

    calls.http = send
    return calls
