"""The durable runner beside the direct and Step Functions paths: AWS calls per operation and
cost per million tasks.

**Measured** on the embedded stack serving `bench/durable_tools.py` (durable tools run by AWS's
in-process durable runner, `local.durable`): for each operation, the AWS calls it made (the
API's and the durable function's botocore calls, and the durable port's calls named as the
Lambda operations the deployed adapter makes, `aws/durable.py`), its duration, the durable
function's invocations per task (each replay is one), and the durable operations per task
(read from the execution's history: the start, each step, wait and callback, the context's
own steps included). The direct and Step Functions figures are the `costs` section's
measurements (`costs.measure_path`), made again here.

**Modelled** from those, as the `costs` section models the others (`cost_model`): cases 1 to
4, and two a leg cannot do at all:
- a 2-hour job in 10 steps of 12 minutes of compute each (durable: one invocation per step;
  Step Functions: a declared workflow of ten Lambda states, 11 state transitions; direct: a leg
  is at most 15 minutes, so none);
- one day's sleep between two steps (durable: a wait, no compute; Step Functions: a declared
  workflow's Wait state between two Lambda states; direct: none).
For those two, the client's polling over the task's life (at the 10 s ceiling: 720 and 8,640
`tasks/get`) is shown apart: it is the same whatever runs the task, and dwarfs the work.

**Prices**: `cost_model.PRICES` (2025 list prices, us-east-1) and, for durable functions, AWS
Lambda's pricing page as of their launch (re:Invent 2025): $8.00 per million durable
operations. Durable data written ($0.25 per GB) and retained ($0.15 per GB-month) are left out:
a task here writes a few KB.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aws_calls import Harness
from cost_model import (
    CASES,
    CEILING_MS,
    PACED,
    PRICES_AS_OF,
    STORE_POLL_S,
    Bill,
    Case,
    Measured,
    Op,
    Timeline,
    bill,
    polls,
    timeline,
    windows,
)
from costs import Invocation, Meter, Probe, measure_path, median_op, per_million
from mcp_client import McpHttpError

TOOLS = Path(__file__).with_name("durable_tools.py")
DURABLE_OP_PRICE = 8.00 / 1e6
DURABLE_PRICE_SOURCE = "AWS Lambda pricing, durable functions (launched re:Invent 2025)"
TIME_SCALE = 3600
"""Durable time on the bench's stack: an hour a second (the nap's hour takes a second)."""
PORT_CALLS = {"start": ["Invoke"], "answer": ["SendDurableExecutionCallbackSuccess"]}
"""The Lambda API calls the deployed adapter makes for the port calls these tasks make
(`aws/durable.py`; a cancel adds ListDurableExecutionsByFunction and StopDurableExecution)."""
JOB_STEPS, JOB_STEP_S = 10, 12 * 60
DAY_S = 24 * 3600


@dataclass
class DurableMeasured:
    create: Op
    get: Op
    update: Op
    plain_invocations: list[Op]
    asking_invocations: list[Op]
    nap_invocations: list[Op]
    plain_ops: int
    asking_ops: int
    nap_ops: int


class PortMeter(Meter):
    """The meter, also noting the durable port's calls as the Lambda calls they stand for.

    The durable SDK runs the tool in a thread of its own, so a call made in a thread without
    an invocation of its own is the durable invocation's running now (one at a time here)."""

    def __init__(self) -> None:
        super().__init__()
        self.durable_now: Invocation | None = None

    def _now(self) -> Invocation | None:
        invocation: Invocation | None = getattr(self._current, "invocation", None)
        return invocation if invocation is not None else self.durable_now

    def hook_durable(self, client: Any) -> None:
        """The durable function's own clients: their calls are the running invocation's."""
        client.meta.events.register("before-call.*.*", self._record_durable)

    def _record_durable(self, model: Any, **_: Any) -> None:
        invocation = self._now()
        if invocation is not None:
            invocation.calls.append(str(model.name))

    def note(self, calls: list[str]) -> None:
        invocation = getattr(self._current, "invocation", None)
        if invocation is not None:
            invocation.calls.extend(calls)

    def wrap_port(self, port: Any) -> None:
        for name, calls in PORT_CALLS.items():
            inner = getattr(port, name)

            def noted(
                *args: Any, _inner: Callable[..., Any] = inner, _calls: list[str] = calls
            ) -> Any:
                self.note(_calls)
                return _inner(*args)

            setattr(port, name, noted)

    def wrap_durable(self, handler: Callable[..., Any]) -> Callable[..., Any]:
        def measured(event: Any, context: Any) -> Any:
            with self.invocation("durable", "invocation") as record:
                # The execution's ARN, turned into its name (the task's id) once read: the
                # local runner may run an execution's first invocation before it has
                # recorded its name.
                record.task_id = str(getattr(event, "durable_execution_arn", ""))
                self.durable_now = record
                try:
                    return handler(event, context)
                finally:
                    self.durable_now = None

        return measured


def durable_operations(stack: Any, task_id: str) -> int:
    """The execution's billed operations: its start, and each step, wait and callback."""
    history = stack.durable.history(task_id)
    kinds = ("Step", "Wait", "Callback", "Context")
    operations = {
        event.operation_id
        for event in history.events
        if str(event.event_type).startswith(kinds) and event.operation_id
    }
    return 1 + len(operations)


def measure_durable(repeats: int) -> DurableMeasured:
    from mcp_tasks_aws.local.stack import EmbeddedStack

    meter = PortMeter()
    env = {"MCP_TASKS_TOOLS": str(TOOLS), "MCP_TASKS_DURABLE_TIME_SCALE": str(TIME_SCALE)}
    with EmbeddedStack(host="127.0.0.1", env=env) as stack:
        for service in ("dynamodb", "lambda", "s3"):
            meter.hook(stack.api_app.clients.get(service))
            meter.hook_durable(stack.durable_app.clients.get(service))
        meter.wrap_port(stack.durable)
        stack.durable.handler = meter.wrap_durable(stack.durable.handler)
        probe = Probe(Harness(stack), meter)

        def run(tool: str, arguments: dict[str, Any], label: str, answer: bool = False) -> str:
            created = probe.rpc("tools/call", {"name": tool, "arguments": arguments}, label)
            task_id = str(created["taskId"])
            if answer:
                waiting = probe.wait(task_id, {"input_required"})
                answers = {
                    k: {"action": "accept", "content": {"ok": True}}
                    for k in waiting["inputRequests"]
                }
                probe.rpc("tasks/update", {"taskId": task_id, "inputResponses": answers}, "update")
            probe.wait(task_id, {"completed"})
            deadline = time.monotonic() + 15
            while stack.durable.status(task_id) != "SUCCEEDED":
                if time.monotonic() > deadline:
                    raise McpHttpError(f"{task_id}: its execution did not end")
                time.sleep(0.02)
            # The execution shows SUCCEEDED a moment before the meter's wrapper around its
            # last invocation records it (in the invoking thread): under load the median read
            # below could find none. Wait for it (a missing one still fails, in per_task).
            arn = stack.durable.arn_of(task_id)
            while meter.durable_now is not None or not any(
                i.function == "durable" and i.task_id == arn for i in meter.invocations
            ):
                if time.monotonic() > deadline:
                    break
                time.sleep(0.01)
            return task_id

        plain, asking, naps = [], [], []
        for _ in range(repeats):
            plain.append(run("durable_plain", {}, "create"))
            probe.rpc("tasks/get", {"taskId": plain[-1]}, "get")
            asking.append(run("durable_asking", {}, "create-asking", answer=True))
            naps.append(run("durable_nap", {"nap_seconds": 3600}, "create-nap"))
        operations = [
            statistics.median(durable_operations(stack, t) for t in tasks)
            for tasks in (plain, asking, naps)
        ]
    api: dict[str, list[Invocation]] = {}
    durable: dict[str, list[Invocation]] = {}
    for invocation in meter.invocations:
        if invocation.function == "api":
            api.setdefault(invocation.label, []).append(invocation)
        else:
            name = stack.durable.name_of(invocation.task_id) or invocation.task_id
            durable.setdefault(name, []).append(invocation)

    def per_task(tasks: list[str]) -> list[Op]:
        """The median task's invocations. Their number may vary: an answer that lands while
        the invocation that asked still runs is read by that invocation (one fewer)."""
        counts = [len(durable.get(t, [])) for t in tasks]
        count = math.ceil(statistics.median(counts))
        if count == 0:
            raise McpHttpError("a durable task was never invoked")
        return [
            median_op([ran[i] for t in tasks if len(ran := durable.get(t, [])) > i])
            for i in range(count)
        ]

    return DurableMeasured(
        create=median_op(api["create"]),
        get=median_op(api["get"]),
        update=median_op(api["update"]),
        plain_invocations=per_task(plain),
        asking_invocations=per_task(asking),
        nap_invocations=per_task(naps),
        plain_ops=int(operations[0]),
        asking_ops=int(operations[1]),
        nap_ops=int(operations[2]),
    )


# -- the model -----------------------------------------------------------------------------------


@dataclass
class DurableBill(Bill):
    durable_ops: int = 0

    def lines(self) -> dict[str, float]:
        found = super().lines()
        found["durable operations"] = self.durable_ops * DURABLE_OP_PRICE
        return found


def durable_work(b: DurableBill, m: DurableMeasured, asks: bool, work_s: float) -> None:
    """The create, the durable invocations (the last one does the work), the answer."""
    b.add(m.create)
    invocations = m.asking_invocations if asks else m.plain_invocations
    for index, op in enumerate(invocations):
        last = index == len(invocations) - 1
        b.add(op, waiting_s=work_s if last else 0.0, request=False)
    if asks:
        b.add(m.update)
    b.durable_ops += m.asking_ops if asks else m.plain_ops


def durable_bill(case: Case, m: DurableMeasured, listen_open: Op) -> DurableBill:
    b = DurableBill()
    durable_work(b, m, case.asks, case.work_s)
    line = timeline(case)  # the same schedule as the other paths
    if case.listening:  # the listen windows of `cost_model.bill`: their own work is the API's
        for window in windows(line, PACED):
            b.add(listen_open, waiting_s=window.length_s)
            b.rru += math.ceil(window.length_s / STORE_POLL_S)
            for _ in range(window.gets):
                b.add(m.get)
    else:
        for _ in range(polls(line, adaptive=True)):
            b.add(m.get)
    return b


def job_bills(m: DurableMeasured, sfn: Measured) -> dict[str, tuple[float, float]]:
    """Work only (no client polling): the 2-hour job and the day's sleep, per runner."""
    job = DurableBill()
    job.add(m.create)
    step = m.plain_invocations[-1]
    for _ in range(JOB_STEPS):
        job.add(step, waiting_s=JOB_STEP_S, request=False)
    job.durable_ops += 1 + JOB_STEPS
    sfn_job = Bill(transitions=JOB_STEPS + 1)
    sfn_job.add(sfn.create)
    for _ in range(JOB_STEPS):
        sfn_job.add(sfn.leg_done, waiting_s=JOB_STEP_S, request=False)
    nap = DurableBill()
    nap.add(m.create)
    for op in m.nap_invocations:
        nap.add(op, request=False)
    nap.durable_ops += m.nap_ops
    sfn_nap = Bill(transitions=4)  # Task, Wait, Task, and the end
    sfn_nap.add(sfn.create)
    sfn_nap.add(sfn.leg_done, request=False)
    sfn_nap.add(sfn.leg_done, request=False)
    return {
        f"a 2-hour job in {JOB_STEPS} steps": (job.total, sfn_job.total),
        "one day's sleep": (nap.total, sfn_nap.total),
    }


def polling_cost(seconds: float, m: DurableMeasured) -> tuple[int, float]:
    gets = polls(Timeline(None, None, seconds), adaptive=True)
    b = Bill()
    for _ in range(gets):
        b.add(m.get)
    return gets, b.total


# -- the report ----------------------------------------------------------------------------------

SMOKE = {"durable_repeats": 1}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--durable-repeats",
        type=int,
        default=3,
        help="durable: tasks measured per tool (default 3)",
    )


def calls_text(op: Op) -> str:
    return ", ".join(op.calls) or "-"


def main(args: argparse.Namespace) -> int:
    repeats = max(1, args.durable_repeats)
    try:
        m = measure_durable(repeats)
        others = {path: measure_path(path, 1) for path in ("step_functions", "direct")}
    except McpHttpError as exc:
        print(f"FAILED {exc}")
        return 1
    print(
        f"prices: {PRICES_AS_OF}; durable operations ${DURABLE_OP_PRICE * 1e6:.2f} a million "
        f"({DURABLE_PRICE_SOURCE})"
    )
    print("AWS calls per operation, durable runner (median; billed ms after the CPU scale):")
    rows = {
        "tools/call (create)": [m.create],
        "tasks/get": [m.get],
        "tasks/update (resumes)": [m.update],
        "durable invocations, no input": m.plain_invocations,
        "durable invocations, 1 question": m.asking_invocations,
        "durable invocations, 1 sleep": m.nap_invocations,
    }
    for name, ops in rows.items():
        for index, op in enumerate(ops):
            label = name if index == 0 else ""
            print(
                f"   {label:<34}{op.seconds * 1000:>7.1f} ms {op.billed_ms():>5} billed  "
                f"{calls_text(op)}"
            )
    print(
        f"durable operations per task: {m.plain_ops} without input, {m.asking_ops} with one "
        f"question, {m.nap_ops} with one sleep (the start, each step, wait and callback)"
    )
    print()
    print("cost per million tasks:")
    print(f"{'case':<44}{'Step Functions':>16}{'direct':>12}{'durable':>12}{'durable/direct':>16}")
    for case in CASES:
        sfn = bill(case, others["step_functions"], "step_functions").total
        direct = bill(case, others["direct"], "direct").total
        durable = durable_bill(case, m, others["direct"].listen_open).total
        print(
            f"{case.number}. {case.name:<41}{per_million(sfn):>16}{per_million(direct):>12}"
            f"{per_million(durable):>12}{durable / direct:>16.2f}"
        )
    for name, (durable, sfn_total) in job_bills(m, others["step_functions"]).items():
        sfn_text = per_million(sfn_total)
        print(
            f"   {name + ' (work only)':<41}{sfn_text:>16}{'none':>12}"
            f"{per_million(durable):>12}{'-':>16}"
        )
    print(
        "   (Step Functions: a declared workflow of Lambda states, modelled; direct: a leg runs "
        "at most 15 minutes and holds compute while it waits, so neither fits one)"
    )
    for name, seconds in (("2 hours", JOB_STEPS * JOB_STEP_S), ("a day", DAY_S)):
        gets, cost = polling_cost(seconds, m)
        print(
            f"   a client polling for {name} (at most every {CEILING_MS // 1000} s): {gets} "
            f"tasks/get, {per_million(cost)} per million tasks, whatever runs the task"
        )
    return 0
