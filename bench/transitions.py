"""Step Functions state transitions per task (what Standard workflows bill), embedded stack.

A task that has an execution has one, named after the task. After the task ends and its
execution has finished, the execution's history is read and its `*StateEntered` events counted
(one per state transition). Cases, on both paths: slow_compute with seconds 0 (one leg;
target 0 on the direct path, where no execution exists, <= 3 on the Step Functions path) and
confirm_delete with one round of input (target <= 3 + 2 on both: on the direct path the first
leg runs without the machine, and the execution it starts only attaches its token before the
answer). A MISS is reported, not failed; a task or execution that does not end as expected
fails the section.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from aws_calls import PATHS, Harness, embedded_stack
from mcp_client import McpHttpError, task_id_of


@dataclass
class Case:
    name: str
    target: int
    entered: list[str]
    events: int
    status: str

    @property
    def verdict(self) -> str:
        return "PASS" if len(self.entered) <= self.target else "MISS"


def history(h: Harness, task_id: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"executionArn": h.execution_arn(task_id), "maxResults": 1000}
    for _ in range(100):  # bounded: 100 pages is far more than any task here has
        page = h.sfn.get_execution_history(**kwargs)
        events.extend(dict(event) for event in page["events"])
        if not page.get("nextToken"):
            break
        kwargs["nextToken"] = page["nextToken"]
    return events


def case(h: Harness, name: str, target: int, task_id: str) -> Case:
    if target == 0:  # the direct path: no execution may exist
        if h.has_execution(task_id):
            return Case(name, target, ["(an execution exists)"], 0, "UNEXPECTED")
        return Case(name, target, [], 0, "none")
    status = h.wait_execution_ended(task_id)
    if status != "SUCCEEDED":
        raise McpHttpError(f"{name}: execution ended {status}")
    events = history(h, task_id)
    entered = [
        str(e.get("stateEnteredEventDetails", {}).get("name", e["type"]))
        for e in events
        if str(e["type"]).endswith("StateEntered")
    ]
    return Case(name, target, entered, len(events), status)


def input_round(h: Harness, name: str, *, wait_for_token: bool) -> Case:
    """A confirm_delete task answered once: as a person would (the execution already waits
    on its token) or at once (possibly before the execution that a direct leg started holds
    the task)."""
    client = h.client
    task_id = task_id_of(client.call_tool("confirm_delete", {"filename": "notes.txt"}))
    waiting = client.wait_for_task(task_id, {"input_required"}, also="inputRequests")
    if wait_for_token:
        h.wait_held(task_id)
    answers = {
        key: {"action": "accept", "content": {"confirm": True}} for key in waiting["inputRequests"]
    }
    client.request("tasks/update", {"taskId": task_id, "inputResponses": answers})
    done = client.wait_for_task(task_id, {"completed"})
    text = done.get("result", {}).get("content", [{}])[0].get("text", "")
    if text != "Deleted notes.txt.":
        raise McpHttpError(f"confirm_delete answered {text!r}")
    return case(h, name, 3 + 2, task_id)


def measure(h: Harness, path: str) -> list[Case]:
    client = h.client
    task_id = task_id_of(client.call_tool("slow_compute", {"seconds": 0, "label": "sfn"}))
    client.wait_for_task(task_id, {"completed"})
    h.settle()
    cases = [case(h, "slow_compute (seconds 0)", 0 if path == "direct" else 3, task_id)]

    cases.append(input_round(h, "confirm_delete (1 input round)", wait_for_token=True))
    if path == "direct":
        # Answered before the execution attached its token: its first leg runs the tool.
        cases.append(input_round(h, "confirm_delete (answered at once)", wait_for_token=False))
    return cases


def main(args: argparse.Namespace) -> int:
    measured: dict[str, list[Case]] = {}
    try:
        for path in PATHS:
            with embedded_stack(path) as harness:
                measured[path] = measure(harness, path)
    except McpHttpError as exc:
        print(f"FAILED {exc}")
        return 1
    print("Step Functions state transitions per task (*StateEntered events of its execution)")
    for path, cases in measured.items():
        print(f"-- {PATHS[path]}")
        width = max(len(c.name) for c in cases) + 2
        print(f"{'task':<{width}}{'transitions':>11}{'events':>8}  {'target':<7} verdict  states")
        for c in cases:
            states = " > ".join(c.entered) or "(no execution)"
            print(
                f"{c.name:<{width}}{len(c.entered):>11}{c.events:>8}  "
                f"{'<= ' + str(c.target):<7} {c.verdict:<8} {states}"
            )
    return 0
