"""`make bench`: run the benchmark sections and print each one's report.

A section is a module here with `add_arguments(parser)` and `main(args) -> int` (0 unless
something it measured failed); register it in SECTIONS. A section with arguments also names,
in `SMOKE`, the values that make it as short as it can be while every part of it still runs.
`--only NAME` runs one section; `--smoke` runs every section with its SMOKE values (`make test`
does, so a broken section cannot land: the figures of a smoke mean nothing).

Targets that are missed are reported, not failed: the figures are informational. A section
that fails (its measurement broke, or it raised) is reported and the others still run; the run
then exits 1.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
import traceback
from collections.abc import Callable
from types import ModuleType
from typing import Any

import aws_calls
import cold_start
import costs
import durable_costs
import front_doors
import handles
import latency
import lifecycle
import load
import managed_costs
import simulation_runs
import transitions

SECTIONS: dict[str, ModuleType] = {
    "cold-start": cold_start,
    "aws-calls": aws_calls,
    "transitions": transitions,
    "lifecycle": lifecycle,
    "load": load,
    "costs": costs,
    "durable": durable_costs,
    "handles": handles,
    "latency": latency,
    "managed-costs": managed_costs,
    "front-doors": front_doors,
    "simulation": simulation_runs,
}


def smoke_values() -> dict[str, Any]:
    """Every section's SMOKE values, as argument defaults."""
    values: dict[str, Any] = {}
    for module in SECTIONS.values():
        values.update(getattr(module, "SMOKE", {}))
    return values


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--only",
        choices=sorted(SECTIONS),
        action="append",
        help="run only this section (repeatable; default: all)",
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="every section as short as it can be: proves each runs, measures nothing",
    )
    for module in SECTIONS.values():
        add: Callable[[argparse.ArgumentParser], None] | None = getattr(
            module, "add_arguments", None
        )
        if add is not None:
            add(parser)
    args = parser.parse_args(argv)
    if args.smoke:  # the smoke's values, unless the command line gave one
        parser.set_defaults(**smoke_values())
        args = parser.parse_args(argv)
    return args


def cpu_s() -> float:
    """CPU seconds (user + system) of this process and of its children that ended."""
    own, children = (
        resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def run_section(name: str, args: argparse.Namespace) -> int:
    """One section: its report, then how long it took (wall, and CPU with its children's); a
    raise is a failure, reported."""
    print(f"== {name} ==", flush=True)
    started, cpu = time.monotonic(), cpu_s()
    try:
        status = SECTIONS[name].main(args)
    except Exception:
        traceback.print_exc(file=sys.stdout)
        status = 1
    verdict = "ok" if status == 0 else f"FAILED (status {status})"
    took = f"{time.monotonic() - started:.1f} s, CPU {cpu_s() - cpu:.1f} s"
    print(f"-- {name}: {verdict}, {took}", flush=True)
    print(flush=True)
    return status


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    selected = args.only or list(SECTIONS)
    failed = [name for name in selected if run_section(name, args) != 0]
    if failed:
        print(f"bench: {len(failed)} section(s) failed: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
