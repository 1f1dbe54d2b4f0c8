"""The driver: a Hypothesis state machine whose rules are what may happen next in the world.

Each rule is one kind of step, its arguments the choices: a client starts an operation; a
waiting function or client goes on, its next AWS attempts meeting the faults drawn (or the
function crashing there); Lambda delivers a queued event, once or leaving a copy; an
execution's state invokes its function, meeting a Lambda service fault or not; time passes.
The first step draws the run's fault menu (swarm testing: some runs see only some kinds of
fault, so a long happy path is as likely as a storm). At the end (`teardown`) the world is
settled and judged (`simulation.checker`); a violation fails the run, and Hypothesis shrinks
it to the shortest run that still fails.

`run_seed` runs the machine as Hypothesis does from one seed: the same seed, the same runs,
the same failure, the same shrinking.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import hypothesis
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.control import current_build_context
from hypothesis.internal.conjecture import engine
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    precondition,
    rule,
    run_state_machine_as_test,
)

from simulation.checker import PROMISES, Verdict, describe
from simulation.scheduler import FAULTS
from simulation.sdk import Stats
from simulation.tools import TOOLS
from simulation.world import World, WorldConfig

FAULT_KINDS = FAULTS[1:]
SFN_FAULTS = ("throttle", "5xx", "timeout_after", "timeout_later", "timeout_after", "timeout_later")
"""What a state's invoke of its function may meet: a Lambda service fault before the function
ran, or after it started, its answer lost at once or later (the state retries while the first
copy runs). `timeout_later` is on with `timeout_after`."""
WAITS_S = (1, 5, 20, 120, 600, 1000, 2000)
CALM = (8, 11, 13, 15)
"""Of 16 draws, how many meet no fault: a run's fault rate is 1/2, 5/16, 3/16 or 1/16."""
SFN_CALM = (4, 8, 12)
"""Of 16 invokes of a state's function, how many meet no Lambda service fault."""
TOOL_MENU = (*TOOLS, "depends", "on_machine", "ask_twice")
"""What a run's tools are drawn from: the tools whose legs run on Step Functions, where
copies of a leg meet, twice as likely."""
MAX_SHRINKS = 120
BUSY = 3
"""Clients with an operation in flight at once, at most (the rest of the steps move them)."""


def _fault(n: int, menu: tuple[str, ...], calm: int) -> str:
    """What one attempt meets, for a drawn `n` in 0..15: nothing below the run's `calm`, else
    a fault of the run's menu (nothing if its menu is empty)."""
    return "ok" if n < calm or not menu else menu[n % len(menu)]


@dataclass
class Totals:
    """What every run of a batch did, added up (`make simulate` prints it)."""

    schedules: int = 0
    steps: int = 0
    operations: Counter[str] = field(default_factory=Counter)
    stats: Stats = field(default_factory=Stats)
    checks: Counter[str] = field(default_factory=Counter)
    measured: Counter[str] = field(default_factory=Counter)
    deliveries: int = 0
    duplicates: int = 0
    function_ends: Counter[str] = field(default_factory=Counter)
    stale_tokens: int = 0
    retried_legs: int = 0

    def add(self, world: World, verdict: Verdict, steps: int) -> None:
        self.schedules += 1
        self.steps += steps
        self.operations.update(world.operations)
        self.stats.merge(world.stats)
        self.checks.update(verdict.checks)
        self.measured.update(verdict.measured)
        self.deliveries += world.lambda_.delivered
        self.duplicates += world.lambda_.duplicates
        self.function_ends.update(world.function_ends)
        self.stale_tokens += world.sfn.stale_token_uses
        self.retried_legs += world.sfn.answers_lost


TOTALS = Totals()


class SimulationMachine(RuleBasedStateMachine):
    config = WorldConfig()

    def __init__(self) -> None:
        super().__init__()
        self.world = World(self.config)
        self.menu: frozenset[str] = frozenset()
        self.faults: tuple[str, ...] = ()
        self.sfn_faults: tuple[str, ...] = ()
        self.calm = self.sfn_calm = 16
        self.tools: tuple[str, ...] = TOOLS
        self.steps = 0

    # -- the run's fault menu -------------------------------------------------------------------

    @initialize(
        menu=st.tuples(*[st.booleans() for _ in FAULT_KINDS]),
        calm=st.sampled_from(CALM),
        sfn_calm=st.sampled_from(SFN_CALM),
        tools=st.lists(st.sampled_from(TOOL_MENU), min_size=1, max_size=3, unique=True),
    )
    def menus_of_this_run(
        self, menu: tuple[bool, ...], calm: int, sfn_calm: int, tools: list[str]
    ) -> None:
        """Swarm testing: each run meets some kinds of fault, at a rate of its own, and uses
        a few tools, so that what one combination can do is done often, not drowned by the
        others."""
        self.menu = frozenset(kind for kind, on in zip(FAULT_KINDS, menu, strict=True) if on)
        self.faults = tuple(kind for kind in FAULT_KINDS if kind in self.menu)
        self.sfn_faults = tuple(
            kind for kind in SFN_FAULTS if kind.replace("_later", "_after") in self.menu
        )
        self.calm, self.sfn_calm = calm, sfn_calm
        self.tools = tuple(tools)

    # -- the steps -------------------------------------------------------------------------------

    @precondition(lambda self: len(self.world.idle_clients()) > len(self.world.clients) - BUSY)
    @rule(
        client=st.integers(0, 15),
        operation=st.integers(0, 15),
        which=st.integers(0, 255),
        tool=st.integers(0, 3),
        foreign=st.integers(0, 7),
    )
    def client_acts(self, client: int, operation: int, which: int, tool: int, foreign: int) -> None:
        self.steps += 1
        idle = self.world.idle_clients()
        who = idle[client % len(idle)]
        operations = who.operations()
        chosen = operations[operation % len(operations)]
        task_id = None
        if chosen != "create":
            principal = who.principal
            if foreign == 0:  # now and then, another caller's task
                principal = next(
                    p for p in {c.principal for c in self.world.clients} if p != who.principal
                )
            tasks = self.world.tasks_of(principal)
            if not tasks:
                chosen = "create"
            else:
                task_id = tasks[which % len(tasks)]
        self.world.start(who, chosen, task_id, self.tools[tool % len(self.tools)])

    @precondition(lambda self: bool(self.world.scheduler.blocked()))
    @rule(pick=st.integers(0, 255), faults=st.lists(st.integers(0, 15), min_size=1, max_size=2))
    def function_goes_on(self, pick: int, faults: list[int]) -> None:
        self.steps += 1
        blocked = self.world.scheduler.blocked()
        process = blocked[pick % len(blocked)]
        for n in faults:
            if process.state != "blocked":
                break
            self.world.advance(process, _fault(n, self.faults, self.calm))

    @precondition(lambda self: bool(self.world.lambda_.queue))
    @rule(pick=st.integers(0, 255), twice=st.booleans())
    def lambda_delivers(self, pick: int, twice: bool) -> None:
        self.steps += 1
        queue = self.world.lambda_.queue
        self.world.deliver(queue[pick % len(queue)], twice and "duplicate" in self._duplicates())

    def _duplicates(self) -> frozenset[str]:
        # Duplicate deliveries are on whenever the run has any fault at all.
        return frozenset({"duplicate"}) if self.menu else frozenset()

    @precondition(lambda self: bool(self.world.sfn.pending()))
    @rule(pick=st.integers(0, 255), fault=st.integers(0, 15))
    def state_invokes(self, pick: int, fault: int) -> None:
        self.steps += 1
        pending = self.world.sfn.pending()
        chosen = _fault(fault, self.sfn_faults, self.sfn_calm)
        self.world.act(pending[pick % len(pending)], chosen)

    @rule(seconds=st.sampled_from(WAITS_S))
    def time_passes(self, seconds: int) -> None:
        self.steps += 1
        self.world.wait(seconds)

    # -- the end ----------------------------------------------------------------------------------

    def teardown(self) -> None:
        world = self.world
        try:
            verdict = world.judged()
            TOTALS.add(world, verdict, self.steps)
        finally:
            world.close()
        if not verdict.ok:
            raise AssertionError(report(world, verdict, self.menu))


def report(world: World, verdict: Verdict, menu: frozenset[str]) -> str:
    final = _is_final()
    lines = [f"{len(verdict.violations)} promise(s) broken (faults on: {sorted(menu) or 'none'}):"]
    lines += [f"  - {line}" for line in describe(verdict)[:12]]
    if final:
        named = {why.split("task ")[1][:8] for _, why in verdict.violations if "task " in why}
        for task_id, writes in world.trail.writes.items():
            if task_id[:8] not in named:
                continue
            lines.append(f"what the store's trail holds of task {task_id[:8]}:")
            for write in writes:
                record = write.record
                lines.append(
                    f"  #{write.seq:<5} {write.move:<14} by {write.writer:<22} -> {record.status}, "
                    f"leg {record.leg}, open {sorted(record.input_requests)}, token "
                    f"{record.task_token or '-'}, held by {record.held_by}"
                )
        lines.append("what the run did (the run's log):")
        lines += [f"  {note}" for note in world.history.notes[-150:]]
        lines.append("what the clients sent and got:")
        lines += [f"  {line}" for line in world.history.lines(200)]
    return "\n".join(lines)


def _is_final() -> bool:
    try:
        return bool(current_build_context().is_final)
    except Exception:
        return True


def machine_for(config: WorldConfig) -> type[SimulationMachine]:
    return type("SimulationMachine", (SimulationMachine,), {"config": config})


def run_seed(
    seed: int,
    *,
    store: str = "twin",
    schedules: int = 10,
    steps: int = 60,
    shrink: bool = True,
    verbose: bool = False,
) -> None:
    """Run `schedules` schedules from `seed` (Hypothesis, seeded); raise on a violation, after
    shrinking it to the shortest run that still fails."""
    config = WorldConfig(store=store, seed_bytes=f"{store}-{seed}".encode())
    machine = machine_for(config)

    def factory() -> Any:
        return machine()

    hypothesis.seed(seed)(factory)
    phases = [Phase.generate, Phase.shrink] if shrink else [Phase.generate]
    # Shrinking stops after this many successful shrinks, not after a time (Hypothesis's
    # default is 500 or five minutes): a replay shrinks alike on any machine, in a minute or
    # two at most.
    previous, engine.MAX_SHRINKS = engine.MAX_SHRINKS, MAX_SHRINKS
    try:
        run_state_machine_as_test(
            factory,
            settings=settings(
                max_examples=schedules,
                stateful_step_count=steps,
                deadline=None,
                database=None,
                derandomize=False,
                phases=phases,
                suppress_health_check=list(HealthCheck),
                report_multiple_bugs=False,
                print_blob=False,
                verbosity=hypothesis.Verbosity.normal if verbose else hypothesis.Verbosity.quiet,
            ),
        )
    finally:
        engine.MAX_SHRINKS = previous


__all__ = ["PROMISES", "TOTALS", "SimulationMachine", "machine_for", "run_seed"]
