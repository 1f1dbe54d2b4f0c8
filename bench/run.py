"""`make bench`: run the benchmark sections and print each one's report.

A section is a module here with `add_arguments(parser)` and `main(args) -> int` (0 unless
something it measured failed); register it in SECTIONS. `--only NAME` runs one section.
Targets that are missed are reported, not failed: the figures are informational.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from types import ModuleType

import aws_calls
import cold_start
import costs
import front_doors
import handles
import latency
import lifecycle
import load
import managed_costs
import transitions

SECTIONS: dict[str, ModuleType] = {
    "cold-start": cold_start,
    "aws-calls": aws_calls,
    "transitions": transitions,
    "lifecycle": lifecycle,
    "load": load,
    "costs": costs,
    "handles": handles,
    "latency": latency,
    "managed-costs": managed_costs,
    "front-doors": front_doors,
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--only",
        choices=sorted(SECTIONS),
        action="append",
        help="run only this section (repeatable; default: all)",
    )
    for module in SECTIONS.values():
        add: Callable[[argparse.ArgumentParser], None] | None = getattr(
            module, "add_arguments", None
        )
        if add is not None:
            add(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    selected = args.only or list(SECTIONS)
    status = 0
    for name in selected:
        print(f"== {name} ==", flush=True)
        status = max(status, SECTIONS[name].main(args))
        print(flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
