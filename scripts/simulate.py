"""`make simulate`: run the seeded simulation (tests/simulation) and judge every promise.

    make simulate                      # the default seeds, on both stores (part of `make test`)
    make simulate SEEDS=200 FROM=1000  # seeds 1000..1199 (on the in-memory twin)
    make simulate SEED=17              # replay one seed: its failure shrunk, with its history
    make simulate STORE=moto SEEDS=4   # on the DynamoDB adapter (moto) instead of the twin
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
        arguments = [sys.executable, __file__, *(argv if argv is not None else sys.argv[1:])]
        os.execv(sys.executable, arguments)  # noqa: S606
    sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]
    from simulation import run
    from simulation.mutations import MUTATIONS

    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--seeds", type=int, help=f"how many seeds (default {run.SEEDS})")
    parser.add_argument("--from", dest="first", type=int, default=0, help="the first seed")
    parser.add_argument("--seed", type=int, help="replay this one seed")
    parser.add_argument(
        "--store",
        choices=("both", "twin", "moto"),
        help="both (default): the twin's seeds, then a few on moto; or one store",
    )
    parser.add_argument("--schedules", type=int, help="per seed")
    parser.add_argument("--steps", type=int, default=run.STEPS, help="per schedule, at most")
    parser.add_argument("--mutation", choices=sorted(MUTATIONS))
    parser.add_argument("--crash-points", action="store_true", help="list the points hit most")
    args = parser.parse_args(argv)

    store = args.store or ("twin" if args.seed is not None or args.seeds else "both")
    plans = run.plans(store, seeds=args.seeds, first=args.first, schedules=args.schedules)
    if args.seed is not None:
        plans = [plan._replace(seeds=[args.seed]) for plan in plans]
    failed = 0
    for plan in plans:
        outcome = run.run_seeds(
            plan.seeds,
            store=plan.store,
            schedules=plan.schedules,
            steps=args.steps,
            mutation=args.mutation,
        )
        for line in run.summary(outcome, plan.store):
            print(line, flush=True)
        if args.crash_points:
            print("  crash points hit most:")
            for line in run.crash_points(outcome):
                print(line)
        for seed, failure in outcome.failed.items():
            print(
                f"\nseed {seed} FAILED on the {plan.store} store (shrunk to the shortest schedule"
            )
            print("that still fails):")
            print(failure)
            replay = run.replay_command(seed, plan.store, plan.schedules, args.steps, args.mutation)
            print(f"replay: {replay}\n")
        failed += len(outcome.failed)
    if failed:
        print(f"{failed} seed(s) broke a promise")
        return 1
    print("every promise held")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
