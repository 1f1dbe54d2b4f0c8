"""Task handles (docs/handles.md): what following a long tool through `task_status` takes.

Three figures, for a client that does not speak tasks:

1. **Tool calls** a handle-following client needs for a 2-minute task (no input): the call
   that answers with the handle, then `task_status` until the tool's own result. *With
   `waitSeconds`* (what the handle's text asks for: the inline budget,
   `MCP_TASKS_INLINE_BUDGET_MS`) each call waits until the task changes, read every
   `MCP_TASKS_LISTEN_POLL_MS`, or the budget ends; *without*, the client calls again after the
   interval the server suggests (`pollIntervalMs`, the age-based rule `tasks/get` pollers
   get). Both come from the server's own settings and poll rule (`cost_model.hint`), on a
   simulated clock: no 2-minute wait.
2. **AWS calls per `task_status`**, counted on the embedded stack (the API function's own
   clients, one request at a time, as `aws_calls` counts them), direct path: no wait on a
   working task, `waitSeconds: 1` on a working task, on a completed task; and `tasks/get`
   beside them.
3. **Cost per million** 2-minute tasks followed through handles (with and without
   `waitSeconds`) against the same task polled through `tasks/get` by a task-aware client, with
   the cost model of `costs.py` (`cost_model.bill`, its prices and CPU scale; operations
   measured on the direct path by `costs.measure_path`). A waiting `task_status` bills the API
   function for as long as it waits, as a listen window does.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from typing import Any

from aws_calls import Harness, embedded_stack
from common import PROTOCOL_VERSION
from cost_model import LEG_OVERHEAD_S, STORE_POLL_S, Bill, Case, Measured, Op, Timeline, bill, polls
from costs import Meter, measure_path, median_op, per_million
from mcp_client import TASK_CAPABILITIES, McpHttpError

from mcp_tasks_aws.config import Settings
from mcp_tasks_aws.local.apigw_emulator import LocalLambdaContext, build_event

TASK_SECONDS = 120.0
BUDGET_S = Settings().inline_budget_ms / 1000
WAIT_PROBE_S = 1
CASE = Case(5, "2 min task, no input, polling tasks/get", TASK_SECONDS, False, False)


# -- figure 1: tool calls ------------------------------------------------------------------------


def status_windows(task_s: float, budget_s: float = BUDGET_S) -> list[float]:
    """The waits of a client calling `task_status` with `waitSeconds` = the budget, one after
    the other: each ends at the task's end (seen at the next read) or after the budget."""
    ends_at = task_s + LEG_OVERHEAD_S
    windows, t = [], 0.0
    while t < ends_at:
        left = ends_at - t
        length = budget_s if left >= budget_s else math.ceil(left / STORE_POLL_S) * STORE_POLL_S
        windows.append(length)
        t += length
    return windows


def calls_with_wait(task_s: float) -> int:
    return len(status_windows(task_s))


def calls_without_wait(task_s: float) -> int:
    """`task_status` calls of a client that waits each suggested interval in between (the
    server's age-based `pollIntervalMs`, as for `tasks/get`)."""
    return polls(Timeline(None, None, task_s + LEG_OVERHEAD_S), adaptive=True)


# -- figure 2: AWS calls per task_status ---------------------------------------------------------


class PlainProbe:
    """Requests to the API handler in this thread, metered, declaring `capabilities`."""

    def __init__(self, harness: Harness, meter: Meter) -> None:
        self.h = harness
        self.meter = meter
        self._ids = 0

    def rpc(
        self, method: str, params: dict[str, Any], label: str, capabilities: dict[str, Any]
    ) -> dict[str, Any]:
        self._ids += 1
        meta = {
            "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
            "io.modelcontextprotocol/clientCapabilities": capabilities,
        }
        body = {"jsonrpc": "2.0", "id": self._ids, "method": method}
        body["params"] = {**params, "_meta": meta}
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
        message: dict[str, Any] = json.loads(text)
        if response["statusCode"] != 200 or "result" not in message:
            raise McpHttpError(f"{method}: {text[:300]}")
        result: dict[str, Any] = message["result"]
        return result

    def status(self, task_id: str, label: str, wait_s: float = 0) -> dict[str, Any]:
        arguments: dict[str, Any] = {"taskId": task_id}
        if wait_s:
            arguments["waitSeconds"] = wait_s
        params = {"name": "task_status", "arguments": arguments}
        return self.rpc("tools/call", params, label, {})


def measure_status(repeats: int) -> dict[str, Op]:
    """Median duration and calls of each `task_status` kind (and `tasks/get`), direct path."""
    meter = Meter()
    with embedded_stack("direct") as h:
        app = h.stack.api_app
        for service in ("dynamodb", "stepfunctions", "lambda", "s3"):
            meter.hook(app.clients.get(service))
        probe = PlainProbe(h, meter)
        for _ in range(repeats):
            # A handle, for what answering with one costs.
            handle = probe.rpc(
                "tools/call",
                {"name": "confirm_delete", "arguments": {"filename": "bench.txt"}},
                "handle",
                {},
            )
            if "Started task" not in handle["content"][0]["text"]:
                raise McpHttpError(f"no handle: {handle}")
            # A working task (task_status follows any task of its caller), then done.
            created = probe.rpc(
                "tools/call",
                {"name": "slow_compute", "arguments": {"seconds": 3, "label": "bench"}},
                "create",
                TASK_CAPABILITIES,
            )
            task_id = created["taskId"]
            h.client.wait_for_task(task_id, {"working"})
            probe.rpc("tasks/get", {"taskId": task_id}, "tasks/get", TASK_CAPABILITIES)
            shown = probe.status(task_id, "no wait")
            if shown["structuredContent"]["status"] != "working":
                raise McpHttpError(f"task_status of a working task: {shown}")
            probe.status(task_id, "wait", WAIT_PROBE_S)
            h.client.wait_for_task(task_id, {"completed"})
            done = probe.status(task_id, "completed")
            if done["content"][0]["text"] != "Computed bench after 3.0s.":
                raise McpHttpError(f"task_status of a completed task: {done}")
            # The handle's task waits for an answer no one gives: cancel it (not metered), or
            # its execution would hold the stack busy until the settle below gives up.
            asking = handle["structuredContent"]["taskId"]
            h.wait_held(asking)
            h.client.request("tasks/cancel", {"taskId": asking})
            h.client.wait_for_task(asking, {"cancelled"})
        h.settle()
    by_label: dict[str, list[Any]] = {}
    for invocation in meter.invocations:
        by_label.setdefault(invocation.label, []).append(invocation)
    return {label: median_op(found) for label, found in by_label.items()}


# -- figure 3: cost per million --------------------------------------------------------------


def handle_bill(m: Measured, status: Op, *, waiting: bool) -> Bill:
    """One 2-minute task followed through its handle: the call that answers with it (a task
    created as for a task-aware client), the tool's leg, and the task_status calls."""
    b = Bill(transitions=m.transitions_plain)
    b.add(m.create)
    b.add(m.leg_done, waiting_s=TASK_SECONDS, request=False)
    if waiting:
        for length in status_windows(TASK_SECONDS):
            b.add(status, waiting_s=length)
            b.rru += math.ceil(length / STORE_POLL_S)  # the wait's projected reads
    else:
        for _ in range(calls_without_wait(TASK_SECONDS)):
            b.add(status)
    return b


# -- the report ----------------------------------------------------------------------------------


SMOKE = {"handle_repeats": 1}
"""The smoke: one task_status call per kind."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--handle-repeats",
        type=int,
        default=3,
        help="handles: task_status calls measured per kind (default 3)",
    )


def main(args: argparse.Namespace) -> int:
    repeats = max(1, args.handle_repeats)
    with_wait, without = calls_with_wait(TASK_SECONDS), calls_without_wait(TASK_SECONDS)
    print(
        f"tool calls a handle-following client needs for a {TASK_SECONDS / 60:.0f}-minute task "
        f"(inline budget {BUDGET_S:g} s, reads every {STORE_POLL_S:g} s while waiting):"
    )
    print(f"   with waitSeconds={BUDGET_S:g}: 1 call + {with_wait} task_status = {1 + with_wait}")
    print(
        f"   without (the suggested pollIntervalMs, by age): 1 call + {without} task_status "
        f"= {1 + without}"
    )
    try:
        ops = measure_status(repeats)
        measured = measure_path("direct", repeats)
    except McpHttpError as exc:
        print(f"FAILED {exc}")
        return 1
    print()
    print("AWS calls per request (API function, direct path, median duration):")
    rows = (
        ("tools/call answering with a handle", "handle"),
        ("task_status, working task, no wait", "no wait"),
        (f"task_status, working task, waitSeconds={WAIT_PROBE_S}", "wait"),
        ("task_status, completed task (its result)", "completed"),
        ("tasks/get (task-aware client)", "tasks/get"),
    )
    for name, label in rows:
        op = ops[label]
        print(f"   {name:<48}{op.seconds * 1000:>7.1f} ms  {', '.join(op.calls) or '-'}")
    waited = ops["wait"]
    reads = sum(1 for c in waited.calls if c == "BatchGetItem")
    print(
        f"   (a wait reads the task's head once per {STORE_POLL_S:g} s step: {reads} projected "
        f"reads in {WAIT_PROBE_S} s; its GetItems are the first read and the read of the "
        "changed task)"
    )
    print()
    status_op = ops["no wait"]
    polled = bill(CASE, measured, "direct")
    followed = handle_bill(measured, status_op, waiting=True)
    followed_plain = handle_bill(measured, status_op, waiting=False)
    print(f"cost per million {TASK_SECONDS / 60:.0f}-minute tasks without input (direct path):")
    for name, b in (
        ("polled through tasks/get (task-aware client)", polled),
        (f"handle, task_status with waitSeconds={BUDGET_S:g}", followed),
        ("handle, task_status at the suggested interval", followed_plain),
    ):
        lines = ", ".join(f"{k} {per_million(v)}" for k, v in b.lines().items() if v >= 1e-9)
        print(f"   {name:<48}{per_million(b.total):>12}  ({b.requests} requests; {lines})")
    print(
        f"   handle with waitSeconds / tasks/get polling = {followed.total / polled.total:.2f}; "
        f"at the interval = {followed_plain.total / polled.total:.2f}"
    )
    median_wait = statistics.median(status_windows(TASK_SECONDS))
    print(
        f"   (a waiting task_status bills the API function for its wait, {median_wait:g} s "
        "each here: fewer model turns, more Lambda time)"
    )
    return 0
