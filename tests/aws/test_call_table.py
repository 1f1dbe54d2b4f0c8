"""The AWS call table (`aws.call_policies`, issue 26 item 2): the clients are built from it,
every call goes through the client its row names, every call the code makes has a row, and
docs/limits.md shows the same table.

- Built from it: for each row, a call made through `Clients.get(service)` reaches a botocore
  client whose `meta.config` has the row's connect and read timeouts, retry mode and attempts
  (Invoke's two rows by `InvocationType`).
- The deadline: a `ONCE` call's read timeout is what its caller has left (botocore's
  per-request `read_timeout`), the policy's ceiling without a deadline.
- Every call has a row: read from the adapters' source (every client method they call), and
  recorded while the embedded stack runs a task through the direct path with a question and
  every kind of declared target; a call without a row cannot even be made through our
  clients (so the fault tests, which run the 2025-11-25 session store, would fail too).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from botocore.awsrequest import AWSResponse
from botocore.client import BaseClient

from aws.test_trimmed_models import ADAPTERS, SERVICE_OF, client_calls, fetched_client_calls
from mcp_tasks_aws.aws import call_policies
from mcp_tasks_aws.aws.call_policies import (
    CALLS,
    ONCE,
    REPEATABLE,
    VARIANT_PARAMETER,
    Call,
    method_name,
    operation_of,
)
from mcp_tasks_aws.aws.clients import Clients
from mcp_tasks_aws.local.stack import EmbeddedStack
from mcp_tasks_aws.tools.deadline import call_deadline, time_limit
from support.tasks import TaskClient, WorkerDispatch

ROOT = Path(__file__).resolve().parents[2]
LIMITS = ROOT / "docs" / "limits.md"


def session() -> botocore.session.Session:
    made = botocore.session.get_session()
    made.set_config_variable("region", "us-east-1")
    made.set_credentials("AKIDEXAMPLE", "secret")
    return made


def row_id(call: Call) -> str:
    return f"{call.service}:{call.operation}" + (f":{call.variant}" if call.variant else "")


def params_of(call: Call) -> dict[str, Any]:
    chooser = VARIANT_PARAMETER.get((call.service, call.operation))
    return {chooser[0]: call.variant} if chooser else {}


@contextmanager
def answered_here() -> Iterator[list[tuple[Any, str, dict[str, Any]]]]:
    """Every call reaching a botocore client in the block, answered `{}` (nothing sent)."""
    sent: list[tuple[Any, str, dict[str, Any]]] = []

    def answer(client: Any, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        sent.append((client, operation, params))
        return {}

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(BaseClient, "_make_api_call", answer)
        yield sent


# -- the clients are built from the table -----------------------------------------------------


@pytest.mark.parametrize("call", CALLS, ids=row_id)
def test_each_call_goes_through_a_client_configured_as_its_row_says(call: Call) -> None:
    clients = Clients(session())
    with answered_here() as sent:
        getattr(clients.get(call.service), method_name(call.operation))(**params_of(call))
    ((client, operation, _),) = sent
    assert operation == call.operation
    assert client.meta.method_to_api_mapping[method_name(call.operation)] == call.operation
    config = client.meta.config
    policy = call.policy
    assert config.connect_timeout == policy.connect_timeout_s
    assert config.read_timeout == policy.read_timeout_s
    assert config.retries == {"mode": policy.retry_mode, "total_max_attempts": policy.max_attempts}


def test_the_calls_that_must_not_be_resent_are_sent_once() -> None:
    once = {row_id(call) for call in CALLS if call.policy.max_attempts == 1}
    assert once == {"lambda:Invoke:RequestResponse", "stepfunctions:StartSyncExecution"}
    assert all(call.policy is ONCE for call in CALLS if row_id(call) in once)


def test_one_client_per_service_and_policy_and_an_invoke_by_its_type() -> None:
    clients = Clients(session())
    with answered_here() as sent:
        calls = clients.get("lambda")
        calls.invoke(FunctionName="f", InvocationType="Event", Payload=b"{}")
        calls.invoke(FunctionName="f", Payload=b"{}")  # RequestResponse, Lambda's default
        calls.invoke(FunctionName="f", InvocationType="RequestResponse", Payload=b"{}")
    queued, waited, waited_again = (client for client, _, _ in sent)
    assert waited is waited_again is not queued
    assert queued is clients.client("lambda", REPEATABLE)
    assert waited is clients.client("lambda", ONCE)


def test_a_call_without_a_row_cannot_be_made() -> None:
    # S3's client has botocore's whole model: DeleteObject exists, but has no row.
    with pytest.raises(AttributeError, match=r"s3\.delete_object is not in aws\.call_policies"):
        Clients(session()).get("s3").delete_object(Bucket="b", Key="k")
    with pytest.raises(KeyError):
        Clients(session()).get("lambda").invoke(FunctionName="f", InvocationType="DryRun")


# -- a ONCE call waits as long as its caller can ----------------------------------------------


def read_timeout_sent(clients: Clients) -> float:
    """The read timeout botocore sends an Invoke (RequestResponse) with."""
    client = clients.client("lambda", ONCE)
    seen: list[float] = []

    def answer(context: dict[str, Any], **_: Any) -> Any:
        seen.append(context.get("read_timeout", client.meta.config.read_timeout))
        return AWSResponse("https://lambda", 200, {}, None), {}

    # After ours, on the same event (a more specific one would be called first).
    client.meta.events.register_last("before-call.lambda", answer)
    try:
        clients.get("lambda").invoke(FunctionName="f", Payload=b"{}")
    finally:
        client.meta.events.unregister("before-call.lambda", answer)
    (timeout,) = seen
    return timeout


def test_a_once_calls_read_timeout_is_the_time_its_caller_has_left() -> None:
    clients = Clients(session())
    assert read_timeout_sent(clients) == ONCE.read_timeout_s  # no deadline: the ceiling
    with call_deadline(time.monotonic() + 12):  # a task leg's end
        assert 11 < read_timeout_sent(clients) <= 12
    # Inline: the run's deadline stops the wait; the read timeout comes a moment later.
    with time_limit(time.monotonic() + 5):
        assert 5 < read_timeout_sent(clients) <= 6
    with call_deadline(time.monotonic() - 1):  # nothing left: a short wait, not none
        assert read_timeout_sent(clients) == pytest.approx(0.5)
    with call_deadline(time.monotonic() + 5000):  # never past the ceiling
        assert read_timeout_sent(clients) == ONCE.read_timeout_s


def test_a_repeatable_call_keeps_its_clients_read_timeout() -> None:
    clients = Clients(session())
    client = clients.client("dynamodb", REPEATABLE)
    seen: list[Any] = []

    def answer(context: dict[str, Any], **_: Any) -> Any:
        seen.append(context.get("read_timeout"))
        return AWSResponse("https://dynamodb", 200, {}, None), {}

    client.meta.events.register_last("before-call.dynamodb", answer)
    with call_deadline(time.monotonic() + 12):
        clients.get("dynamodb").get_item(TableName="t", Key={"taskId": {"S": "x"}})
    assert seen == [None]


def test_the_worker_gives_a_leg_its_end_as_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    import handlers.worker as worker

    from mcp_tasks_aws.local.apigw_emulator import LocalLambdaContext
    from mcp_tasks_aws.tools.deadline import seconds_left

    class Legs:
        left: list[float | None] = []

        def run_direct(self, task_id: str) -> str:
            self.left.append(seconds_left())
            return "done"

    class App:
        prime = after_restore = None

        def leg_runner(self) -> Legs:
            return Legs()

    monkeypatch.setattr(worker, "on_snapshot", lambda *_: None)
    monkeypatch.setattr(worker, "metrics", worker.Metrics(namespace="Test", service="test"))
    handler = worker.make_handler(App())  # type: ignore[arg-type]
    handler({"taskId": "t" * 32}, LocalLambdaContext(timeout_s=60))
    ((left,),) = [Legs.left]
    assert left is not None
    assert 60 - worker.LEG_MARGIN_S - 1 < left <= 60 - worker.LEG_MARGIN_S


# -- every call has a row ---------------------------------------------------------------------


def test_every_client_call_in_the_adapters_has_a_row() -> None:
    calls = {(SERVICE_OF[p.name], m) for p in ADAPTERS.glob("*.py") for m in client_calls(p)}
    calls |= {call for p in ADAPTERS.glob("*.py") for call in fetched_client_calls(p)}
    calls = {(service, method) for service, method in calls if method not in ("meta", "close")}
    assert ("lambda", "invoke") in calls
    assert ("dynamodb", "put_item") in calls
    missing = sorted(c for c in calls if operation_of(*c) is None)
    assert missing == [], f"add rows for {missing} to aws.call_policies.CALLS"


class CallRecorder:
    """Every call made through any `Clients` while installed: (service, operation, variant)."""

    def __init__(self) -> None:
        self.ours: set[int] = set()
        self.calls: set[tuple[str, str, str | None]] = set()
        self._lock = threading.Lock()

    @contextmanager
    def installed(self) -> Iterator[CallRecorder]:
        create, make_call = Clients._create, BaseClient._make_api_call
        recorder = self

        def created(clients: Clients, service: str, policy: Any) -> Any:
            client = create(clients, service, policy)
            with recorder._lock:
                recorder.ours.add(id(client))
            return client

        def called(client: Any, operation: str, params: dict[str, Any]) -> Any:
            if id(client) in recorder.ours:
                service = client.meta.service_model.service_name
                chooser = VARIANT_PARAMETER.get((service, operation))
                variant = str(params.get(*chooser)) if chooser else None
                with recorder._lock:
                    recorder.calls.add((service, operation, variant))
            return make_call(client, operation, params)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(Clients, "_create", created)
            patch.setattr(BaseClient, "_make_api_call", called)
            yield self


def assert_in_the_table(calls: set[tuple[str, str, str | None]]) -> None:
    rows = {(call.service, call.operation, call.variant) for call in CALLS}
    assert calls - rows == set()


@contextmanager
def recorded(tools: str) -> Iterator[tuple[TaskClient, CallRecorder]]:
    """An embedded stack serving `tools`, every call made through our clients recorded."""
    with (
        CallRecorder().installed() as recorder,
        EmbeddedStack(env={"MCP_TASKS_TOOLS": tools}) as stack,
    ):
        yield TaskClient(stack, WorkerDispatch(stack)), recorder


def test_every_call_of_a_task_on_the_direct_path_has_a_row() -> None:
    with recorded("conformance") as (client, recorder):
        task_id = client.create("confirm_delete", {"filename": "table.txt"})
        asked = client.wait_input(task_id, timeout=10)
        key = next(iter(asked["inputRequests"]))
        client.update(task_id, {key: {"action": "accept", "content": {"confirm": True}}})
        assert client.wait_terminal(task_id, timeout=10)["status"] == "completed"
    assert {
        ("dynamodb", "PutItem", None),
        ("lambda", "Invoke", "Event"),
        ("stepfunctions", "StartExecution", None),
        ("stepfunctions", "SendTaskSuccess", None),
    } <= recorder.calls
    assert_in_the_table(recorder.calls)


def test_every_call_of_the_declared_targets_has_a_row() -> None:
    approve = {"action": "accept", "content": {"approve": True, "approver": "ada"}}
    with recorded("examples/managed/tools.yaml") as (client, recorder):
        client.rpc("tools/call", {"name": "word_count", "arguments": {"text": "a b"}})
        client.rpc("tools/call", {"name": "quote", "arguments": {"item": "bolt", "quantity": 1}})
        arguments = {"version": "v1", "environment": "staging", "stepSeconds": 0}
        task_id = client.create("deploy", arguments)
        # Bounds on a hang, not on speed: moto runs the workflow's states in threads that
        # share 2 cores with make test's other parts (20 s was once not enough).
        ((key, _),) = client.wait_input(task_id, timeout=60)["inputRequests"].items()
        client.update(task_id, {key: approve})
        assert client.wait_terminal(task_id, timeout=60)["status"] == "completed"
    assert {
        ("lambda", "Invoke", "RequestResponse"),
        ("stepfunctions", "StartExecution", None),
        ("stepfunctions", "SendTaskSuccess", None),
    } <= recorder.calls
    assert_in_the_table(recorder.calls)


# -- docs/limits.md shows the table -----------------------------------------------------------


def test_the_limits_page_shows_the_table() -> None:
    text = LIMITS.read_text()
    assert call_policies.markdown() in text, "paste aws.call_policies.markdown() into limits.md"


def test_the_method_names_are_botocores() -> None:
    from botocore import xform_name

    for call in CALLS:
        assert method_name(call.operation) == xform_name(call.operation)
        assert re.fullmatch(r"[A-Z][A-Za-z]+", call.operation)
