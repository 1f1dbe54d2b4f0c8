"""`make simulate`: run the seeded simulation (tests/simulation) and judge every promise.

    make simulate                      # the default seeds (seconds; part of `make test`)
    make simulate SEEDS=200 FROM=1000  # seeds 1000..1199
    make simulate SEED=17              # replay one seed: its failure shrunk, with its history
    make simulate STORE=moto           # on the DynamoDB adapter (moto) instead of the twin
    make simulate MUTATION=cancel_unguarded   # with a deliberate bug: it must fail

Exits 1 if any promise was broken (printing the seed, the shrunk schedule's log and history,
and the command that replays it), 0 otherwise. Python's string hashing is pinned
(PYTHONHASHSEED=0) so that a seed replays alike in every process.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    if os.environ.get("PYTHONHASHSEED") != "0":
        # Set iteration order is part of a run: pin it, and start again with it pinned.
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable, __file__, *(argv or sys.argv[1:])])  # noqa: S606
    sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]
    from simulation.mutations import MUTATIONS
    from simulation.run import (
        DEFAULT_SCHEDULES,
        DEFAULT_STEPS,
        crash_points,
        replay_command,
        run_seeds,
        summary,
    )

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=8, help="how many seeds")
    parser.add_argument("--from", dest="first", type=int, default=0, help="the first seed")
    parser.add_argument("--seed", type=int, help="replay this one seed")
    parser.add_argument("--store", choices=("twin", "moto"), default="twin")
    parser.add_argument("--schedules", type=int, default=DEFAULT_SCHEDULES, help="per seed")
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS, help="per schedule, at most")
    parser.add_argument("--mutation", choices=sorted(MUTATIONS))
    parser.add_argument("--crash-points", action="store_true", help="list the points hit most")
    args = parser.parse_args(argv)

    seeds = (
        [args.seed] if args.seed is not None else list(range(args.first, args.first + args.seeds))
    )
    outcome = run_seeds(
        seeds, store=args.store, schedules=args.schedules, steps=args.steps, mutation=args.mutation
    )
    for line in summary(outcome, args.store):
        print(line)
    if args.crash_points:
        print("  crash points hit most:")
        for line in crash_points(outcome):
            print(line)
    for seed, failure in outcome.failed.items():
        print(f"\nseed {seed} FAILED (shrunk to the shortest schedule that still fails):")
        print(failure)
        replay = replay_command(seed, args.store, args.schedules, args.steps, args.mutation)
        print(f"replay: {replay}")
    if outcome.failed:
        broken = sorted(outcome.failed)
        print(f"\n{len(broken)} of {len(seeds)} seed(s) broke a promise: {broken}")
        return 1
    print("every promise held")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
