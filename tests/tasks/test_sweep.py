"""The sweeper, on the in-memory store: a fault at each write of the start path, in turn, and
the sweep that follows fails exactly the task left stranded, never a healthy one.

The start path's writes are `TaskService.create`'s: the record (`put_new`), the start of its
first leg (the direct invoke or the execution), and the compensating `fail` it tries three
times when the start failed; and the direct leg's hand-over (`LegRunner.run_direct` starting
the execution, then failing the task if it cannot). A task is stranded only when the start
and every compensating write failed; then only the sweeper ends it, once the bound has passed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mcp_tasks_aws.tasks import transitions as t
from mcp_tasks_aws.tasks.exceptions import TaskNotStarted
from mcp_tasks_aws.tasks.model import TaskRecord
from mcp_tasks_aws.tasks.sweep import (
    STRANDED_MESSAGE,
    SweepIncomplete,
    is_stranded,
    sweep_stranded,
)
from support.domain import ALICE, CAPABILITIES, Domain, tools
from support.records import make_record

BOUND_MS = 30 * 60 * 1000
PATHS = ("direct", "execution")
# How many of the three compensating `fail` writes fail after the start failed.
COMPENSATIONS = 3


class StoreFaults:
    """Makes the in-memory store's next calls of some primitives raise, as DynamoDB faults do."""

    def __init__(self, domain: Domain) -> None:
        self.remaining: dict[str, int] = {}
        self.fired: list[str] = []
        domain.store.before_call = self._before

    def fail(self, primitive: str, times: int = 1) -> None:
        self.remaining[primitive] = self.remaining.get(primitive, 0) + times

    def _before(self, primitive: str, task_id: str) -> None:
        if self.remaining.get(primitive, 0) > 0:
            self.remaining[primitive] -= 1
            self.fired.append(primitive)
            raise RuntimeError(f"injected {primitive} fault")


def domain_on(path: str) -> Domain:
    domain = Domain(direct=path == "direct")
    domain.service.sleep = lambda _s: None  # the compensating retries' backoff
    domain.service.default_ttl_ms = 24 * 3600 * 1000  # outlives every bound a test waits
    return domain


def fail_start(domain: Domain, path: str) -> None:
    if path == "direct":
        domain.direct_legs.failing = True
    else:
        domain.runner.failing.add("start")


def create(domain: Domain, label: str = "x") -> str | None:
    """Create an `echo` task; its id, or None if the create was refused before any record."""
    before = {r.task_id for r in domain.store.all_records()}
    try:
        return domain.service.create(
            ALICE, tools.tools["echo"], {"text": label}, CAPABILITIES
        ).task_id
    except TaskNotStarted:
        (task_id,) = {r.task_id for r in domain.store.all_records()} - before
        return task_id
    except RuntimeError:
        assert {r.task_id for r in domain.store.all_records()} == before
        return None


def sweep(domain: Domain, **options: Any) -> list[str]:
    return sweep_stranded(
        domain.store, domain.runner, stranded_after_ms=BOUND_MS, clock=domain.clock, **options
    ).failed


def healthy_tasks(domain: Domain) -> dict[str, TaskRecord]:
    """One task of each kind a sweep must leave alone, all idle past the bound by the time it
    runs: one its direct leg holds (claimed), one an execution runs (leg 0, no write yet),
    and one that nothing runs yet but that was updated recently (created just before)."""
    direct = Domain(direct=True)
    held = direct.service.create(ALICE, tools.tools["echo"], {"text": "held"}, CAPABILITIES)
    domain.store.put_new(held)
    claimed = domain.store.apply(held.task_id, *t.claim(domain.clock()))
    assert claimed is not None
    assert claimed.changed
    running = make_record(created_at=domain.clock(), updated_at=domain.clock())
    domain.store.put_new(running)
    domain.runner.started.add(running.task_id)  # its execution exists and runs
    return {"held": claimed.record, "with an execution": running}


# -- a fault at each write of the start path, in turn ------------------------------------------


@pytest.mark.parametrize("path", PATHS)
def test_a_failed_record_write_leaves_nothing_to_sweep(path: str) -> None:
    domain = domain_on(path)
    faults = StoreFaults(domain)
    faults.fail("put_new")
    assert create(domain) is None
    domain.clock.advance(BOUND_MS)
    assert sweep(domain) == []
    assert domain.store.all_records() == []


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("compensations_failing", range(COMPENSATIONS + 1))
def test_a_failed_start_ends_the_task_once_whichever_compensating_write_fails(
    path: str, compensations_failing: int
) -> None:
    # Given a start that fails, and the first `compensations_failing` compensating writes too
    domain = domain_on(path)
    faults = StoreFaults(domain)
    healthy = healthy_tasks(domain)
    fail_start(domain, path)
    faults.fail("apply:fail", compensations_failing)
    task_id = create(domain)
    assert task_id is not None
    assert faults.fired == ["apply:fail"] * compensations_failing
    stranded = compensations_failing == COMPENSATIONS
    assert (domain.record(task_id).status == "working") is stranded
    # And one more task, stranded the same way, but just now (updated within the bound)
    domain.clock.advance(BOUND_MS)
    fail_start(domain, path)
    faults.fail("apply:fail", COMPENSATIONS)
    recent = create(domain, "recent")
    assert recent is not None
    assert domain.record(recent).status == "working"
    versions = {r.task_id: r.version for r in domain.store.all_records()}
    # When the sweeper runs
    failed = sweep(domain)
    # Then it fails exactly the stranded task, with the clear error, in one move
    assert failed == ([task_id] if stranded else [])
    record = domain.record(task_id)
    assert record.status == "failed"
    if stranded:
        assert record.error == {"code": -32603, "message": STRANDED_MESSAGE}
        assert record.status_message == STRANDED_MESSAGE
        assert record.version == versions[task_id] + 1
    else:  # the compensating write ended it; the sweep changed nothing
        assert (record.error or {}).get("message") == "The task could not be started"
        assert record.version == versions[task_id]
    # And it touched no healthy task: held, with an execution, recently updated
    for name, before in healthy.items():
        assert domain.record(before.task_id) == before, name
    assert domain.record(recent).status == "working"
    # And a second sweep finds nothing more: the task ended once
    assert sweep(domain) == []
    assert domain.record(task_id).version == record.version


@pytest.mark.parametrize("path", PATHS)
def test_a_stranded_task_is_swept_only_once_the_bound_has_passed(path: str) -> None:
    domain = domain_on(path)
    StoreFaults(domain).fail("apply:fail", COMPENSATIONS)
    fail_start(domain, path)
    task_id = create(domain)
    assert task_id is not None
    domain.clock.advance(BOUND_MS - 1)
    assert sweep(domain) == []
    domain.clock.advance(1)
    assert sweep(domain) == [task_id]


def test_a_start_that_reached_its_execution_is_not_swept() -> None:
    # The start "failed" (a timeout) after Step Functions had started the execution, and the
    # compensating writes failed: the execution runs the task, so it is not stranded.
    domain = domain_on("execution")
    StoreFaults(domain).fail("apply:fail", COMPENSATIONS)

    def started_then_lost(name: str, task_id: str) -> None:
        if name == "start":
            domain.runner.started.add(task_id)
            raise TimeoutError("read timeout after the execution started")

    domain.runner.before_call = started_then_lost
    task_id = create(domain)
    domain.runner.before_call = None
    assert task_id is not None
    domain.clock.advance(BOUND_MS)
    assert sweep(domain) == []
    assert domain.record(task_id).status == "working"
    assert ("is_running", task_id) in domain.runner.calls


def test_a_hand_over_whose_start_and_fail_both_fail_is_swept() -> None:
    # The direct leg asked its question, could not start the execution (even retried), and
    # could not fail the task either; the reconciler never settled it (its write failed too).
    domain = domain_on("direct")
    domain.legs.sleep = lambda _s: None
    task_id = domain.create("confirm", {"name": "x"})
    healthy = domain.create("confirm", {"name": "y"})
    assert domain.run_direct(healthy) == "handed_over"  # its execution runs, not attached yet

    def start_fails(name: str, _subject: str) -> None:
        if name == "start":
            raise RuntimeError("injected start fault")

    domain.runner.before_call = start_fails
    StoreFaults(domain).fail("apply:fail", 4)  # the leg's fail, and its three retries
    with pytest.raises(RuntimeError):
        domain.run_direct(task_id)
    domain.runner.before_call = None
    record = domain.record(task_id)
    assert (record.status, record.held_by, record.task_token) == ("input_required", "direct", None)
    domain.clock.advance(BOUND_MS)
    assert sweep(domain) == [task_id]
    assert domain.record(task_id).error == {"code": -32603, "message": STRANDED_MESSAGE}
    assert domain.record(healthy).status == "input_required"


# -- fenced like every other write -------------------------------------------------------------


def stranded_task(domain: Domain, path: str) -> str:
    StoreFaults(domain).fail("apply:fail", COMPENSATIONS)
    fail_start(domain, path)
    task_id = create(domain)
    assert task_id is not None
    domain.clock.advance(BOUND_MS)
    return task_id


def meanwhile(domain: Domain, act: Callable[[], object]) -> None:
    """Run `act` once, just before the sweep's write lands."""

    def before(primitive: str, _task_id: str) -> None:
        if primitive == "apply:lose_stranded":
            domain.store.before_call = None
            act()

    domain.store.before_call = before


def test_a_late_direct_leg_that_claims_first_wins_over_the_sweep() -> None:
    domain = domain_on("direct")
    task_id = stranded_task(domain, "direct")
    meanwhile(domain, lambda: domain.run_direct(task_id))
    assert sweep(domain) == []
    record = domain.record(task_id)
    assert record.status == "completed"  # the late event ran the tool, once


def test_a_write_a_client_sees_between_the_read_and_the_sweep_wins() -> None:
    domain = domain_on("execution")
    task_id = stranded_task(domain, "execution")
    meanwhile(domain, lambda: domain.store.apply(task_id, *t.report(0, "busy", 1)))
    assert sweep(domain) == []
    assert domain.record(task_id).status == "working"


def test_a_late_event_after_the_sweep_finds_the_task_failed_and_runs_nothing() -> None:
    domain = domain_on("direct")
    task_id = stranded_task(domain, "direct")
    assert sweep(domain) == [task_id]
    assert domain.run_direct(task_id) == "done"
    assert domain.record(task_id).status == "failed"


def test_a_sweep_write_that_fails_is_reported_and_the_next_sweep_settles_it() -> None:
    domain = domain_on("direct")
    first = stranded_task(domain, "direct")
    second = stranded_task(domain, "direct")
    faults = StoreFaults(domain)
    faults.fail("apply:lose_stranded")
    with pytest.raises(SweepIncomplete):
        sweep(domain)
    # One of the two was settled despite the other's fault; the next sweep settles the rest.
    assert sorted(r.status for r in map(domain.record, (first, second))) == ["failed", "working"]
    assert len(sweep(domain)) == 1
    assert {domain.record(i).status for i in (first, second)} == {"failed"}


# -- what counts as stranded -------------------------------------------------------------------

NOW = 10**13


@pytest.mark.parametrize(
    ("overrides", "stranded"),
    [
        ({}, True),
        ({"held_by": "direct"}, True),
        ({"updated_at": NOW - BOUND_MS + 1}, False),  # updated recently
        ({"leg": 1}, False),  # a leg claimed or ran it
        ({"leg": 1, "held_by": "direct"}, False),  # its direct leg runs (its claim is not dated)
        ({"leg": 2, "held_by": "direct", "status": "input_required"}, True),  # parked, not handed
        ({"leg": 2, "status": "input_required"}, False),  # an execution holds it
        ({"task_token": "tok"}, False),  # an execution waits on it
        ({"status": "completed"}, False),
        ({"status": "cancelled"}, False),
        ({"created_at": NOW - 2 * BOUND_MS, "ttl_ms": BOUND_MS}, False),  # expired
        # a declared workflow's task: a candidate until the sweeper has seen its execution
        # run (then adopted: its leg moved on), since its start may never have landed
        ({"execution_arn": "arn:aws:states:us-east-1:1:execution:deploy:t"}, True),
        ({"execution_arn": "arn:aws:states:us-east-1:1:execution:deploy:t", "leg": 1}, False),
    ],
)
def test_is_stranded(overrides: dict[str, Any], stranded: bool) -> None:
    values: dict[str, Any] = {"created_at": NOW - BOUND_MS, "updated_at": NOW - BOUND_MS}
    values["ttl_ms"] = None
    record = make_record(**{**values, **overrides})
    assert is_stranded(record, NOW, BOUND_MS) is stranded
