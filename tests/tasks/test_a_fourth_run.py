"""A run added to the registry is all a new way of running needs from the domain: the service,
the reconciler and the sweeper ask it by the name its record holds, and tell nothing apart.

`ProbeRun` is such a run, defined here and registered for the test only (`RUNS`, its port in
`RunPorts.adapters`); no other module of the domain knows its name."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pytest

from mcp_tasks_aws.tasks import transitions as t
from mcp_tasks_aws.tasks.memory import InMemoryTaskStore
from mcp_tasks_aws.tasks.model import TaskRecord
from mcp_tasks_aws.tasks.reconcile import settle_lost
from mcp_tasks_aws.tasks.runs import registry
from mcp_tasks_aws.tasks.runs.base import Liveness, LostEnd, Run, RunPorts, lost
from mcp_tasks_aws.tasks.runs.registry import Runs
from mcp_tasks_aws.tasks.service import TaskService
from mcp_tasks_aws.tasks.sweep import sweep_stranded
from mcp_tasks_aws.tools.registry import ToolSpec
from support.clock import Clock
from support.domain import ALICE, CAPABILITIES, START_MS, RecordingRunner, accept, tools

BOUND_MS = 30 * 60 * 1000


@dataclass
class ProbeCalls:
    """The probe run's port: what it was asked to do, in order."""

    calls: list[tuple[str, str]] = field(default_factory=list)
    liveness: Liveness = "stranded"


class ProbeRun(Run):
    """Runs `confirm`'s tasks when its port is there; records each step it is asked."""

    name: ClassVar[str] = "probe"

    @classmethod
    def serves(cls, spec: ToolSpec, ports: RunPorts) -> bool:
        return spec.name == "confirm" and "probe" in ports.adapters

    @property
    def probe(self) -> ProbeCalls:
        calls: ProbeCalls = self.need(self.ports.adapters.get("probe"), "a probe")
        return calls

    def start(self, record: TaskRecord, spec: ToolSpec) -> None:
        self.probe.calls.append(("start", record.task_id))

    def resume(self, record: TaskRecord, answered: bool) -> None:
        self.probe.calls.append(("resume", str(record.task_token)))

    def release(self, record: TaskRecord) -> None:
        self.probe.calls.append(("release", record.task_id))

    def settle_lost(self, end: LostEnd) -> str:
        self.probe.calls.append(("settle_lost", end.task_id))
        moved = self.store.apply(end.task_id, *t.lose(lost("the probe lost it"), 0))
        return "failed" if moved is not None and moved.changed else "unchanged"

    def may_be_running(self, record: TaskRecord) -> Liveness:
        self.probe.calls.append(("may_be_running", record.task_id))
        return self.probe.liveness


@pytest.fixture
def probe(monkeypatch: pytest.MonkeyPatch) -> Iterator[ProbeCalls]:
    runs = {"probe": f"{__name__}:ProbeRun", **registry.RUNS}
    monkeypatch.setattr(registry, "RUNS", runs)
    registry.run_class.cache_clear()
    yield ProbeCalls()
    registry.run_class.cache_clear()


@dataclass
class World:
    clock: Clock
    store: InMemoryTaskStore
    runner: RecordingRunner
    service: TaskService


def world(probe: ProbeCalls) -> World:
    clock = Clock(START_MS)
    store = InMemoryTaskStore(clock=clock)
    runner = RecordingRunner()
    adapters: dict[str, Any] = {"probe": probe}
    service = TaskService(store, runner, run_adapters=adapters, clock=clock)
    return World(clock, store, runner, service)


def test_create_update_and_cancel_ask_the_run_the_record_names(probe: ProbeCalls) -> None:
    w = world(probe)
    created = w.service.create(ALICE, tools.tools["confirm"], {"name": "x"}, CAPABILITIES)
    assert created.run == "probe"
    assert probe.calls == [("start", created.task_id)]
    # Its work parks the task with what resumes it; the last answer hands it back.
    question = {"method": "elicitation/create", "params": {"message": "ok?"}}
    assert w.store.apply(created.task_id, *t.park(0, {"q": question}, "probe-1", {}, START_MS))
    w.service.update(ALICE, created.task_id, {"q": accept(ok=True)})
    assert probe.calls[-1] == ("resume", "probe-1")
    w.service.cancel(ALICE, created.task_id)
    assert probe.calls[-1] == ("release", created.task_id)
    # Other tools still get the runs they got (nothing else was taught the new name).
    echo = w.service.create(ALICE, tools.tools["echo"], {"text": "x"}, CAPABILITIES)
    assert echo.run == "legs"
    assert w.runner.named("start") == [echo.task_id]


def test_the_sweeper_asks_the_run_and_fails_what_it_calls_stranded(probe: ProbeCalls) -> None:
    w = world(probe)
    created = w.service.create(ALICE, tools.tools["confirm"], {"name": "x"}, CAPABILITIES)
    w.clock.advance(BOUND_MS + 1)
    swept = sweep_stranded(
        w.store,
        w.runner,
        adapters={"probe": probe},
        stranded_after_ms=BOUND_MS,
        clock=w.clock,
    )
    assert swept.failed == [created.task_id]
    assert probe.calls[-1] == ("may_be_running", created.task_id)
    assert w.runner.named("is_running") == []


def test_the_reconciler_hands_the_runs_end_to_the_run(probe: ProbeCalls) -> None:
    w = world(probe)
    created = w.service.create(ALICE, tools.tools["confirm"], {"name": "x"}, CAPABILITIES)
    runs = Runs(RunPorts(w.store, adapters={"probe": probe}))
    assert settle_lost(runs, LostEnd("probe", created.task_id, "GONE")) == "failed"
    assert probe.calls[-1] == ("settle_lost", created.task_id)
    record = w.store.get(created.task_id)
    assert record is not None
    assert (record.status, (record.error or {}).get("message")) == ("failed", "the probe lost it")
