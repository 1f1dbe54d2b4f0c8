"""Cost per million tasks, from what the embedded stack counts and one dated price table.

**Measured** on the embedded stack (conformance tools, both paths, this run): for every
function invocation, the AWS calls it made (botocore `before-call` hooks on each function's
own clients, attributed to the invocation running in that thread) and its duration; for every
task, its Step Functions state transitions (the execution's history). Operations measured:
a task-creating `tools/call`, `tasks/get`, a resuming `tasks/update`, a `subscriptions/listen`
window, and each worker invocation (a leg that completes, a direct leg that hands over, the
execution's leg that only attaches its token, a resumed leg).

**Modelled** from those: four cases, each on the Step Functions path (every leg in an
execution) and the direct path (first leg by an asynchronous invoke):
1. a 1 s task without input, the client polling at the server's `pollIntervalMs`;
2. the same, the client listening (the extension's windows, see README "Use it from a client");
3. a 5-minute task with one input round (asked at once, answered 30 s later), polling;
4. the same, listening.
The client's schedule is simulated with the server's own interval rule
(`tasks.model.suggested_poll_interval`, 500 ms to 10 s) and, as "today", the fixed 1 s
interval every task had before it and Step Functions for every leg. The tool's own run time
(1 s, 300 s) is billed to the worker on both paths; a listen window bills the API function
for as long as it is open.

**Billed duration**: a measured overhead is this machine's time on a full core; a 512 MB
function has 512/1769 of a vCPU, so overheads are scaled by 1769/512 (conservative: moto's
in-process emulation stands in for network waits, which would not stretch), then rounded up
to the millisecond. Waiting (a tool's sleep, an open listen window) is not scaled.

A line for a small always-on container serving FastMCP (Fargate + a load balancer) shows its
monthly cost, what that is per million tasks at two volumes, and where the direct path costs
the same. Target: case 1 on the direct path at most 1/4 of today's case 1.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from aws_calls import Harness, embedded_stack
from common import PROTOCOL_VERSION
from cost_model import (
    ANSWER_AFTER_S,
    CASES,
    CEILING_MS,
    CONTAINER,
    FLOOR_MS,
    FULL_CORE_MB,
    HOLDING,
    MEMORY_MB,
    PACED,
    PRICES_AS_OF,
    TARGET_RATIO,
    TODAY_MS,
    WINDOW_S,
    Bill,
    ColdStarts,
    Latency,
    Listening,
    Measured,
    Memory,
    Op,
    bill,
    container_month,
)
from mcp_client import TASK_CAPABILITIES, McpHttpError
from transitions import history

from mcp_tasks_aws.local.apigw_emulator import LocalLambdaContext, build_event

# -- measuring -----------------------------------------------------------------------------------


@dataclass
class Invocation:
    function: str
    label: str
    task_id: str = ""
    seconds: float = 0.0
    calls: list[str] = field(default_factory=list)


class Meter:
    """Attributes each AWS call to the function invocation running in its thread."""

    def __init__(self) -> None:
        self._current = threading.local()
        self.invocations: list[Invocation] = []
        self._lock = threading.Lock()

    def hook(self, client: Any) -> None:
        client.meta.events.register("before-call.*.*", self._record)

    def _record(self, model: Any, **_: Any) -> None:
        invocation = getattr(self._current, "invocation", None)
        if invocation is not None:
            invocation.calls.append(str(model.name))

    @contextmanager
    def invocation(self, function: str, label: str) -> Iterator[Invocation]:
        record = Invocation(function, label)
        self._current.invocation = record
        start = time.perf_counter()
        try:
            yield record
        finally:
            record.seconds = time.perf_counter() - start
            self._current.invocation = None
            with self._lock:
                self.invocations.append(record)

    def wrap_worker(self, handler: Callable[..., Any]) -> Callable[..., Any]:
        def measured(event: dict[str, Any], context: Any) -> Any:
            label = "in execution" if event.get("taskToken") else "direct"
            with self.invocation("worker", label) as record:
                record.task_id = str(event.get("taskId"))
                result = handler(event, context)
                record.label = f"{label}: {(result or {}).get('outcome', '?')}"
                return result

        return measured


def median_op(invocations: list[Invocation]) -> Op:
    if not invocations:
        raise McpHttpError("an operation was never measured")
    calls = Counter(tuple(i.calls) for i in invocations).most_common(1)[0][0]
    return Op(statistics.median(i.seconds for i in invocations), list(calls))


class Probe:
    """Drives the API handler in this thread, one request at a time, with the meter on."""

    def __init__(self, harness: Harness, meter: Meter) -> None:
        self.h = harness
        self.meter = meter
        self._ids = 0

    def rpc(self, method: str, params: dict[str, Any], label: str) -> dict[str, Any]:
        self._ids += 1
        body = {
            "jsonrpc": "2.0",
            "id": self._ids,
            "method": method,
            "params": {
                **params,
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
                    "io.modelcontextprotocol/clientCapabilities": TASK_CAPABILITIES,
                },
            },
        }
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": PROTOCOL_VERSION,
            "mcp-method": method,
        }
        name = params.get("name") if method == "tools/call" else params.get("taskId")
        if name is not None:
            headers["mcp-name"] = str(name)
        event = build_event(
            method="POST", path="/mcp", headers=headers, body=json.dumps(body).encode()
        )
        with self.meter.invocation("api", label):
            response = self.h.stack.api_handler(event, LocalLambdaContext())
        text = response.get("body") or ""
        if (response.get("headers") or {}).get("content-type", "").startswith("text/event"):
            text = [line[5:] for line in text.splitlines() if line.startswith("data:")][-1]
        message: dict[str, Any] = json.loads(text)
        if response["statusCode"] != 200 or "result" not in message:
            raise McpHttpError(f"{method}: {text[:300]}")
        result: dict[str, Any] = message["result"]
        return result

    def wait(self, task_id: str, statuses: set[str]) -> dict[str, Any]:
        deadline = time.monotonic() + 15
        while True:
            task = self.h.client.get_task(task_id)  # over HTTP: not metered
            if task["status"] in statuses:
                return task
            if time.monotonic() > deadline:
                raise McpHttpError(f"task {task_id} still {task['status']}")
            time.sleep(0.01)

    def transitions(self, task_id: str) -> int:
        if not self.h.has_execution(task_id):
            return 0
        self.h.wait_execution_ended(task_id)
        return sum(1 for e in history(self.h, task_id) if str(e["type"]).endswith("StateEntered"))


def measure_path(path: str, repeats: int) -> Measured:
    meter = Meter()
    with embedded_stack(path) as h:
        from mcp_tasks_aws.local.aws import LAMBDAS

        worker = h.stack.aws.function_name("WorkerFunction")
        LAMBDAS.handlers[worker] = meter.wrap_worker(LAMBDAS.handlers[worker])
        for app in (h.stack.api_app, h.stack.worker_app):
            for service in ("dynamodb", "stepfunctions", "lambda", "s3"):
                meter.hook(app.clients.get(service))
        probe = Probe(h, meter)
        plain, asking = [], []
        for _ in range(repeats):
            created = probe.rpc(
                "tools/call",
                {"name": "slow_compute", "arguments": {"seconds": 0, "label": "cost"}},
                "create",
            )
            probe.wait(created["taskId"], {"completed"})
            probe.rpc("tasks/get", {"taskId": created["taskId"]}, "get")
            plain.append(created["taskId"])
            created = probe.rpc(
                "tools/call",
                {"name": "confirm_delete", "arguments": {"filename": "cost.txt"}},
                "create-asking",
            )
            waiting = probe.wait(created["taskId"], {"input_required"})
            h.wait_held(created["taskId"])  # answered as a person would, once it waits
            answers = {
                k: {"action": "accept", "content": {"confirm": True}}
                for k in waiting["inputRequests"]
            }
            probe.rpc(
                "tasks/update", {"taskId": created["taskId"], "inputResponses": answers}, "update"
            )
            probe.wait(created["taskId"], {"completed"})
            asking.append(created["taskId"])
        # A listen window's own work: one on an ended task closes right after its ack.
        for task_id in plain:
            params = {"notifications": {"taskIds": [task_id]}}
            probe.rpc("subscriptions/listen", params, "listen-ended")
        # And one on a task that ends after about a second: how often it reads the store.
        created = probe.rpc(
            "tools/call",
            {"name": "slow_compute", "arguments": {"seconds": 1, "label": "cost-listen"}},
            "create-listened",
        )
        params = {"notifications": {"taskIds": [created["taskId"]]}}
        probe.rpc("subscriptions/listen", params, "listen")
        h.settle()
        transitions = (
            statistics.median(probe.transitions(t) for t in plain),
            statistics.median(probe.transitions(t) for t in asking),
        )
    api: dict[str, list[Invocation]] = {}
    legs: dict[str, list[Invocation]] = {}
    for invocation in meter.invocations:  # in the order they ended: legs of a task run in turn
        if invocation.function == "api":
            api.setdefault(invocation.label, []).append(invocation)
        else:
            legs.setdefault(invocation.task_id, []).append(invocation)
    expected = 3 if path == "direct" else 2  # direct leg, attach, resumed / parked, resumed
    if any(len(legs.get(t, [])) != 1 for t in plain) or any(
        len(legs.get(t, [])) != expected for t in asking
    ):
        raise McpHttpError(f"{path}: unexpected worker invocations per task")
    (window,) = api["listen"]
    reads = [c for c in window.calls if c in ("BatchGetItem", "GetItem")]
    return Measured(
        create=median_op(api["create"]),
        get=median_op(api["get"]),
        update=median_op(api["update"]),
        listen_open=median_op(api["listen-ended"]),
        listen_reads=len(reads),
        listen_seconds=window.seconds,
        leg_done=median_op([legs[t][0] for t in plain]),
        leg_asks=median_op([legs[t][0] for t in asking]),
        leg_attach=median_op([legs[t][1] for t in asking]) if path == "direct" else None,
        leg_resumed=median_op([legs[t][-1] for t in asking]),
        transitions_plain=int(transitions[0]),
        transitions_input=int(transitions[1]),
    )


# -- the report ----------------------------------------------------------------------------------


SMOKE = {"cost_repeats": 1, "cost_cold_rounds": 1}
"""The smoke: one task per operation and path, one cold-start round."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cost-repeats",
        type=int,
        default=5,
        help="costs: tasks measured per operation and path (default 5)",
    )
    parser.add_argument(
        "--cost-cold-rounds",
        type=int,
        default=5,
        help="costs: cold-start rounds behind the memory and SnapStart trades (default 5)",
    )


LISTEN_TARGET = 1.2
"""Case 4 (listening) at most this many times case 3 (polling), direct path."""
MEMORY_CHOICES = (256, 512, 1024)


def waiting(m: Measured, args: argparse.Namespace) -> None:
    """Listening against polling on the direct path, by server rule and API memory size, with
    the worst delivery delay against the poll step in force; and what each API memory size
    does to the first task request's cold start."""
    print()
    print(
        "waiting: listening against polling, direct path (cost ratios; worst delivery delay "
        "of a status change / the poll step in force then)"
    )
    print(f"{'rule, memory':<50}{'case 4/3':>10}{'case 2/1':>10}{'delay/step':>12}{'delay s':>9}")
    rows: list[tuple[Listening, Memory]] = [(HOLDING, Memory())]
    rows += [(PACED, Memory(api=mb)) for mb in MEMORY_CHOICES]
    for rule, memory in rows:
        ratios, latency = [], Latency()
        for listened, polled in ((CASES[3], CASES[2]), (CASES[1], CASES[0])):
            listen = bill(listened, m, "direct", rule=rule, memory=memory, latency=latency)
            ratios.append(listen.total / bill(polled, m, "direct", memory=memory).total)
        label = f"{rule.name}, {memory.label()}"
        print(
            f"{label:<50}{ratios[0]:>10.2f}{ratios[1]:>10.2f}"
            f"{latency.worst_ratio:>12.2f}{latency.worst_s:>9.1f}"
        )
        if rule is PACED and memory == Memory():
            verdict = "PASS" if ratios[0] <= LISTEN_TARGET and latency.worst_ratio <= 1 else "MISS"
            print(
                f"   case 4 / case 3 = {ratios[0]:.2f} (target <= {LISTEN_TARGET}, no delivery "
                f"later than its poll step)  {verdict}"
            )
    cpu = first_task_cpu_s(args)
    if cpu is None:
        return
    cpu_s = cpu["api-task"]
    print(
        f"the API memory's cold-start trade: the first task request takes {cpu_s * 1000:.0f} ms "
        "of CPU on this machine's core (cold-start section's api-task); at MB / 1769 of a vCPU:"
    )
    for mb in MEMORY_CHOICES:
        print(f"   {mb:>5} MB: about {cpu_s * FULL_CORE_MB / mb * 1000:,.0f} ms")
    snapstart(cpu)


def snapstart(cpu: dict[str, float]) -> None:
    """SnapStart's cost against a plain cold start, per function at its memory size."""
    starts = ColdStarts(MEMORY_MB, cpu["api-task"], cpu["api-task-restored"])
    print()
    print(
        f"SnapStart (prices {PRICES_AS_OF}), one {MEMORY_MB} MB function, from the cold-start "
        f"section's first task request ({starts.init_cpu_s * 1000:.0f} ms of CPU fresh, "
        f"{starts.restored_cpu_s * 1000:.0f} ms restored):"
    )
    print(
        f"   per million new environments: {per_million(starts.without())} without "
        f"(init and first request billed), {per_million(starts.with_snapstart())} with "
        "(restore charge and the restored request)"
    )
    print(
        f"   the snapshot's cache: ${starts.cache_month():,.2f} a month per published version "
        "(API and worker: two)"
    )
    print(
        f"   first task request's CPU latency: {starts.latency_s(starts.init_cpu_s) * 1000:,.0f}"
        f" ms fresh, {starts.latency_s(starts.restored_cpu_s) * 1000:,.0f} ms restored "
        "(Lambda's restore of the snapshot comes on top)"
    )
    print(
        "   so SnapStart buys latency, not money: on by default for the API and the worker, "
        "whose cold starts a client waits for (template parameter SnapStart)"
    )


def first_task_cpu_s(args: argparse.Namespace) -> dict[str, float] | None:
    """The median CPU times of the cold-start section's api-task children, fresh and
    restored (a few runs)."""
    import cold_start

    rounds = max(1, args.cost_cold_rounds)
    try:
        return cold_start.first_task_cpu_s(rounds, max(0, args.cold_warmup))
    except (cold_start.ChildFailed, OSError) as exc:
        print(f"cold-start trade: not measured ({exc})")
        return None


def per_million(amount: float) -> str:
    return f"${amount * 1e6:,.2f}"


def main(args: argparse.Namespace) -> int:
    repeats = max(1, args.cost_repeats)
    try:
        measured = {path: measure_path(path, repeats) for path in ("step_functions", "direct")}
    except McpHttpError as exc:
        print(f"FAILED {exc}")
        return 1
    print(f"prices: {PRICES_AS_OF}; functions at {MEMORY_MB} MB arm64")
    print("measured per operation (median; calls made; billed ms after the CPU scale):")
    for path, m in measured.items():
        ops = {
            "tools/call (create)": m.create,
            "tasks/get": m.get,
            "tasks/update (resumes)": m.update,
            "listen window (ack, close)": m.listen_open,
            "worker: first leg, completes": m.leg_done,
            "worker: first leg, asks": m.leg_asks,
            "worker: resumed leg": m.leg_resumed,
        }
        if m.leg_attach is not None:
            ops["worker: execution attaches"] = m.leg_attach
        print(
            f"-- {path} (transitions: {m.transitions_plain} without input, "
            f"{m.transitions_input} with one round; a {m.listen_seconds:.2f} s listen window "
            f"read the store {m.listen_reads} times)"
        )
        for name, op in ops.items():
            print(
                f"   {name:<30}{op.seconds * 1000:>7.1f} ms {op.billed_ms():>5} billed  "
                f"{', '.join(op.calls) or '-'}"
            )

    print()
    print(
        f"cost per million tasks (polling: {FLOOR_MS} ms to {CEILING_MS // 1000} s by age; "
        f"answer after {ANSWER_AFTER_S:.0f} s; listen windows {WINDOW_S:.0f} s)"
    )
    header = (
        f"{'case':<40}{'today':>12}{'Step Functions':>16}{'direct':>12}"
        f"{'direct/SFN':>12}{'direct/today':>14}"
    )
    print(header)
    bills: dict[tuple[int, str], Bill] = {}
    for case in CASES:
        today_bill = bill(
            case, measured["step_functions"], "step_functions", adaptive=False, rule=HOLDING
        )
        bills[(case.number, "today")] = today_bill
        for path, m in measured.items():
            bills[(case.number, path)] = bill(case, m, path)
        sfn, direct = bills[(case.number, "step_functions")], bills[(case.number, "direct")]
        print(
            f"{case.number}. {case.name:<37}{per_million(today_bill.total):>12}"
            f"{per_million(sfn.total):>16}{per_million(direct.total):>12}"
            f"{direct.total / sfn.total:>12.2f}{direct.total / today_bill.total:>14.2f}"
        )
    print(
        f"(today: every leg on Step Functions, a fixed {TODAY_MS} ms poll interval and 20 s "
        "listen windows)"
    )
    today = bills[(1, "today")]
    ratio = bills[(1, "direct")].total / today.total
    verdict = "PASS" if ratio <= TARGET_RATIO else "MISS"
    print(f"case 1, direct / today = {ratio:.2f} (target <= {TARGET_RATIO})  {verdict}")

    print()
    print("breakdown per million tasks:")
    names = list(today.lines())
    print(f"{'':<26}" + "".join(f"{n:>16}" for n in names))
    short = {"today": "today", "step_functions": "Step Functions", "direct": "direct"}
    order = {"today": 0, "step_functions": 1, "direct": 2}
    rows = [
        (f"{short[path]}, case {n}", b)
        for (n, path), b in sorted(bills.items(), key=lambda item: (item[0][0], order[item[0][1]]))
    ]
    for label, b in rows:
        print(f"{label:<26}" + "".join(f"{per_million(v):>16}" for v in b.lines().values()))
    print("requests, invocations, WRU, RRU, transitions per task:")
    for label, b in rows:
        print(
            f"   {label:<24}{b.requests:>5}{b.lambda_invocations:>5}{b.wru:>6}{b.rru:>6}"
            f"{b.transitions:>4}"
        )

    waiting(measured["direct"], args)

    month = container_month()
    print()
    print(
        f"always-on container serving FastMCP (Fargate ARM {CONTAINER['vcpu']} vCPU / "
        f"{CONTAINER['gb']} GB + an ALB): ${month:,.2f} a month whatever the volume"
    )
    for volume in (1e6, 10e6):
        print(
            f"   at {volume / 1e6:.0f} M tasks a month: {per_million(month / volume)} "
            f"per million tasks"
        )
    for n in (1, 3):
        direct = bills[(n, "direct")].total
        print(
            f"   break-even with the direct path, case {n}: "
            f"{month / direct / 1e6:,.2f} M tasks a month"
        )
    print(
        "   (one small container runs I/O-bound tools only; it needs its own durable task "
        "store to survive restarts, not counted here)"
    )
    return 0
