"""A call that must not be sent twice is sent once, and waits as long as its caller can (issue
26, items 1 and 2), against a real slow endpoint on 127.0.0.1.

`SlowAws` speaks just enough of Lambda's Invoke and Step Functions' JSON protocol, answering
each call after a delay and counting the calls it received. Our clients reach it through
`AWS_ENDPOINT_URL`, with every policy's timeouts scaled down by `Clients(time_scale=...)` so
the test takes seconds: the `REPEATABLE` read timeout (what every client had before: 10 s,
retried) becomes `OLD_READ_S`, and the targets answer after `SLOW_S`, past it.

- A declared Lambda target (inline, and `invocation: task` in a task's leg) and an Express
  run (StartSyncExecution) slower than that are invoked exactly once, and their result is
  used. Before the fix: three invocations, then ReadTimeoutError.
- A call that outlasts its deadline is reported, never resent: inline, the deadline answers
  an isError result saying the tool did not finish in time; in a leg, the task fails saying
  the target did not answer in time.
- A repeatable call that times out is still retried, as its row says (the test can fail both
  ways).
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from botocore.config import Config
from botocore.exceptions import ReadTimeoutError

from mcp_tasks_aws.app import App
from mcp_tasks_aws.aws.call_policies import REPEATABLE
from mcp_tasks_aws.aws.clients import Clients
from mcp_tasks_aws.aws.targets import NOT_ANSWERED_IN_TIME, AwsTargets
from mcp_tasks_aws.config import Settings
from mcp_tasks_aws.protocol.transport import HttpRequest
from mcp_tasks_aws.tasks.exceptions import TargetUnavailable
from mcp_tasks_aws.tasks.legs import LegRunner
from mcp_tasks_aws.tasks.memory import InMemoryTaskStore
from mcp_tasks_aws.tasks.model import TaskRecord
from mcp_tasks_aws.tasks.service import TaskService
from mcp_tasks_aws.tools.deadline import DeadlineExceeded, call_deadline, time_limit
from support.domain import ALICE, CAPABILITIES, QueuedLegs, RecordingRunner
from support.endpoints import endpoint_session, serving
from support.mcp import envelope
from support.targets import bound, tool, write

SCALE = 0.05
OLD_READ_S = REPEATABLE.read_timeout_s * SCALE * 2  # 10 s before the fix, scaled the same way
SLOW_S = OLD_READ_S + 0.4
FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:slow"
EXPRESS = "arn:aws:states:us-east-1:123456789012:stateMachine:quote"
# A target that never answers in time (its delay is cut short once the client is done).
NEVER_S = 30.0
_QUIET_S = 0.2


class SlowAws(ThreadingHTTPServer):
    """Lambda Invoke and Step Functions on 127.0.0.1: each answer after `delay_s[operation]`."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.delay_s: dict[str, float] = {}
        self.calls: Counter[str] = Counter()
        self.answered: Counter[str] = Counter()
        self.released = threading.Event()
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def count(self, operation: str) -> int:
        with self._lock:
            self.calls[operation] += 1
            return self.calls[operation]

    def _waiting(self) -> bool:
        return sum(self.answered.values()) < sum(self.calls.values())

    def settle(self) -> None:
        """Once the client is done: wait until every call received was answered.

        Every client here retries (or would resend) on its own thread, before its call returns;
        so once a quiet `_QUIET_S` has let any such copy arrive, a call still being delayed has
        nobody waiting for it, and it is answered at once instead of at the end of its delay."""
        if not self.released.is_set() and self._waiting():
            time.sleep(_QUIET_S)
            self.released.set()
        deadline = time.monotonic() + 10
        while self._waiting():
            assert time.monotonic() < deadline
            time.sleep(0.02)


class _Handler(BaseHTTPRequestHandler):
    server: SlowAws

    def log_message(self, *_: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        target = self.headers.get("x-amz-target") or ""
        operation = target.rpartition(".")[2] if target else "Invoke"
        n = self.server.count(operation)
        self.server.released.wait(self.server.delay_s.get(operation, 0.0))
        if operation == "Invoke":
            answer = {"ran": n, "event": json.loads(body or b"{}")}
        elif operation == "StartSyncExecution":
            output = json.dumps({"ran": n})
            answer = {"executionArn": f"{EXPRESS}:x", "startDate": 0, "stopDate": 0}
            answer |= {"status": "SUCCEEDED", "output": output}
        else:  # DescribeExecution
            answer = {"executionArn": f"{EXPRESS}:x", "stateMachineArn": EXPRESS}
            answer |= {"status": "RUNNING", "startDate": 0}
        raw = json.dumps(answer).encode()
        try:
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)
        except OSError:
            pass  # the client stopped waiting
        finally:
            self.server.answered[operation] += 1


def assert_sent_once(slow: SlowAws, operation: str) -> None:
    """Once every answer is out (or given up on): `operation` was received exactly once."""
    slow.settle()
    assert slow.calls[operation] == 1


@pytest.fixture
def slow(monkeypatch: pytest.MonkeyPatch) -> Iterator[SlowAws]:
    server = SlowAws()
    with serving(server, monkeypatch):
        try:
            yield server
        finally:
            server.settle()


@pytest.fixture
def clients(slow: SlowAws) -> Clients:
    # StartSyncExecution's endpoint is `sync-states...`: no such host here.
    config = Config(inject_host_prefix=False)
    return Clients(endpoint_session(), time_scale=SCALE, config=config)


def test_the_scaled_times_are_what_the_scenario_needs(clients: Clients) -> None:
    # The target answers after a repeatable call would have given up (and been resent).
    assert clients.read_timeout_s(REPEATABLE) < OLD_READ_S < SLOW_S


# -- sent once, and its answer used -----------------------------------------------------------


def test_a_slow_lambda_target_is_invoked_once_and_its_answer_used(
    slow: SlowAws, clients: Clients
) -> None:
    slow.delay_s["Invoke"] = SLOW_S
    invoked = AwsTargets(clients).invoke(FUNCTION, "live", b'{"text": "a b"}')
    assert json.loads(invoked.payload) == {"ran": 1, "event": {"text": "a b"}}
    assert_sent_once(slow, "Invoke")


def test_a_slow_express_run_is_started_once_and_its_output_used(
    slow: SlowAws, clients: Clients
) -> None:
    slow.delay_s["StartSyncExecution"] = SLOW_S
    ran = AwsTargets(clients).run_express(EXPRESS, "{}")
    assert (ran.status, ran.output) == ("SUCCEEDED", '{"ran": 1}')
    assert_sent_once(slow, "StartSyncExecution")


def inline_app(tmp_path: Path, clients: Clients) -> App:
    declaration = write(tmp_path, tool("count", {"kind": "lambda", "function": FUNCTION}))
    settings = Settings(tools_module=str(declaration), state_secret=b"s" * 32)
    return App(settings, clients=clients)


def call_inline(app: App, deadline_s: float) -> dict[str, Any]:
    """tools/call `count` through the endpoint, as the API function serves it (its deadline
    set from the Lambda context), on this (main) thread."""
    params = {"name": "count", "arguments": {"text": "a b"}, "_meta": envelope({})}
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-method": "tools/call",
        "mcp-name": "count",
        "mcp-protocol-version": params["_meta"]["io.modelcontextprotocol/protocolVersion"],
    }
    body = json.dumps(message).encode()
    deadline = time.monotonic() + deadline_s
    served = app.transport().handle(HttpRequest("POST", headers, body, deadline=deadline))
    answer: dict[str, Any] = json.loads(served.body)
    return answer


def test_an_inline_call_of_a_slow_target_uses_its_one_answer(
    slow: SlowAws, clients: Clients, tmp_path: Path
) -> None:
    slow.delay_s["Invoke"] = SLOW_S
    answer = call_inline(inline_app(tmp_path, clients), deadline_s=SLOW_S + 3)
    result = answer["result"]
    assert result.get("isError") is not True, result
    assert json.loads(result["content"][0]["text"]) == {"ran": 1, "event": {"text": "a b"}}
    assert_sent_once(slow, "Invoke")


def run_task_leg(tmp_path: Path, clients: Clients, leg_s: float) -> TaskRecord:
    """Create a task of an `invocation: task` Lambda tool and run its leg, which has `leg_s`
    left (what the worker sets: `handlers/worker.py`); the task as the leg left it."""
    target = {"kind": "lambda", "function": FUNCTION, "invocation": "task"}
    toolset = bound(write(tmp_path, tool("count", target)), AwsTargets(clients))  # type: ignore[arg-type]
    store, legs = InMemoryTaskStore(), QueuedLegs()
    service = TaskService(store, RecordingRunner(), direct_legs=legs)
    record = service.create(ALICE, toolset.tools["count"], {"text": "a b"}, CAPABILITIES)
    with call_deadline(time.monotonic() + leg_s):
        LegRunner(store, RecordingRunner(), toolset).run_direct(legs.queued[0])
    ended = store.get(record.task_id)
    assert ended is not None
    return ended


def test_a_task_leg_invokes_a_slow_target_once_and_completes_with_its_answer(
    slow: SlowAws, clients: Clients, tmp_path: Path
) -> None:
    slow.delay_s["Invoke"] = SLOW_S
    ended = run_task_leg(tmp_path, clients, leg_s=SLOW_S + 3)
    assert ended.status == "completed", ended
    assert_sent_once(slow, "Invoke")


# -- past the deadline: reported, never resent -------------------------------------------------


def test_an_inline_call_past_its_deadline_answers_is_error_and_is_not_resent(
    slow: SlowAws, clients: Clients, tmp_path: Path
) -> None:
    slow.delay_s["Invoke"] = NEVER_S
    started = time.monotonic()
    answer = call_inline(inline_app(tmp_path, clients), deadline_s=1.0)
    assert time.monotonic() - started < 2.0  # the deadline ended the wait, not the target
    result = answer["result"]
    assert result["isError"] is True
    assert "did not finish in time" in result["content"][0]["text"]
    assert_sent_once(slow, "Invoke")


def test_a_leg_past_its_end_fails_the_task_saying_so_and_is_not_resent(
    slow: SlowAws, clients: Clients, tmp_path: Path
) -> None:
    slow.delay_s["Invoke"] = NEVER_S
    ended = run_task_leg(tmp_path, clients, leg_s=1.0)
    assert ended.status == "failed", ended
    assert NOT_ANSWERED_IN_TIME in json.dumps(ended.error)
    assert_sent_once(slow, "Invoke")


def test_a_read_timeout_names_the_target_and_says_it_was_sent_once(
    slow: SlowAws, clients: Clients
) -> None:
    slow.delay_s["StartSyncExecution"] = NEVER_S
    with call_deadline(time.monotonic() + 0.8), pytest.raises(TargetUnavailable) as caught:
        AwsTargets(clients).run_express(EXPRESS, "{}")
    assert caught.value.code == "ReadTimeoutError"
    assert caught.value.message == (
        f"State machine {EXPRESS}: ReadTimeoutError ({NOT_ANSWERED_IN_TIME})"
    )
    assert_sent_once(slow, "StartSyncExecution")


def test_the_inline_deadline_stops_a_wait_on_this_thread(slow: SlowAws, clients: Clients) -> None:
    slow.delay_s["Invoke"] = NEVER_S
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded), time_limit(time.monotonic() + 0.6):
        AwsTargets(clients).invoke(FUNCTION, None, b"{}")
    assert time.monotonic() - started < 1.5
    assert_sent_once(slow, "Invoke")


# -- a repeatable call is still retried ---------------------------------------------------------


def test_a_repeatable_call_that_times_out_is_retried_as_its_row_says(
    slow: SlowAws, clients: Clients
) -> None:
    slow.delay_s["DescribeExecution"] = OLD_READ_S
    with pytest.raises(ReadTimeoutError):
        clients.get("stepfunctions").describe_execution(executionArn=f"{EXPRESS}:x")
    slow.settle()
    assert slow.calls["DescribeExecution"] == REPEATABLE.max_attempts
