"""How long a 2025-11-25 `tasks/result` window waits, by the task's age: while the task is young
(polled at its floor interval) it holds and reads the task's head each poll step; an older
task's window sends what is new and ends at once, its `retry` being the task's poll interval;
a task waiting for input still holds (a 2025-11-25 client comes back on its timer).

Over the real transport and the in-memory domain (300 ms windows, read every 20 ms); how often
a window read the task is counted on the service.
"""

from __future__ import annotations

from typing import Any

import pytest

from support.domain import Domain, tools
from support.legacy import LegacyClient, last_event_id, sse_events, task_transport


@pytest.fixture
def domain() -> Domain:
    return Domain()


@pytest.fixture
def reads(domain: Domain, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per head read a window makes."""
    counted: list[int] = []
    peek = domain.service.peek

    def counting_peek(owner: str, task_ids: list[str]) -> Any:
        counted.append(1)
        return peek(owner, task_ids)

    monkeypatch.setattr(domain.service, "peek", counting_peek)
    return counted


@pytest.fixture
def legacy(domain: Domain) -> LegacyClient:
    client = LegacyClient(task_transport(domain.service, tools))
    client.initialize()
    return client


def create(legacy: LegacyClient, tool: str, arguments: dict[str, Any]) -> str:
    params = {"name": tool, "arguments": arguments, "task": {}}
    task_id: str = legacy.result("tools/call", params)["task"]["taskId"]
    return task_id


def test_a_young_tasks_window_holds_and_reads_it(
    legacy: LegacyClient, domain: Domain, reads: list[int]
) -> None:
    task_id = create(legacy, "echo", {"text": "later"})
    domain.clock.advance(2_000)
    events = sse_events(legacy.request("tasks/result", {"taskId": task_id}))
    assert len(events) == 1  # the priming event: nothing happened
    assert events[0]["retry"] == 250  # a held window: come back soon
    assert len(reads) > 1


def test_an_older_tasks_window_ends_at_once_with_its_poll_interval_as_retry(
    legacy: LegacyClient, domain: Domain, reads: list[int]
) -> None:
    task_id = create(legacy, "echo", {"text": "later"})
    domain.clock.advance(45_000)  # polled every 4 s by now
    events = sse_events(legacy.request("tasks/result", {"taskId": task_id}))
    assert len(events) == 1
    assert events[0]["retry"] == 4_000
    assert reads == []  # no hold: the window read nothing more than the task it opened on


def test_an_older_task_that_ended_still_answers_its_result_on_the_next_window(
    legacy: LegacyClient, domain: Domain
) -> None:
    task_id = create(legacy, "echo", {"text": "later"})
    domain.clock.advance(45_000)
    first = legacy.request("tasks/result", {"taskId": task_id})
    domain.run_leg(task_id)
    resumed = legacy.resume(last_event_id(first))
    last = [e["data"] for e in sse_events(resumed) if "data" in e][-1]
    assert last["result"]["content"] == [{"type": "text", "text": "later"}]


def test_a_task_waiting_for_input_still_holds_its_window(
    legacy: LegacyClient, domain: Domain, reads: list[int]
) -> None:
    task_id = create(legacy, "confirm", {"name": "a.txt"})
    domain.run_leg(task_id)  # asks: the task waits for the answer
    domain.clock.advance(45_000)
    asked = legacy.request("tasks/result", {"taskId": task_id})  # sends the question, ends
    reads.clear()
    resumed = sse_events(legacy.resume(last_event_id(asked)))
    assert resumed[0]["retry"] == 250
    assert len(reads) > 1
