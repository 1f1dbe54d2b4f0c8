"""A start whose answer was lost (a timeout after the invoke or the execution started): if a
leg has moved the task on by the time the create tries to fail it, the task runs, and the
create acknowledges it instead of answering an error for a task that goes on unseen."""

from __future__ import annotations

import pytest

from mcp_tasks_aws.tasks.exceptions import TaskNotStarted
from support.domain import ALICE, CAPABILITIES, Domain, tools


def test_a_start_that_landed_and_was_claimed_is_acknowledged() -> None:
    domain = Domain(direct=True)

    def started_then_timed_out(task_id: str) -> None:
        domain.direct_legs.queued.append(task_id)
        domain.run_direct(task_id)  # the event ran before the answer came back
        raise TimeoutError("read timeout after the invoke was accepted")

    domain.direct_legs.start = started_then_timed_out  # type: ignore[method-assign]
    record = domain.service.create(ALICE, tools.tools["echo"], {"text": "hi"}, CAPABILITIES)
    assert domain.record(record.task_id).status == "completed"  # ran once, and is known


def test_a_start_that_did_not_land_still_fails_the_task() -> None:
    domain = Domain(direct=True)
    domain.direct_legs.failing = True
    with pytest.raises(TaskNotStarted):
        domain.service.create(ALICE, tools.tools["echo"], {"text": "hi"}, CAPABILITIES)
    (record,) = domain.store.all_records()
    assert record.status == "failed"


def test_a_hand_over_whose_start_fails_once_is_retried() -> None:
    # The execution is named after the task: starting it again is safe, so one fault does not
    # fail a task that asked its question.
    domain = Domain(direct=True)
    domain.legs.sleep = lambda _s: None
    task_id = domain.create("confirm", {"name": "x"})
    domain.runner.failing.add("start")
    assert domain.run_direct(task_id) == "handed_over"
    assert domain.runner.named("start") == [task_id, task_id]
    assert domain.record(task_id).status == "input_required"


def test_a_leg_whose_first_read_fails_once_is_retried() -> None:
    domain = Domain()
    domain.legs.sleep = lambda _s: None
    task_id = domain.create("echo", {"text": "hi"})
    failed: list[str] = []

    def once(primitive: str, _task_id: str) -> None:
        if primitive == "get" and not failed:
            failed.append(primitive)
            raise RuntimeError("injected read fault")

    domain.store.before_call = once
    assert domain.run_leg(task_id) == "done"
    assert failed == ["get"]
    assert domain.record(task_id).status == "completed"
