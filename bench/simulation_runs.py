"""The seeded simulation (docs/simulation.md): a few thousand schedules, and their throughput.

Runs `--simulation-seeds` seeds of `tests/simulation` on the in-memory twin (each seed its
`SCHEDULES` schedules, as `make simulate` runs them) and a few on moto's DynamoDB through the
real adapter, and reports, per store: schedules, steps and AWS call attempts per second (of
this machine's CPU, one process), the faults injected by kind, the crash points hit, and each
promise's checks. A seed that breaks a promise fails the section (its replay command is
printed): the figures are only worth something over runs that held.
"""

from __future__ import annotations

import argparse
import sys

from common import PROJECT_ROOT

sys.path[:0] = [str(PROJECT_ROOT / "tests"), str(PROJECT_ROOT)]

from simulation import run  # noqa: E402

SEEDS = 300
"""Twin seeds: with 10 schedules each, three thousand schedules."""
MOTO_SEEDS = 4
SMOKE = {"simulation_seeds": 1, "simulation_moto_seeds": 1, "simulation_moto_schedules": 1}
"""The smoke: one twin seed, and one schedule of one seed on moto (each about a second)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--simulation-seeds", type=int, default=SEEDS, help="twin seeds to run")
    parser.add_argument(
        "--simulation-moto-seeds", type=int, default=MOTO_SEEDS, help="moto seeds to run"
    )
    parser.add_argument(
        "--simulation-moto-schedules",
        type=int,
        default=run.MOTO_SCHEDULES,
        help=f"schedules per moto seed (default {run.MOTO_SCHEDULES})",
    )


def main(args: argparse.Namespace) -> int:
    failed = 0
    batches = [
        ("twin", args.simulation_seeds, run.SCHEDULES),
        ("moto", args.simulation_moto_seeds, max(1, args.simulation_moto_schedules)),
    ]
    for store, seeds, schedules in batches:
        outcome = run.run_seeds(range(seeds), store=store, schedules=schedules, shrink=False)
        for line in run.summary(outcome, store):
            print(line)
        attempts = outcome.totals.stats.attempts
        steps = outcome.totals.steps
        print(
            f"  throughput: {outcome.totals.schedules / outcome.seconds:.1f} schedules/s, "
            f"{steps / outcome.seconds:.0f} steps/s, {attempts / outcome.seconds:.0f} AWS "
            "attempts/s"
        )
        print("  crash points hit most:")
        for line in run.crash_points(outcome, limit=8):
            print(line)
        for seed in sorted(outcome.failed):
            replay = run.replay_command(seed, store, schedules, run.STEPS, None)
            print(f"  seed {seed} broke a promise: {replay}")
        failed += len(outcome.failed)
    return 1 if failed else 0
