"""Running seeds and saying what they did: what `make simulate`, `make bench` and the tests use.

A *seed* is one seeded Hypothesis run of the state machine (`simulation.machine`):
`schedules` runs of the world, each up to `steps` steps, drawn from that seed. The same seed
runs the same schedules; a failing one is shrunk (Hypothesis) to the shortest schedule that
still fails, and printed with its log and history, and the command that replays it.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from simulation import machine
from simulation.checker import PROMISES
from simulation.moto_aws import moto_running
from simulation.mutations import mutated

SEEDS = 16
"""Seeds `make simulate` runs on the in-memory twin (each mutation is caught within them)."""
SCHEDULES = 10
"""Schedules per seed on the twin."""
MOTO_SEEDS = 2
MOTO_SCHEDULES = 4
"""On moto's DynamoDB (about thirty times slower): a few, every time."""
STEPS = 60


class Plan(NamedTuple):
    store: str
    seeds: list[int]
    schedules: int


def plans(
    store: str, *, seeds: int | None = None, first: int = 0, schedules: int | None = None
) -> list[Plan]:
    """What `make simulate` runs: the twin's seeds, then moto's (`store` both), or one store's."""
    twin = Plan("twin", list(range(first, first + (seeds or SEEDS))), schedules or SCHEDULES)
    moto = Plan(
        "moto", list(range(first, first + (seeds or MOTO_SEEDS))), schedules or MOTO_SCHEDULES
    )
    return {"twin": [twin], "moto": [moto], "both": [twin, moto]}[store]


@dataclass
class Outcome:
    seeds: list[int]
    failed: dict[int, str] = field(default_factory=dict)
    seconds: float = 0.0
    totals: machine.Totals = field(default_factory=machine.Totals)


@contextlib.contextmanager
def quiet_logs() -> Iterator[None]:
    """The product logs every fault it meets (as it should); thousands of runs would drown
    the summary. Levels are put back after."""
    loggers = [logging.getLogger(name) for name in ("mcp_tasks_aws", "botocore", "moto")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def run_seeds(
    seeds: Iterable[int],
    *,
    store: str = "twin",
    schedules: int = SCHEDULES,
    steps: int = STEPS,
    mutation: str | None = None,
    shrink: bool = True,
    stop_at_first: bool = False,
) -> Outcome:
    seeds = list(seeds)
    outcome = Outcome(seeds)
    machine.TOTALS = outcome.totals
    started = time.perf_counter()
    aws = moto_running() if store == "moto" else contextlib.nullcontext()
    with quiet_logs(), mutated(mutation), aws:
        for seed in seeds:
            try:
                machine.run_seed(seed, store=store, schedules=schedules, steps=steps, shrink=shrink)
            except AssertionError as exc:
                outcome.failed[seed] = str(exc)
                if stop_at_first:
                    break
    outcome.seconds = time.perf_counter() - started
    return outcome


def replay_command(seed: int, store: str, schedules: int, steps: int, mutation: str | None) -> str:
    parts = [f"make simulate SEED={seed}"]
    if store != "twin":
        parts.append(f"STORE={store}")
    if schedules != (SCHEDULES if store == "twin" else MOTO_SCHEDULES):
        parts.append(f"SCHEDULES={schedules}")
    if steps != STEPS:
        parts.append(f"STEPS={steps}")
    if mutation:
        parts.append(f"MUTATION={mutation}")
    return " ".join(parts)


def summary(outcome: Outcome, store: str) -> list[str]:
    totals = outcome.totals
    stats = totals.stats
    rate = totals.schedules / outcome.seconds if outcome.seconds else 0.0
    first, last = (outcome.seeds[0], outcome.seeds[-1]) if outcome.seeds else (0, -1)
    lines = [
        f"simulation on the {store} store: seeds {first}..{last}, {totals.schedules} schedules, "
        f"{totals.steps} steps, {outcome.seconds:.1f} s ({rate:.1f} schedules/s)",
        "  operations: " + _counts(totals.operations),
        f"  AWS calls: {sum(stats.calls.values())} ({stats.attempts} attempts); faults injected: "
        + (_counts(stats.faults) or "none"),
        f"  crash points hit: {sum(stats.crash_points.values())} at {len(stats.crash_points)} "
        f"distinct points; functions that did not return: "
        + (_counts(totals.function_ends) or "none"),
        f"  Lambda deliveries: {totals.deliveries} ({totals.duplicates} delivered twice); "
        f"stale task tokens used: {totals.stale_tokens}; states retried while their first "
        f"invoke ran: {totals.retried_legs}",
        "  checks per promise: " + ", ".join(f"{p} {totals.checks[p]}" for p in PROMISES),
    ]
    if totals.measured:
        lines.append("  at least once (measured, allowed): " + _counts(totals.measured))
    return lines


def crash_points(outcome: Outcome, limit: int = 12) -> list[str]:
    points = outcome.totals.stats.crash_points.most_common(limit)
    return [f"    {count:>5}  {point}" for point, count in points]


def _counts(counter: dict[str, int]) -> str:
    return ", ".join(
        f"{name} {count}" for name, count in sorted(counter.items(), key=lambda kv: -kv[1])
    )
