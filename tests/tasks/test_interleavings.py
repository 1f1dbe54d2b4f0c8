"""Races forced step by step: one caller is held between two calls while another goes first.

Each test names the interleaving it exercises and asserts the one outcome it must have. The
in-memory store and the recording runner stand in for DynamoDB and Step Functions; the
contract suite holds the DynamoDB store to the same rules.
"""

from __future__ import annotations

import pytest

from mcp_tasks_aws.tasks.reconcile import settle_lost_direct_leg, settle_lost_execution
from support.domain import ALICE, Domain, accept, pause_before, side_effects


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
    # Given a leg whose invoke's answer was lost (Step Functions retried it: a second copy
    # runs with a new token) and which is about to park
    domain = Domain()
    task_id = domain.create("confirm", {"name": "x"})
    with pause_before(domain.store, "apply:park", lambda: domain.run_leg(task_id, "tok-a")) as a:
        domain.runner.retry("tok-a")
        # When the retried copy parks first
        assert domain.run_leg(task_id, "tok-b") == "parked"
        # Then the first is fenced out (its leg moved on), and it leaves the execution alone
        assert a.resume() == "done"
    record = domain.record(task_id)
    assert (record.status, record.task_token, record.leg) == ("input_required", "tok-b", 1)
    assert domain.runner.named("end_leg") == []
    # And the answer resumes the execution
    domain.service.update(ALICE, task_id, ANSWER)
    assert domain.runner.named("resume") == ["tok-b"]


def test_a_retried_leg_whose_first_copy_parked_first_takes_the_task_over() -> None:
    # Given a retried leg (its first copy's token is dead) that has read the task
    domain = Domain()
    task_id = domain.create("confirm", {"name": "x"})
    with pause_before(domain.store, "apply:park", lambda: domain.run_leg(task_id, "tok-b")) as b:
        domain.runner.retry("tok-a")
        # When the first copy, still running, parks first (with its dead token)
        assert domain.run_leg(task_id, "tok-a") == "parked"
        # Then the live copy, fenced out of its own park, holds the task instead of ending
        # the execution (which would leave the task waiting on a dead token for good)
        assert b.resume() == "parked"
    record = domain.record(task_id)
    assert (record.status, record.task_token, record.leg) == ("input_required", "tok-b", 1)
    assert domain.runner.named("end_leg") == []
    domain.service.update(ALICE, task_id, ANSWER)
    assert domain.runner.named("resume") == ["tok-b"]
    assert domain.run_leg(task_id, "tok-c") == "done"
    assert domain.record(task_id).status == "completed"


def test_a_stale_copy_of_a_leg_never_takes_the_task_back() -> None:
    # Given a task the live copy of a retried leg parked
    domain = Domain()
    task_id = domain.create("confirm", {"name": "x"})
    domain.runner.retry("tok-a")
    assert domain.run_leg(task_id, "tok-b") == "parked"
    # When the first copy (dead token) gets going only now: it finds the task waiting
    assert domain.run_leg(task_id, "tok-a") == "done"
    # Then it changed nothing, and told the execution nothing
    record = domain.record(task_id)
    assert (record.task_token, record.leg) == ("tok-b", 1)
    assert domain.runner.named("end_leg") == []


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


# -- the direct path: a first leg without a state machine --------------------------------------


def test_cancel_before_the_direct_leg_claims_means_the_tool_never_runs() -> None:
    domain = Domain(direct=True)
    side_effects.clear()
    task_id = domain.create("charge_then_confirm", {"label": "never"})
    with pause_before(domain.store, "apply:claim", lambda: domain.run_direct(task_id)) as leg:
        domain.service.cancel(ALICE, task_id)
        assert leg.resume() == "done"
    assert side_effects == []
    assert domain.record(task_id).status == "cancelled"
    assert domain.runner.calls == []


def test_cancel_while_the_direct_leg_runs_stops_it_at_its_next_report() -> None:
    domain = Domain(direct=True)
    task_id = domain.create("reporting")
    with pause_before(domain.store, "apply:report", lambda: domain.run_direct(task_id)) as leg:
        domain.service.cancel(ALICE, task_id)
        assert leg.resume() == "done"
    record = domain.record(task_id)
    assert (record.status, record.result) == ("cancelled", None)
    assert domain.runner.calls == []  # nothing to stop: no execution ever existed


def test_cancel_racing_a_direct_completion_ends_the_task_once() -> None:
    # Given a direct leg held just before it writes its outcome
    domain = Domain(direct=True)
    task_id = domain.create("echo", {"text": "hi"})
    with pause_before(domain.store, "apply:complete", lambda: domain.run_direct(task_id)) as leg:
        # When the cancel lands first, Then the outcome is dropped
        domain.service.cancel(ALICE, task_id)
        assert leg.resume() == "done"
    assert (domain.record(task_id).status, domain.record(task_id).result) == ("cancelled", None)
    # And the other way round: the outcome first, the cancel changes nothing
    other = domain.create("echo", {"text": "hi"})
    with pause_before(
        domain.store, "apply:cancel", lambda: domain.service.cancel(ALICE, other)
    ) as cancel:
        domain.run_direct(other)
        cancel.resume()
    assert domain.record(other).status == "completed"


def test_two_deliveries_of_one_event_run_the_tool_once() -> None:
    domain = Domain(direct=True)
    side_effects.clear()
    task_id = domain.create("charge_then_confirm", {"label": "dup"})
    with pause_before(domain.store, "apply:claim", lambda: domain.run_direct(task_id)) as first:
        assert domain.run_direct(task_id) == "handed_over"
        assert first.resume() == "done"  # its claim finds leg 0 gone
    assert side_effects == ["dup"]
    assert domain.runner.named("start") == [task_id]


def test_cancel_between_the_direct_park_and_the_execution_start_ends_cancelled() -> None:
    # Given a direct leg that parked and is about to start the execution
    domain = Domain(direct=True)
    task_id = domain.create("confirm", {"name": "x"})
    with pause_before(domain.runner, "start", lambda: domain.run_direct(task_id)) as leg:
        # When the cancel lands, Then it has no execution to release yet
        domain.service.cancel(ALICE, task_id)
        assert domain.runner.calls == []
        assert leg.resume() == "handed_over"
    # And the execution's first leg finds the task cancelled and ends at once
    assert domain.run_leg(task_id, "tok-1") == "done"
    record = domain.record(task_id)
    assert (record.status, record.task_token) == ("cancelled", None)
    assert domain.runner.named("end_leg") == ["tok-1"]


def test_the_last_answer_before_the_execution_attaches_runs_the_leg_at_once() -> None:
    # Given a task parked by its direct leg, and its execution's leg about to attach its token
    domain = Domain(direct=True)
    task_id = domain.create("confirm", {"name": "x"})
    domain.run_direct(task_id)
    with pause_before(
        domain.store, "apply:attach", lambda: domain.run_leg(task_id, "tok-1")
    ) as leg:
        # When the answer lands first: no token is there for the update to resume
        domain.service.update(ALICE, task_id, ANSWER)
        assert domain.runner.named("resume") == []
        # Then the attach is refused, and the leg runs with the answer instead of waiting
        assert leg.resume() == "done"
    record = domain.record(task_id)
    assert record.result == {"content": [{"type": "text", "text": "x: True"}]}
    assert domain.runner.named("end_leg") == ["tok-1"]


def test_the_answer_after_the_execution_attached_resumes_it() -> None:
    domain = Domain(direct=True)
    task_id = domain.create("confirm", {"name": "x"})
    domain.run_direct(task_id)
    with pause_before(
        domain.store, "apply:answer", lambda: domain.service.update(ALICE, task_id, ANSWER)
    ) as update:
        assert domain.run_leg(task_id, "tok-1") == "parked"
        update.resume()
    assert domain.runner.named("resume") == ["tok-1"]
    assert domain.run_leg(task_id, "tok-2") == "done"
    assert domain.record(task_id).status == "completed"


def test_a_partial_answer_before_the_attach_leaves_the_rest_outstanding_and_attaches() -> None:
    domain = Domain(direct=True)
    task_id = domain.create("two_questions")
    domain.run_direct(task_id)
    with pause_before(
        domain.store, "apply:attach", lambda: domain.run_leg(task_id, "tok-1")
    ) as leg:
        domain.service.update(ALICE, task_id, {"first": accept(ok=True)})
        assert leg.resume() == "parked"  # refused once, then attached for "second"
    record = domain.record(task_id)
    assert (set(record.input_requests), record.task_token) == ({"second"}, "tok-1")
    domain.service.update(ALICE, task_id, {"second": accept(ok=False)})
    assert domain.runner.named("resume") == ["tok-1"]


def test_a_direct_leg_that_times_out_fails_and_its_late_outcome_is_dropped() -> None:
    # The invoke timed out (the failure record reached the reconciler) while the code still ran
    domain = Domain(direct=True)
    task_id = domain.create("echo", {"text": "late"})
    with pause_before(domain.store, "apply:complete", lambda: domain.run_direct(task_id)) as leg:
        assert settle_lost_direct_leg(domain.store, task_id, "timeout", domain.clock) == "failed"
        leg.resume()
    record = domain.record(task_id)
    assert (record.status, record.result) == ("failed", None)


def test_a_worker_dying_after_the_direct_park_fails_the_task_unless_attached() -> None:
    # Given a direct leg that parked and died before starting the execution
    domain = Domain(direct=True)
    task_id = domain.create("confirm", {"name": "x"})
    domain.runner.failing.add("start")
    with pause_before(domain.runner, "start", lambda: domain.run_direct(task_id)) as leg:
        # When its failure record arrives first, Then the task fails (nothing would run it)
        assert settle_lost_direct_leg(domain.store, task_id, "crash", domain.clock) == "failed"
        leg.resume()
    assert domain.record(task_id).status == "failed"
    # Given one that died after starting it: whichever comes first settles, once
    other = domain.create("confirm", {"name": "y"})
    domain.run_direct(other)
    domain.run_leg(other, "tok-1")  # the execution attached first
    assert settle_lost_direct_leg(domain.store, other, "crash", domain.clock) == "unchanged"
    assert domain.record(other).status == "input_required"
