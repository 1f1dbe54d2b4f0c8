"""The embedded stack with moto's share of the time counted (`bench/timed_stack.py --port N`).

Serves like `python -m mcp_tasks_aws.local.stack` (the same environment decides the tools and
the path) and counts, per AWS operation, the calls moto answered and the time it took
(botocore's `before-send` stubber, where moto answers a call in this process instead of AWS),
in every thread: the API function's requests and the worker's legs alike.

It reads commands on stdin, one a line, and answers each with one JSON line on stdout:
- `counts`: `{"moto_s": {op: seconds}, "moto_calls": {op: n}, "cpu_s": process CPU seconds}`
  so far (the caller takes differences around what it measures);
- `profile on` / `profile off`: while on, every API request is run under cProfile, and each
  request's profile is kept by its `Mcp-Method` (`profile off` answers `{}`);
- `profile`: per method, the profiled requests' time by where it was spent (`moto`,
  `botocore`, `ours` = mcp_tasks_aws and handlers, `powertools`, `pydantic`, `other`), and our
  costliest functions (self time), for `lifecycle.py`'s split.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
import threading
import time
from collections import defaultdict
from typing import Any

_LOCK = threading.Lock()
_MOTO_S: dict[str, float] = defaultdict(float)
_MOTO_CALLS: dict[str, int] = defaultdict(int)
_PROFILES: dict[str, list[pstats.Stats]] = defaultdict(list)
_PROFILING = threading.Event()


def count_moto() -> None:
    from moto.core.botocore_stubber import BotocoreStubber

    answer = BotocoreStubber.__call__

    def timed(self: Any, event_name: str, request: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return answer(self, event_name, request, **kwargs)
        finally:
            operation = ".".join(event_name.split(".")[1:3])
            with _LOCK:
                _MOTO_S[operation] += time.perf_counter() - start
                _MOTO_CALLS[operation] += 1

    BotocoreStubber.__call__ = timed  # type: ignore[method-assign]


def profile_api_requests() -> None:
    """Wrap the API handler the stack builds so that, while profiling, each request runs under
    its own cProfile (requests are served in several threads; a profile covers one)."""
    import mcp_tasks_aws.local.stack as stack

    wrap = stack._without_metric_backlog

    def wrapped(name: str, app: Any) -> Any:
        handler = wrap(name, app)
        if name != "api":
            return handler

        def profiled(event: dict[str, Any], context: Any) -> Any:
            if not _PROFILING.is_set():
                return handler(event, context)
            method = str((event.get("headers") or {}).get("mcp-method", "?"))
            profile = cProfile.Profile()
            profile.enable()
            try:
                return handler(event, context)
            finally:
                profile.disable()
                with _LOCK:
                    _PROFILES[method].append(pstats.Stats(profile))

        return profiled

    stack._without_metric_backlog = wrapped


def where(filename: str) -> str:
    if "/moto/" in filename or "/mcp_tasks_aws/local/" in filename:
        return "moto"  # the emulation: moto, and the embedded stack's glue around it
    if "/botocore/" in filename:
        return "botocore"
    if "/mcp_tasks_aws/" in filename or "/handlers/" in filename:
        return "ours"
    if "/aws_lambda_powertools/" in filename:
        return "powertools"
    if "/pydantic" in filename:
        return "pydantic"
    return "other"


def _cumulative(stats: pstats.Stats, filename_end: str, function: str) -> float:
    """Inclusive time of every function named `function` in a file ending `filename_end`."""
    return sum(
        row[3]
        for (filename, _, name), row in stats.stats.items()  # type: ignore[attr-defined]
        if name == function and filename.endswith(filename_end)
    )


def _self_by_kind(stats: pstats.Stats) -> dict[str, float]:
    """Self time by where it was spent; a builtin's goes to its callers' kinds."""
    shares: dict[str, float] = defaultdict(float)
    for (filename, _, _), row in stats.stats.items():  # type: ignore[attr-defined]
        self_time, callers = row[2], row[4]
        if filename != "~" or not callers:
            shares[where(filename)] += self_time
            continue
        total = sum(edge[2] for edge in callers.values()) or 1.0
        for (caller_file, _, _), edge in callers.items():
            shares[where(caller_file)] += self_time * edge[2] / total
    return shares


def profile_report() -> dict[str, Any]:
    with _LOCK:
        profiles = {method: list(stats) for method, stats in _PROFILES.items()}
    report: dict[str, Any] = {}
    for method, stats_list in profiles.items():
        inclusive: dict[str, float] = defaultdict(float)
        shares: dict[str, float] = defaultdict(float)
        ours: dict[str, float] = defaultdict(float)
        other: dict[str, float] = defaultdict(float)
        for stats in stats_list:
            inclusive["request"] += stats.total_tt  # type: ignore[attr-defined]
            inclusive["moto"] += _cumulative(stats, "timed_stack.py", "timed")
            inclusive["sdk call"] += _cumulative(stats, "botocore/client.py", "_make_api_call")
            for kind, seconds in _self_by_kind(stats).items():
                shares[kind] += seconds
            for (filename, line, function), row in stats.stats.items():  # type: ignore[attr-defined]
                if where(filename) == "ours":
                    short = filename.split("/mcp_tasks_aws/")[-1].split("/handlers/")[-1]
                    ours[f"{short}:{line} {function}"] += row[2]
                elif where(filename) == "other":
                    other["/".join(filename.split("/")[-2:]) + f" {function}"] += row[2]
        count = len(stats_list)
        report[method] = {
            "requests": count,
            "inclusive_ms": {k: v * 1000 / count for k, v in inclusive.items()},
            "ms": {k: v * 1000 / count for k, v in shares.items()},
            "ours_top": sorted(
                ((name, t * 1000 / count) for name, t in ours.items()), key=lambda x: -x[1]
            )[:8],
            "other_top": sorted(
                ((name, t * 1000 / count) for name, t in other.items()), key=lambda x: -x[1]
            )[:8],
        }
    return report


def commands() -> None:
    for line in sys.stdin:
        command = line.strip()
        if command == "counts":
            with _LOCK:
                answer: dict[str, Any] = {
                    "moto_s": dict(_MOTO_S),
                    "moto_calls": dict(_MOTO_CALLS),
                    "cpu_s": time.process_time(),
                }
        elif command == "profile on":
            with _LOCK:
                _PROFILES.clear()
            _PROFILING.set()
            answer = {}
        elif command == "profile off":
            _PROFILING.clear()
            answer = {}
        elif command == "profile":
            answer = profile_report()
        else:
            answer = {"error": f"unknown command {command!r}"}
        print(json.dumps(answer), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    from mcp_tasks_aws.local.stack import EmbeddedStack

    count_moto()
    profile_api_requests()
    stack = EmbeddedStack("127.0.0.1", args.port)
    threading.Thread(target=commands, daemon=True).start()
    try:
        stack.serve_forever()
    finally:
        stack.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
