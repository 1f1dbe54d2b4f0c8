"""Running legs and settling lost executions, on the in-memory store (no moto)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from mcp_tasks_aws.protocol.jsonrpc import MAX_RESULT_BYTES
from mcp_tasks_aws.tasks.exceptions import TaskTooLarge
from mcp_tasks_aws.tasks.reconcile import settle_lost_execution
from support.domain import ALICE, Domain, accept, side_effects


def test_a_leg_that_returns_completes_the_task_and_ends_the_execution() -> None:
    domain = Domain()
    task_id = domain.create("echo", {"text": "hi"})
    assert domain.run_leg(task_id, "tok") == "done"
    record = domain.record(task_id)
    assert record.status == "completed"
    assert record.result == {"content": [{"type": "text", "text": "hi"}]}
    assert domain.runner.named("end_leg") == ["tok"]


def test_a_question_parks_the_task_on_the_token_and_the_answer_replays_it() -> None:
    domain = Domain()
    task_id = domain.create("confirm", {"name": "notes.txt"})
    assert domain.run_leg(task_id, "tok-1") == "parked"
    record = domain.record(task_id)
    assert (record.status, record.task_token, record.leg) == ("input_required", "tok-1", 1)
    assert record.input_requests["confirm"]["method"] == "elicitation/create"
    assert domain.runner.named("end_leg") == []  # the execution waits, holding no compute
    domain.service.update(ALICE, task_id, {"confirm": accept(ok=True)})
    assert domain.run_leg(task_id, "tok-2") == "done"
    assert domain.record(task_id).result == {
        "content": [{"type": "text", "text": "notes.txt: True"}]
    }


def test_a_step_before_a_question_runs_once_across_replays() -> None:
    domain = Domain()
    side_effects.clear()
    task_id = domain.create("charge_then_confirm", {"label": "order-7"})
    assert domain.run_leg(task_id) == "parked"
    domain.service.update(ALICE, task_id, {"confirm": accept(ok=True)})
    assert domain.run_leg(task_id) == "done"
    assert side_effects == ["order-7"]
    text = domain.record(task_id).result["content"][0]["text"]  # type: ignore[index]
    assert text == "charged order-7; ok=True"


def test_a_tool_bug_completes_with_is_error_and_a_protocol_fault_fails() -> None:
    domain = Domain()
    bug = domain.create("crashing")
    fault = domain.create("protocol_fault")
    domain.run_leg(bug)
    domain.run_leg(fault)
    completed, failed = domain.record(bug), domain.record(fault)
    assert (completed.status, completed.result["isError"]) == ("completed", True)  # type: ignore[index]
    assert (failed.status, failed.error) == (
        "failed",
        {"code": -32603, "message": "the backend refused"},
    )


def test_a_leg_of_an_ended_or_missing_task_only_ends_the_execution() -> None:
    domain = Domain()
    task_id = domain.create("echo", {"text": "hi"})
    domain.service.cancel(ALICE, task_id)
    assert domain.run_leg(task_id, "tok-a") == "done"
    assert domain.run_leg("0" * 32, "tok-b") == "done"
    assert domain.record(task_id).status == "cancelled"
    assert domain.runner.named("end_leg") == ["tok-a", "tok-b"]


def test_an_expired_task_fails_instead_of_running() -> None:
    domain = Domain()
    task_id = domain.create("echo", {"text": "hi"})
    domain.clock.advance(3_600_000)
    domain.run_leg(task_id)
    record = domain.record(task_id)
    assert (record.status, record.error) == (
        "failed",
        {"code": -32603, "message": "The task expired"},
    )


def test_a_report_after_cancel_stops_the_tool_and_records_nothing() -> None:
    domain = Domain()
    task_id = domain.create("reporting")
    domain.service.cancel(ALICE, task_id)
    # The leg read the record before the cancel landed: its first report notices
    stale = replace(domain.record(task_id), status="working")  # the leg's view of the task
    assert domain.legs._run_leg(stale, "tok") == (True,)  # over: its write was refused
    stored = domain.record(task_id)
    assert (stored.status, stored.result) == ("cancelled", None)


@pytest.mark.parametrize("execution_status", ["FAILED", "TIMED_OUT", "ABORTED"])
def test_a_lost_execution_fails_an_active_task_once(execution_status: str) -> None:
    domain = Domain()
    task_id = domain.create("echo", {"text": "hi"})
    assert settle_lost_execution(domain.store, task_id, execution_status, domain.clock) == "failed"
    record = domain.record(task_id)
    assert record.status == "failed"
    assert execution_status.lower() in (record.error or {})["message"]
    # A second delivery of the same event changes nothing
    assert (
        settle_lost_execution(domain.store, task_id, execution_status, domain.clock) == "unchanged"
    )
    assert domain.record(task_id).version == record.version


@pytest.mark.parametrize("ending", ["completed", "cancelled"])
def test_a_lost_execution_leaves_an_ended_task_alone(ending: str) -> None:
    domain = Domain()
    task_id = domain.create("echo", {"text": "hi"})
    if ending == "completed":
        domain.run_leg(task_id)
    else:
        domain.service.cancel(ALICE, task_id)
    before = domain.record(task_id)
    assert settle_lost_execution(domain.store, task_id, "ABORTED", domain.clock) == "unchanged"
    assert domain.record(task_id) == before
    assert settle_lost_execution(domain.store, "f" * 32, "FAILED", domain.clock) == "unchanged"


# -- results and the room they take --------------------------------------------------------------


def test_a_result_too_large_to_ever_read_back_completes_as_a_tool_error() -> None:
    domain = Domain()
    task_id = domain.create("big", {"size": MAX_RESULT_BYTES + 10})
    domain.run_leg(task_id)
    record = domain.record(task_id)
    assert record.status == "completed"
    view = domain.service.get(ALICE, task_id)
    assert view.result is not None
    assert view.result["isError"] is True
    assert "a task result may be at most 4.0 MB" in view.result["content"][0]["text"]


def test_a_result_goes_to_the_result_store_when_the_item_has_no_room_left() -> None:
    # Given a store that says this record's item has room for 100 bytes only
    domain = Domain()
    domain.legs.result_room = lambda record: 100
    task_id = domain.create("echo", {"text": "y" * 500})
    domain.run_leg(task_id)
    record = domain.record(task_id)
    # Then the result was offloaded, kept at least as long as the task
    assert record.result is None
    assert record.result_ref == f"results/{task_id}.json"
    assert domain.results.kept_until[record.result_ref] == record.expires_at
    assert domain.service.get(ALICE, task_id).result == {
        "content": [{"type": "text", "text": "y" * 500}]
    }


@pytest.mark.parametrize("room", [10_000, 10])
def test_a_tool_error_is_known_without_its_result_inline_or_offloaded(room: int) -> None:
    domain = Domain()
    domain.legs.result_room = lambda record: room
    task_id = domain.create("crashing")
    domain.run_leg(task_id)
    record = domain.record(task_id)
    assert (record.status, record.tool_error) == ("completed", True)
    assert (record.result_ref is not None) is (room == 10)
    assert record.summary().tool_error is True


def test_a_result_the_store_refuses_as_too_large_is_offloaded_after_all() -> None:
    domain = Domain()
    task_id = domain.create("echo", {"text": "fits, says the estimate"})
    refuse_once = TooLargeOnce(domain)
    domain.run_leg(task_id)
    assert refuse_once.refused == 1
    record = domain.record(task_id)
    assert (record.status, record.result, record.result_ref) == (
        "completed",
        None,
        f"results/{task_id}.json",
    )


class TooLargeOnce:
    """Makes the store refuse the first `complete` write as too large (DynamoDB's 400 KB)."""

    def __init__(self, domain: Domain) -> None:
        self.refused = 0
        original = domain.store.apply

        def apply(task_id: str, guard: Any, changes: Any) -> Any:
            if changes.move == "complete" and not self.refused:
                self.refused += 1
                raise TaskTooLarge(task_id)
            return original(task_id, guard, changes)

        domain.store.apply = apply  # type: ignore[method-assign]
