"""Load on the embedded stack: N concurrent clients, each running M tasks end to end.

Every client (a thread with its own HTTP client and its own caller identity) runs a fixed mix
of scenarios over the conformance tools, round robin:

- `answer`:  confirm_delete, wait for input_required, answer, wait for completed;
- `rounds`:  multi_input, answer one key, then the other, wait for completed;
- `cancel`:  slow_compute for 10 s, cancel it while it works, wait for cancelled;
- `plain`:   slow_compute for 0 s, wait for completed.

What is counted, from the clients' side and then from the table itself:
- created: `tools/call` answers that were a task; completed / cancelled: terminal statuses seen;
- lost: acknowledged tasks that never reached the status their scenario leads to within the
  deadline (must be 0);
- duplicated: tasks in the table that no client was given, or an id given twice (must be 0);
- p50 / p95 latency per operation (tools/call, tasks/get, tasks/update, tasks/cancel).

The numbers measure the emulation (moto in-process on this machine) as much as the design; the
counts are the point: nothing lost, nothing duplicated, under concurrency.
"""

from __future__ import annotations

import argparse
import base64
import json
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from common import median_ms, p90_ms
from mcp_client import TERMINAL, McpHttpClient, McpHttpError, task_id_of

SCENARIOS = ("answer", "rounds", "cancel", "plain")
EXPECTED = {
    "answer": "completed",
    "rounds": "completed",
    "cancel": "cancelled",
    "plain": "completed",
}
DEADLINE_S = 120.0
POLL_S = 0.05


SMOKE = {"load_clients": 2, "load_tasks": 1}
"""The smoke: two clients, one task each."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--load-clients", type=int, default=50, help="concurrent clients")
    parser.add_argument("--load-tasks", type=int, default=4, help="tasks per client")


def p95_ms(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[max(0, int(0.95 * len(ordered) + 0.999) - 1)] * 1000


@dataclass
class Tally:
    lock: threading.Lock = field(default_factory=threading.Lock)
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    created: list[str] = field(default_factory=list)
    ended: Counter[str] = field(default_factory=Counter)
    lost: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def timed(self, operation: str, action: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        started = time.perf_counter()
        try:
            return action()
        finally:
            with self.lock:
                self.latencies[operation].append(time.perf_counter() - started)


class Client:
    """One caller: its own identity (an unsigned JWT the local authorizer reads) and tally."""

    def __init__(self, url: str, index: int, tally: Tally) -> None:
        self.http = McpHttpClient(url)
        self.token = _jwt(f"load-client-{index}")
        self.tally = tally

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return self.tally.timed(method, lambda: self.http.request(method, params, self.token))

    def create(self, tool: str, arguments: dict[str, Any]) -> str:
        task_id = task_id_of(self.request("tools/call", {"name": tool, "arguments": arguments}))
        with self.tally.lock:
            self.tally.created.append(task_id)
        return task_id

    def wait(self, task_id: str, statuses: set[str], deadline: float) -> dict[str, Any] | None:
        while time.monotonic() < deadline:
            task = self.request("tasks/get", {"taskId": task_id})
            if task["status"] in statuses or task["status"] in TERMINAL:
                return task
            time.sleep(POLL_S)
        return None

    def run(self, scenario: str, deadline: float) -> None:
        answer = {"action": "accept", "content": {"confirm": True, "name": "Ada"}}
        if scenario == "answer":
            task_id = self.create("confirm_delete", {"filename": "load.txt"})
            task = self.wait(task_id, {"input_required"}, deadline)
            if task is not None and task["status"] == "input_required":
                (key,) = task["inputRequests"]
                self.request("tasks/update", {"taskId": task_id, "inputResponses": {key: answer}})
        elif scenario == "rounds":
            task_id = self.create("multi_input", {})
            for _ in range(2):
                task = self.wait(task_id, {"input_required"}, deadline)
                if task is None or task["status"] != "input_required":
                    break
                key = sorted(task["inputRequests"])[0]
                self.request("tasks/update", {"taskId": task_id, "inputResponses": {key: answer}})
                time.sleep(POLL_S)
        elif scenario == "cancel":
            task_id = self.create("slow_compute", {"seconds": 10, "label": "load"})
            self.wait(task_id, {"working"}, deadline)
            self.request("tasks/cancel", {"taskId": task_id})
        else:
            task_id = self.create("slow_compute", {"seconds": 0, "label": "load"})
        final = self.wait(task_id, TERMINAL, deadline)
        with self.tally.lock:
            if final is None or final["status"] != EXPECTED[scenario]:
                seen = final["status"] if final else "not ended"
                self.tally.lost.append(f"{task_id} ({scenario}: {seen})")
            else:
                self.tally.ended[final["status"]] += 1


def _jwt(subject: str) -> str:
    def b64(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    return f"{b64({'alg': 'none'})}.{b64({'sub': subject, 'iss': 'load'})}."


def main(args: argparse.Namespace) -> int:
    from mcp_tasks_aws.local.stack import EmbeddedStack

    clients_n, tasks_n = args.load_clients, args.load_tasks
    tally = Tally()
    with EmbeddedStack(host="127.0.0.1", env={"MCP_TASKS_TOOLS": "conformance"}) as stack:
        clients = [Client(stack.url, i, tally) for i in range(clients_n)]
        deadline = time.monotonic() + DEADLINE_S
        started = time.perf_counter()

        def work(index: int) -> None:
            for n in range(tasks_n):
                scenario = SCENARIOS[(index + n) % len(SCENARIOS)]
                try:
                    clients[index].run(scenario, deadline)
                except McpHttpError as exc:
                    with tally.lock:
                        tally.errors.append(f"{scenario}: {exc}")

        threads = [threading.Thread(target=work, args=(i,)) for i in range(clients_n)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(DEADLINE_S + 30)
        took = time.perf_counter() - started
        in_table = _task_ids_in_table(stack)
    given = Counter(tally.created)
    duplicated = [i for i, n in given.items() if n > 1] + sorted(in_table - set(given))
    print(
        f"{clients_n} clients x {tasks_n} tasks on the embedded stack, {took:.1f} s "
        f"({len(tally.created) / took:.1f} tasks/s)"
    )
    print(
        f"created {len(tally.created)}  completed {tally.ended['completed']}  "
        f"cancelled {tally.ended['cancelled']}  lost {len(tally.lost)}  "
        f"duplicated {len(duplicated)}  errors {len(tally.errors)}"
    )
    print(f"{'operation':<14}{'requests':>9}{'p50 ms':>9}{'p90 ms':>9}{'p95 ms':>9}")
    for operation in ("tools/call", "tasks/get", "tasks/update", "tasks/cancel"):
        samples = tally.latencies.get(operation, [])
        if samples:
            print(
                f"{operation:<14}{len(samples):>9}{median_ms(samples):>9.1f}"
                f"{p90_ms(samples):>9.1f}{p95_ms(samples):>9.1f}"
            )
    for problem in (tally.errors + tally.lost + duplicated)[:10]:
        print(f"  problem: {problem}")
    ok = not tally.lost and not duplicated and not tally.errors
    print("lost and duplicated must be 0:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


def _task_ids_in_table(stack: Any) -> set[str]:
    """Every task id the table holds (the list-change feed's item is not a task), read with a
    client of the bench's own (the functions' clients know only the operations they call)."""
    import boto3

    client = boto3.client("dynamodb", region_name="us-east-1")
    ids: set[str] = set()
    pages = client.get_paginator("scan").paginate(
        TableName=stack.aws.table_name, ProjectionExpression="taskId"
    )
    for page in pages:
        ids |= {item["taskId"]["S"] for item in page["Items"]}
    return {i for i in ids if not i.startswith("!")}
