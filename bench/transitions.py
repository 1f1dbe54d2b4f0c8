"""Step Functions state transitions per task (what Standard workflows bill), embedded stack.

Each task runs as one execution named after the task. After the task ends and its execution
has finished, the execution's history is read and its `*StateEntered` events counted (one per
state transition). Cases: slow_compute with seconds 0 (one leg; target <= 3) and
confirm_delete with one round of input (two legs; target <= 3 + 2). A MISS is reported, not
failed; a task or execution that does not end as expected fails the section.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from aws_calls import Harness, embedded_stack
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


def measure(h: Harness) -> list[Case]:
    client = h.client
    task_id = task_id_of(client.call_tool("slow_compute", {"seconds": 0, "label": "sfn"}))
    client.wait_for_task(task_id, {"completed"})
    cases = [case(h, "slow_compute (seconds 0)", 3, task_id)]

    task_id = task_id_of(client.call_tool("confirm_delete", {"filename": "notes.txt"}))
    waiting = client.wait_for_task(task_id, {"input_required"}, also="inputRequests")
    answers = {
        key: {"action": "accept", "content": {"confirm": True}} for key in waiting["inputRequests"]
    }
    client.request("tasks/update", {"taskId": task_id, "inputResponses": answers})
    done = client.wait_for_task(task_id, {"completed"})
    text = done.get("result", {}).get("content", [{}])[0].get("text", "")
    if text != "Deleted notes.txt.":
        raise McpHttpError(f"confirm_delete answered {text!r}")
    cases.append(case(h, "confirm_delete (1 input round)", 3 + 2, task_id))
    return cases


def main(args: argparse.Namespace) -> int:
    try:
        with embedded_stack() as harness:
            cases = measure(harness)
    except McpHttpError as exc:
        print(f"FAILED {exc}")
        return 1
    print("Step Functions state transitions per task (*StateEntered events of its execution)")
    width = max(len(c.name) for c in cases) + 2
    print(f"{'task':<{width}}{'transitions':>11}{'events':>8}  {'target':<7} verdict  states")
    for c in cases:
        states = " > ".join(c.entered)
        print(
            f"{c.name:<{width}}{len(c.entered):>11}{c.events:>8}  {'<= ' + str(c.target):<7} "
            f"{c.verdict:<8} {states}"
        )
    return 0
