"""A fault at every AWS call of the direct path and of the 2025-11-25 session store, in turn.

Each scenario runs once to record its call sites (`support.aws_faults`: every call the API
function, the worker and the reconciler make, by operation and order, so a new call site is
covered without listing it here), then once per site and fault kind (throttling, a 5xx, a
timeout after the call landed) with exactly that call failing. The client is a well-behaved
one: it retries a request answered 503 (at once: no sleeps, nothing random), a few times.

After each run:
- no response is a 500: an AWS fault is answered 503 with `Retry-After`;
- no task is lost: every task the run created ends (one nothing ever ran is left to the
  sweeper, which the run invokes), and each ends exactly once, whoever ends it;
- no answer is lost: a task whose answer was acknowledged completes with it, unless a fault
  in the worker ended it failed, with an error saying so.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest

from mcp_tasks_aws.aws.dynamodb import DynamoTaskStore
from mcp_tasks_aws.local.apigw_emulator import LocalLambdaContext, build_event
from mcp_tasks_aws.local.aws import REGION
from mcp_tasks_aws.local.stack import EmbeddedStack
from mcp_tasks_aws.tasks.model import TaskRecord
from support.aws_faults import KINDS, AwsFaults, Site
from support.legacy import LEGACY_VERSION
from support.mcp import PROTOCOL_VERSION, running_stack
from support.tasks import CAPABILITIES

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

ATTEMPTS = 4
"""A request is sent at most this often (a 503 is retried at once)."""
SETTLE_S = 8.0
"""How long a run waits for its task to end (bounded; a healthy run ends in well under 1 s)."""


@pytest.fixture(scope="module")
def stack() -> Iterator[EmbeddedStack]:
    # Short waits: a resume polls its parked call every 20 ms (not 500), for at most 2 s.
    env = {"MCP_TASKS_LISTEN_POLL_MS": "20", "MCP_TASKS_LISTEN_WINDOW_MS": "2000"}
    with running_stack(MCP_TASKS_TOOLS="conformance", **env) as running:
        yield running


@pytest.fixture(scope="module")
def faults(stack: EmbeddedStack) -> Iterator[AwsFaults]:
    apps = {"api": stack.api_app, "worker": stack.worker_app, "reconcile": stack.reconcile_app}
    with AwsFaults(apps).installed() as installed:
        yield installed


@pytest.fixture(scope="module")
def reader(stack: EmbeddedStack) -> DynamoTaskStore:
    """The test's own view of the table (its calls are neither counted nor failed)."""
    return DynamoTaskStore(boto3.client("dynamodb", region_name=REGION), stack.aws.table_name)


class Client:
    """Sends requests to the API handler, as API Gateway would, retrying a 503 at once."""

    def __init__(self, stack: EmbeddedStack) -> None:
        self.stack = stack
        self.statuses: list[int] = []
        self.problems: list[str] = []
        self._ids = iter(range(1, 10_000))

    def send(self, method: str, body: bytes, headers: dict[str, str]) -> dict[str, Any]:
        for _ in range(ATTEMPTS):
            event = build_event(method=method, path="/mcp", headers=headers, body=body)
            response: dict[str, Any] = self.stack.api_handler(event, LocalLambdaContext())
            status = int(response["statusCode"])
            self.statuses.append(status)
            if status >= 500 and not (status == 503 and "retry-after" in _lower(response)):
                self.problems.append(
                    f"{method} answered {status}: {response.get('body', '')[:200]}"
                )
            if status != 503:
                return response
        return response

    def modern(self, method: str, params: dict[str, Any], name: str | None = None) -> Any:
        meta = {
            "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
            "io.modelcontextprotocol/clientCapabilities": CAPABILITIES,
        }
        message = {"jsonrpc": "2.0", "id": next(self._ids), "method": method}
        message["params"] = {**params, "_meta": meta}
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": PROTOCOL_VERSION,
            "mcp-method": method,
            **({"mcp-name": name} if name else {}),
        }
        return json.loads(self.send("POST", json.dumps(message).encode(), headers)["body"])


def _lower(response: dict[str, Any]) -> dict[str, str]:
    return {k.lower(): v for k, v in (response.get("headers") or {}).items()}


def wait_for(predicate: Callable[[], Any], timeout: float = SETTLE_S) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(0.02)


def tasks_labelled(reader: DynamoTaskStore, label: str) -> list[TaskRecord]:
    """The tasks whose arguments name `label`. The table keeps every earlier run's items, so
    the scan filters and projects in the table: only this run's ids come back (moto's
    answer for every item of the table would cost more than the run itself)."""
    ids: list[str] = []
    page: dict[str, Any] = {}
    while True:
        answer = reader.client.scan(
            TableName=reader.table,
            FilterExpression="contains(arguments, :label)",
            ProjectionExpression="taskId",
            ExpressionAttributeValues={":label": {"S": label}},
            **page,
        )
        ids += [item["taskId"]["S"] for item in answer["Items"]]
        if "LastEvaluatedKey" not in answer:
            return list(reader.get_many(ids).values())
        page = {"ExclusiveStartKey": answer["LastEvaluatedKey"]}


def settle_stranded(stack: EmbeddedStack, reader: DynamoTaskStore, label: str) -> None:
    """Tasks of this run nothing ever ran (a create whose write landed but was not heard):
    past the sweeper's bound, the sweep ends them."""
    for record in tasks_labelled(reader, label):
        if record.status in ("working", "input_required") and record.leg == 0:
            reader.client.update_item(
                TableName=reader.table,
                Key={"taskId": {"S": record.task_id}},
                UpdateExpression="SET lastUpdatedAt = :then",
                ExpressionAttributeValues={":then": {"N": str(record.updated_at - 2 * 3600_000)}},
            )
    stack.sweep()


# -- the direct path: a task that asks, is answered and completes ------------------------------


def direct_task_that_asks(
    stack: EmbeddedStack, reader: DynamoTaskStore, label: str
) -> tuple[Client, str | None, bool]:
    """Create `confirm_delete` (first leg direct), answer its question, read it at the end.
    Returns the client, the acknowledged task id (None: never acknowledged), and whether the
    answer was acknowledged."""
    client = Client(stack)
    params = {"name": "confirm_delete", "arguments": {"filename": f"{label}.txt"}}
    created = client.modern("tools/call", params, name="confirm_delete")
    task_id = created.get("result", {}).get("taskId")
    if task_id is None:
        return client, None, False

    def held_or_over() -> TaskRecord | None:
        record = reader.get(task_id)
        if record is None:
            return None
        if record.is_terminal or (record.task_token and record.input_requests):
            return record
        return None

    record = wait_for(held_or_over)
    answered = False
    if record is not None and not record.is_terminal:
        key = next(iter(record.input_requests))
        answer = {key: {"action": "accept", "content": {"confirm": True}}}
        updated = client.modern(
            "tasks/update", {"taskId": task_id, "inputResponses": answer}, name=task_id
        )
        answered = "error" not in updated
    wait_for(lambda: (r := reader.get(task_id)) is not None and r.is_terminal)
    client.modern("tasks/get", {"taskId": task_id}, name=task_id)
    return client, task_id, answered


def record_sites(run: Callable[[str], Any], faults: AwsFaults, label: str) -> list[Site]:
    faults.arm(None)
    run(label)
    return list(faults.sites)


@pytest.fixture(scope="module")
def direct_sites(stack: EmbeddedStack, faults: AwsFaults, reader: DynamoTaskStore) -> list[Site]:
    sites = record_sites(lambda label: direct_task_that_asks(stack, reader, label), faults, "rec-d")
    # What the direct path is made of, so a scenario that stopped early is noticed.
    operations = {(s.function, s.operation) for s in sites}
    assert {("api", "dynamodb:PutItem"), ("api", "lambda:Invoke")} <= operations
    assert ("worker", "stepfunctions:StartExecution") in operations
    assert ("api", "stepfunctions:SendTaskSuccess") in operations
    return sites


def test_the_direct_path_holds_under_a_fault_at_each_call(
    stack: EmbeddedStack, faults: AwsFaults, reader: DynamoTaskStore, direct_sites: list[Site]
) -> None:
    failures = []
    outcomes: list[str] = []
    for n, site in enumerate(direct_sites):
        for kind in KINDS:
            label = f"fd{n}-{kind}"
            faults.arm(site, kind)
            client, task_id, answered = direct_task_that_asks(stack, reader, label)
            settle_stranded(stack, reader, label)
            problems = list(client.problems)
            if faults.fired != [site]:
                problems.append("the fault did not fire (the scenario took another way)")
            records = tasks_labelled(reader, label)
            for record in records:
                if not record.is_terminal:
                    problems.append(f"task {record.task_id[:8]} lost: still {record.status}")
                # The ending write lands before the wrapper that counts it returns (in the
                # thread that made it): a terminal record may be read a moment before its
                # count. A second ending would be counted as well.
                elif wait_for(lambda r=record: faults.endings[r.task_id], 2.0) != 1:
                    ends = faults.endings[record.task_id]
                    problems.append(f"task {record.task_id[:8]} ended {ends} times")
            if task_id is None:
                problems.append("the task was never acknowledged, even after retries")
            else:
                final = reader.get(task_id)
                assert final is not None
                done = final.status == "completed" and final.result is not None
                text = json.dumps(final.result) if final.result else ""
                if answered and done and f"Deleted {label}.txt." not in text:
                    problems.append(f"answer lost: {text[:120]}")
                if answered and not done:
                    problems.append(f"answer lost: the task ended {final.status}: {final.error}")
                if final.status == "failed" and not (final.error or {}).get("message"):
                    problems.append("failed without saying why")
                outcomes.append(
                    f"{site} {kind}: {final.status} {(final.error or {}).get('message', '')}"
                )
            if problems:
                failures.append(f"{site} {kind}: " + "; ".join(problems))
    assert failures == [], "\n".join(outcomes)


# -- the 2025-11-25 session store: a session with a question round -----------------------------


class LegacySession(Client):
    def __init__(self, stack: EmbeddedStack) -> None:
        super().__init__(stack)
        self.session_id: str | None = None

    def legacy(self, body: Any = None, *, method: str = "POST", **headers: str) -> dict[str, Any]:
        all_headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": LEGACY_VERSION,
            **({"mcp-session-id": self.session_id} if self.session_id else {}),
            **headers,
        }
        raw = json.dumps(body).encode() if body is not None else b""
        return self.send(method, raw, all_headers)

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params}
        return self.legacy(body)


def sse(response: dict[str, Any]) -> list[dict[str, str]]:
    parsed = []
    for block in str(response.get("body", "")).split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.split("\n") if ": " in line)
        if fields:
            parsed.append(fields)
    return parsed


def lapse_leases(stack: EmbeddedStack) -> None:
    """Let every claim on a parked call lapse, as its lease would (a claim that landed unheard
    holds the round until then: the answer waits in the call, and is not lost)."""
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    table = stack.aws.table_name
    for item in dynamodb.scan(TableName=table)["Items"]:
        if "claimedUntil" in item and not item.get("done", {}).get("BOOL", False):
            dynamodb.update_item(
                TableName=table,
                Key={"taskId": item["taskId"]},
                UpdateExpression="SET claimedUntil = :zero",
                ExpressionAttributeValues={":zero": {"N": "0"}},
            )


def session_with_a_question(
    stack: EmbeddedStack, reader: DynamoTaskStore
) -> tuple[LegacySession, bool, bool]:
    """initialize, tools/list, logging/setLevel, a call that asks, its answer, the resume that
    brings the result, a task (listed, its result read), DELETE. Returns the client, whether
    the answer was acknowledged, and whether the result (and the task's) arrived."""
    client = LegacySession(stack)
    params = {
        "protocolVersion": LEGACY_VERSION,
        "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "faults", "version": "1"},
    }
    initialized = client.request("initialize", params)
    client.session_id = _lower(initialized).get("mcp-session-id")
    assert client.session_id, initialized
    client.request("tools/list", {})
    client.request("logging/setLevel", {"level": "info"})
    asked = sse(client.request("tools/call", {"name": "test_input_required_result_elicitation"}))
    questions = [json.loads(e["data"]) for e in asked if e.get("data", "").strip()]
    questions = [q for q in questions if "method" in q]
    answered = got_result = False
    if questions and asked and "id" in asked[0]:
        answer = {
            "jsonrpc": "2.0",
            "id": questions[0]["id"],
            "result": {"action": "accept", "content": {"name": "A"}},
        }
        answered = int(client.legacy(answer)["statusCode"]) == 202
        for attempt in range(ATTEMPTS):
            if attempt == ATTEMPTS - 1:
                lapse_leases(stack)
            # A stream that ended without the result is resumed, as SSE clients do.
            resumed = client.legacy(
                method="GET", **{"last-event-id": asked[0]["id"], "accept": "text/event-stream"}
            )
            got_result = "Hello, A!" in str(resumed.get("body", ""))
            if got_result:
                break
    task_ok = session_task(client, reader)
    client.legacy(method="DELETE")
    return client, answered, got_result and task_ok


def session_task(client: LegacySession, reader: DynamoTaskStore) -> bool:
    """A task-augmented call in the session: acknowledged, it must end, be in the session's
    tasks/list and give its result (`tasks/result`). True if so, or if never acknowledged."""
    params = {"name": "slow_compute", "arguments": {"seconds": 0}, "task": {}}
    created = json.loads(client.request("tools/call", params)["body"])
    task_id = created.get("result", {}).get("task", {}).get("taskId")
    if task_id is None:
        return True
    if not wait_for(lambda: (r := reader.get(task_id)) is not None and r.is_terminal):
        return False  # lost: it never ended
    listed = json.loads(client.request("tasks/list", {})["body"]).get("result", {})
    if task_id not in [t["taskId"] for t in listed.get("tasks", [])]:
        return False
    # Its result, or the error it failed with (a fault at its claim fails it, saying so).
    result = client.request("tasks/result", {"taskId": task_id})
    answer = json.loads(result["body"])
    return int(result["statusCode"]) == 200 and ("result" in answer or answer["error"]["message"])


def test_the_session_store_holds_under_a_fault_at_each_call(
    stack: EmbeddedStack, faults: AwsFaults, reader: DynamoTaskStore
) -> None:
    sites = record_sites(lambda _label: session_with_a_question(stack, reader), faults, "rec-s")
    operations = {s.operation for s in sites}
    assert {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"} <= operations
    failures = []
    for site in sites:
        for kind in KINDS:
            faults.arm(site, kind)
            client, answered, got_result = session_with_a_question(stack, reader)
            problems = list(client.problems)
            if faults.fired != [site]:
                problems.append("the fault did not fire")
            if answered and not got_result:
                problems.append("answer lost: a result did not arrive, or a task was not listed")
            if problems:
                failures.append(f"{site} {kind}: " + "; ".join(problems))
    assert failures == []
