"""Races forced step by step: one caller is held between two calls while another goes first.

Each test names the interleaving it exercises and asserts the one outcome it must have. The
in-memory store and the recording runner stand in for DynamoDB and Step Functions; the
contract suite holds the DynamoDB store to the same rules.
"""

from __future__ import annotations

import pytest

from mcp_tasks_aws.tasks.worker import settle_lost_execution
from tasks.domain import ALICE, Domain, accept, pause_before


def parked(domain: Domain, tool: str = "confirm", token: str = "tok-1") -> str:
    task_id = domain.create(tool, {"name": "notes.txt"} if tool == "confirm" else {})
    assert domain.run_leg(task_id, token) == "parked"
    return task_id


ANSWER = {"confirm": accept(ok=True)}


# -- update vs cancel --------------------------------------------------------------------------


def test_cancel_after_the_answer_and_its_resume_ends_cancelled() -> None:
    domain = Domain()
    task_id = parked(domain)
    domain.service.update(ALICE, task_id, ANSWER)
    domain.service.cancel(ALICE, task_id)
    # The resumed leg starts after the cancel: it only ends the execution
    assert domain.run_leg(task_id, "tok-2") == "done"
    record = domain.record(task_id)
    assert (record.status, record.result) == ("cancelled", None)
    assert domain.runner.named("resume") == ["tok-1"]
    assert domain.runner.named("stop") == [task_id]  # nothing outstanding: stop, not interrupt


def test_answer_after_the_cancel_is_acknowledged_and_ignored() -> None:
    domain = Domain()
    task_id = parked(domain)
    domain.service.cancel(ALICE, task_id)
    domain.service.update(ALICE, task_id, ANSWER)
    record = domain.record(task_id)
    assert (record.status, record.answers) == ("cancelled", {})
    assert domain.runner.named("interrupt") == ["tok-1"]
    assert domain.runner.named("resume") == []


def test_cancel_between_the_answer_and_its_resume_ends_cancelled() -> None:
    # Given an update held after storing its answer, just before it resumes the execution
    domain = Domain()
    task_id = parked(domain)
    with pause_before(
        domain.runner, "resume", lambda: domain.service.update(ALICE, task_id, ANSWER)
    ) as update:
        # When the cancel lands in between
        domain.service.cancel(ALICE, task_id)
        update.resume()
    # Then the resumed leg finds the task cancelled, and the outcome is cancelled
    assert domain.run_leg(task_id, "tok-2") == "done"
    record = domain.record(task_id)
    assert (record.status, record.result) == ("cancelled", None)


def test_answer_between_the_cancel_marker_and_the_interrupt_is_ignored() -> None:
    domain = Domain()
    task_id = parked(domain)
    with pause_before(
        domain.runner, "interrupt", lambda: domain.service.cancel(ALICE, task_id)
    ) as cancel:
        domain.service.update(ALICE, task_id, ANSWER)
        cancel.resume()
    record = domain.record(task_id)
    assert (record.status, record.answers) == ("cancelled", {})
    assert domain.runner.named("resume") == []
    assert domain.runner.named("interrupt") == ["tok-1"]


# -- cancel vs completion ----------------------------------------------------------------------


def test_cancel_before_the_outcome_is_written_wins_and_the_outcome_is_dropped() -> None:
    domain = Domain()
    task_id = domain.create("echo", {"text": "hi"})
    with pause_before(
        domain.store, "apply:complete", lambda: domain.run_leg(task_id, "tok")
    ) as leg:
        domain.service.cancel(ALICE, task_id)
        assert leg.resume() == "done"
    record = domain.record(task_id)
    assert (record.status, record.result) == ("cancelled", None)
    assert domain.runner.named("end_leg") == ["tok"]


def test_cancel_after_the_outcome_is_written_is_acknowledged_and_changes_nothing() -> None:
    domain = Domain()
    task_id = domain.create("echo", {"text": "hi"})
    with pause_before(
        domain.store, "apply:cancel", lambda: domain.service.cancel(ALICE, task_id)
    ) as cancel:
        domain.run_leg(task_id, "tok")
        cancel.resume()
    record = domain.record(task_id)
    assert record.status == "completed"
    assert record.result == {"content": [{"type": "text", "text": "hi"}]}
    assert domain.runner.named("stop") == []


def test_cancel_after_a_report_was_read_stops_the_tool_at_its_next_report() -> None:
    domain = Domain()
    task_id = domain.create("reporting")
    with pause_before(domain.store, "apply:report", lambda: domain.run_leg(task_id, "tok")) as leg:
        domain.service.cancel(ALICE, task_id)
        assert leg.resume() == "done"
    record = domain.record(task_id)
    assert (record.status, record.status_message, record.result) == (
        "cancelled",
        "Cancelled at the client's request",
        None,
    )


# -- duplicate and stale updates ---------------------------------------------------------------


def test_two_identical_updates_store_one_answer_and_resume_once() -> None:
    domain = Domain()
    task_id = parked(domain)
    with pause_before(
        domain.store, "apply:answer", lambda: domain.service.update(ALICE, task_id, ANSWER)
    ) as first:
        domain.service.update(ALICE, task_id, {"confirm": accept(ok=False)})
        first.resume()
    record = domain.record(task_id)
    assert record.answers == {"confirm": accept(ok=False)}  # the one that landed first
    # The held update also sees nothing outstanding and resumes again: the token is used up
    # already, so the execution moves on once.
    assert domain.runner.named("resume") == ["tok-1", "tok-1"]
    assert domain.runner.used_tokens == {"tok-1"}


def test_an_answer_to_an_earlier_round_is_ignored() -> None:
    # Given a task that asked two rounds of questions (first, then second after the answer)
    domain = Domain()
    task_id = parked(domain, "two_questions")
    domain.service.update(ALICE, task_id, {"first": accept(ok=True), "second": accept(ok=True)})
    domain.run_leg(task_id)
    before = domain.record(task_id)
    # When a late duplicate of the first round arrives
    domain.service.update(ALICE, task_id, {"first": accept(ok=False)})
    # Then nothing changes
    assert domain.record(task_id) == before


# -- a worker that dies, a retried leg ---------------------------------------------------------


def test_a_worker_that_dies_after_writing_its_outcome_leaves_it_for_good() -> None:
    # Given a leg whose final call to the execution fails (the worker dies there)
    domain = Domain()
    task_id = domain.create("echo", {"text": "hi"})
    domain.runner.failing.add("end_leg")
    with pytest.raises(RuntimeError):
        domain.run_leg(task_id, "tok")
    # When the execution times out and the reconciler settles it
    assert settle_lost_execution(domain.store, task_id, "TIMED_OUT", domain.clock) == "unchanged"
    # Then the outcome the worker wrote stands
    record = domain.record(task_id)
    assert (record.status, record.result) == (
        "completed",
        {"content": [{"type": "text", "text": "hi"}]},
    )


def test_a_retried_leg_that_completes_second_records_nothing() -> None:
    domain = Domain()
    task_id = domain.create("echo", {"text": "first"})
    with pause_before(
        domain.store, "apply:complete", lambda: domain.run_leg(task_id, "tok-a")
    ) as a:
        assert domain.run_leg(task_id, "tok-b") == "done"
        assert a.resume() == "done"
    record = domain.record(task_id)
    assert (record.status, record.version) == ("completed", 2)
    assert sorted(domain.runner.named("end_leg")) == ["tok-a", "tok-b"]


def test_a_retried_leg_that_parks_second_leaves_the_first_parking() -> None:
    domain = Domain()
    task_id = domain.create("confirm", {"name": "x"})
    with pause_before(domain.store, "apply:park", lambda: domain.run_leg(task_id, "tok-a")) as a:
        assert domain.run_leg(task_id, "tok-b") == "parked"
        assert a.resume() == "done"  # fenced out: its leg number moved on
    record = domain.record(task_id)
    assert (record.status, record.task_token, record.leg) == ("input_required", "tok-b", 1)
    assert domain.runner.named("end_leg") == ["tok-a"]


def test_a_reconciler_that_runs_during_a_leg_wins_and_the_leg_outcome_is_dropped() -> None:
    # A leg timed out (the reconciler fails the task) while the Lambda still ran
    domain = Domain()
    task_id = domain.create("echo", {"text": "late"})
    with pause_before(
        domain.store, "apply:complete", lambda: domain.run_leg(task_id, "tok")
    ) as leg:
        assert settle_lost_execution(domain.store, task_id, "TIMED_OUT", domain.clock) == "failed"
        leg.resume()
    record = domain.record(task_id)
    assert (record.status, record.result) == ("failed", None)
