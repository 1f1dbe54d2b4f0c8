"""The direct path, on the in-memory store (no moto): a first leg run by an asynchronous invoke,
without a state machine, handed over to an execution only when the tool asks for input."""

from __future__ import annotations

import pytest

from mcp_tasks_aws.tasks import transitions as t
from mcp_tasks_aws.tasks.exceptions import TaskNotStarted
from mcp_tasks_aws.tasks.reconcile import settle_lost_direct_leg, settle_lost_execution
from mcp_tasks_aws.tasks.watch import PollWindow, TaskChanged, Watch
from support.domain import ALICE, Domain, accept, side_effects

ECHOED = {"content": [{"type": "text", "text": "hi"}]}


# -- create ------------------------------------------------------------------------------------


def test_create_stores_the_task_held_by_its_direct_leg_and_queues_the_leg() -> None:
    domain = Domain(direct=True)
    task_id = domain.create("echo", {"text": "hi"})
    record = domain.record(task_id)
    assert (record.status, record.held_by, record.leg) == ("working", "direct", 0)
    assert domain.direct_legs.queued == [task_id]
    assert domain.runner.calls == []  # no execution


def test_a_tool_that_opts_out_runs_on_step_functions() -> None:
    domain = Domain(direct=True)
    task_id = domain.create("always_on_step_functions", {"text": "hi"})
    assert domain.record(task_id).held_by == "execution"
    assert domain.direct_legs.queued == []
    assert domain.runner.calls == [("start", task_id)]


def test_a_leg_that_cannot_be_queued_fails_the_task_before_answering() -> None:
    domain = Domain(direct=True)
    domain.direct_legs.failing = True
    with pytest.raises(TaskNotStarted):
        domain.create("echo", {"text": "hi"})
    (record,) = domain.store.all_records()
    assert (record.status, record.error) == (
        "failed",
        {"code": -32603, "message": "The task could not be started"},
    )


# -- the first leg -----------------------------------------------------------------------------


def test_a_leg_that_returns_completes_the_task_without_any_execution() -> None:
    domain = Domain(direct=True)
    task_id = domain.create("echo", {"text": "hi"})
    assert domain.run_direct(task_id) == "done"
    record = domain.record(task_id)
    assert (record.status, record.result, record.task_token) == ("completed", ECHOED, None)
    assert domain.runner.calls == []  # no StartExecution, no token: zero state transitions


def test_a_duplicated_event_runs_the_tool_once() -> None:
    domain = Domain(direct=True)
    side_effects.clear()
    task_id = domain.create("charge_then_confirm", {"label": "once"})
    assert domain.run_direct(task_id) == "handed_over"
    assert domain.run_direct(task_id) == "done"  # Lambda delivered the event again
    assert side_effects == ["once"]
    assert domain.runner.named("start") == [task_id]


def test_a_question_parks_the_task_and_starts_its_execution_which_attaches_its_token() -> None:
    # Given a direct leg whose tool asks a question
    domain = Domain(direct=True)
    task_id = domain.create("confirm", {"name": "notes.txt"})
    assert domain.run_direct(task_id) == "handed_over"
    # Then the task waits for input at once, with no token yet, and its execution was started
    parked = domain.record(task_id)
    assert (parked.status, parked.task_token, parked.held_by) == ("input_required", None, "direct")
    assert set(parked.input_requests) == {"confirm"}
    assert domain.runner.named("start") == [task_id]
    # When the execution's first leg runs, Then it attaches its token and waits
    assert domain.run_leg(task_id, "tok-1") == "parked"
    attached = domain.record(task_id)
    assert (attached.task_token, attached.held_by) == ("tok-1", "execution")
    assert domain.runner.named("end_leg") == []
    # And from there it is an ordinary task: the answer resumes it, the next leg completes it
    domain.service.update(ALICE, task_id, {"confirm": accept(ok=True)})
    assert domain.runner.named("resume") == ["tok-1"]
    assert domain.run_leg(task_id, "tok-2") == "done"
    record = domain.record(task_id)
    assert record.result == {"content": [{"type": "text", "text": "notes.txt: True"}]}
    assert domain.runner.named("end_leg") == ["tok-2"]


def test_a_step_done_by_the_direct_leg_is_not_redone_by_the_execution() -> None:
    domain = Domain(direct=True)
    side_effects.clear()
    task_id = domain.create("charge_then_confirm", {"label": "order-9"})
    domain.run_direct(task_id)
    domain.run_leg(task_id, "tok-1")
    domain.service.update(ALICE, task_id, {"confirm": accept(ok=True)})
    domain.run_leg(task_id, "tok-2")
    assert side_effects == ["order-9"]
    text = domain.record(task_id).result["content"][0]["text"]  # type: ignore[index]
    assert text == "charged order-9; ok=True"


def test_a_tool_bug_completes_and_a_protocol_fault_fails_without_an_execution() -> None:
    domain = Domain(direct=True)
    bug, fault = domain.create("crashing"), domain.create("protocol_fault")
    assert domain.run_direct(bug) == domain.run_direct(fault) == "done"
    assert domain.record(bug).result["isError"] is True  # type: ignore[index]
    assert domain.record(fault).error == {"code": -32603, "message": "the backend refused"}
    assert domain.runner.calls == []


def test_an_execution_that_cannot_be_started_fails_the_parked_task() -> None:
    domain = Domain(direct=True)
    task_id = domain.create("confirm", {"name": "x"})
    domain.legs.sleep = lambda _s: None

    def always_failing(name: str, _subject: str) -> None:
        if name == "start":  # every try (the start is retried: it is safe to repeat)
            raise RuntimeError("injected start fault")

    domain.runner.before_call = always_failing
    assert domain.run_direct(task_id) == "done"
    record = domain.record(task_id)
    assert (record.status, record.error) == (
        "failed",
        {"code": -32603, "message": "The task could not be handed over to its execution"},
    )


def test_an_expired_or_unknown_task_runs_nothing() -> None:
    domain = Domain(direct=True)
    task_id = domain.create("echo", {"text": "hi"})
    domain.clock.advance(3_600_000)
    assert domain.run_direct(task_id) == "done"
    assert domain.record(task_id).error == {"code": -32603, "message": "The task expired"}
    assert domain.run_direct("0" * 32) == "done"


# -- cancel ------------------------------------------------------------------------------------


def test_cancel_of_a_task_its_direct_leg_holds_needs_no_execution_call() -> None:
    domain = Domain(direct=True)
    task_id = domain.create("echo", {"text": "hi"})
    domain.service.cancel(ALICE, task_id)
    assert domain.record(task_id).status == "cancelled"
    assert domain.run_direct(task_id) == "done"  # the queued leg finds it cancelled
    assert domain.record(task_id).result is None
    assert domain.runner.calls == []


def test_cancel_after_the_execution_attached_interrupts_its_wait() -> None:
    domain = Domain(direct=True)
    task_id = domain.create("confirm", {"name": "x"})
    domain.run_direct(task_id)
    domain.run_leg(task_id, "tok-1")
    domain.service.cancel(ALICE, task_id)
    assert domain.runner.named("interrupt") == ["tok-1"]


# -- lost legs ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reason", "said"),
    [
        ("timeout", "The task's first leg ran past the worker's timeout"),
        ("crash", "The task's first leg crashed"),
        ("expired", "The task's first leg never ran: its event waited too long"),
    ],
)
def test_a_lost_direct_leg_fails_its_task_once(reason: str, said: str) -> None:
    domain = Domain(direct=True)
    task_id = domain.create("echo", {"text": "hi"})
    assert settle_lost_direct_leg(domain.store, task_id, reason, domain.clock) == "failed"
    record = domain.record(task_id)
    assert (record.status, record.error) == ("failed", {"code": -32603, "message": said})
    again = settle_lost_direct_leg(domain.store, task_id, reason, domain.clock)
    assert again == "unchanged"
    assert domain.record(task_id).version == record.version


def test_a_lost_direct_leg_leaves_a_task_an_execution_holds_or_one_that_ended() -> None:
    domain = Domain(direct=True)
    handed = domain.create("confirm", {"name": "x"})
    domain.run_direct(handed)
    domain.run_leg(handed, "tok-1")  # attached: the execution holds it
    ended = domain.create("echo", {"text": "hi"})
    domain.run_direct(ended)
    for task_id in (handed, ended, "f" * 32):
        assert settle_lost_direct_leg(domain.store, task_id, "crash", domain.clock) == "unchanged"
    assert domain.record(handed).status == "input_required"
    assert domain.record(ended).status == "completed"


def test_a_task_parked_directly_whose_execution_failed_is_settled_by_the_execution() -> None:
    domain = Domain(direct=True)
    task_id = domain.create("confirm", {"name": "x"})
    domain.run_direct(task_id)
    domain.run_leg(task_id, "tok-1")
    assert settle_lost_execution(domain.store, task_id, "FAILED", domain.clock) == "failed"


# -- listening ---------------------------------------------------------------------------------


def test_a_listen_window_hears_the_direct_leg_report_but_not_its_claim() -> None:
    # Given a listen window open on a task whose direct leg has not started yet
    domain = Domain(direct=True)
    task_id = domain.create("reporting")
    ticks = iter(range(1_000))
    steps: list[str] = []

    def sleep(_: float) -> None:
        # Between two polls of the window, the leg moves on one store write at a time
        step = next(ticks)
        if step == 0:
            domain.store.apply(task_id, *t.claim(domain.clock()))  # who runs it: not shown
            steps.append("claim")
        elif step == 1:
            domain.store.apply(task_id, *t.report(1, "halfway", domain.clock()))
            steps.append("report")

    watch = Watch(
        tasks=domain.service,
        feed=None,
        owner=ALICE,
        task_ids=[task_id],
        lists=[],
        window=PollWindow(10_000, 100, clock=lambda: 0.0, sleep=sleep),
    )
    # When it polls, Then the claim goes unreported and the report is the first change it sends
    change = next(watch.changes())
    assert steps == ["claim", "report"]
    assert isinstance(change, TaskChanged)
    assert change.view.record.status_message == "halfway"
