"""Wall time of a whole task lifecycle over HTTP: ours, and FastMCP 4 beside it.

One lifecycle: `tools/call` slow_compute (seconds 0) with the tasks extension opted in, which
answers a CreateTaskResult, then `tasks/get` every 10 ms until the task is completed. Timed
from sending the call to reading the completed task, N runs (after a few unmeasured warm-up
runs), median and p90.

The same lifecycle from a 2025-11-25 session (the 2025-11-25 tasks utility) runs on the direct-path
server, interleaved run by run with the modern one: `tools/call` with `params.task`,
`tasks/get` every 10 ms until completed, then `tasks/result` (that revision's `tasks/get`
carries no result). Its ratio to the modern lifecycle is printed.

The servers run as child processes on a free 127.0.0.1 port and are driven by the same
client code in this process (bench/mcp_client.py):
- ours, twice: the embedded stack (`python -m mcp_tasks_aws.local.stack`, conformance
  tools): the real handlers, DynamoDB and Step Functions on moto, the worker invoked
  in-process; once with first legs run directly (an asynchronous invoke, as deployed), once
  with every leg in a Step Functions execution (`MCP_TASKS_WORKER_FUNCTION` empty);
- FastMCP 4 with fastmcp-tasks on its in-memory backend (bench/fastmcp_side.py), from a side
  virtualenv this section installs into .tools/fastmcp-venv on first use.

The comparison is informational: if the side install or its server fails, the section says
"skipped: <reason>" and goes on. Our stack failing (an HTTP error, a task that does not
complete) fails the section.

**Where the direct lifecycle's time goes.** The direct-path server is `bench/timed_stack.py`:
the same stack, which also counts the time moto spends answering each AWS call, in every
thread (the API's requests and the worker's legs). Around each measured lifecycle the section
reads those counts, so each run splits into moto's time and ours (wall time less moto's: the
process runs one thread at a time, so moto's time in any thread is time our code did not
run), and so does each request type (tools/call: PutItem and Invoke; tasks/get: GetItem).
Then a few more lifecycles run with every API request under cProfile, and the profile per
request type says where the rest goes (botocore, our code, Powertools, pydantic, other).
Target: ours (the lifecycle less moto) <= 1.2x FastMCP's whole lifecycle.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import fastmcp_side
from common import PROJECT_ROOT, PYTHON, deployed_environment, median_ms, p90_ms
from legacy_client import LegacyHttpClient
from mcp_client import McpHttpClient, McpHttpError, task_id_of

DEFAULT_RUNS = 30
SMOKE = {"lifecycle_runs": 1, "lifecycle_warmup": 0, "no_fastmcp": True}
"""The smoke: one measured lifecycle per server (and one profiled), no warm-up, no FastMCP
side install."""
WARMUP_RUNS = 3
POLL_INTERVAL_S = 0.01
LIFECYCLE_DEADLINE_S = 30.0
STARTUP_DEADLINE_S = 90.0
STOP_TIMEOUT_S = 10.0
OURS_TARGET = 1.2
PROFILED_RUNS = 5
TIMED_STACK = PROJECT_ROOT / "bench" / "timed_stack.py"


class ServerFailed(RuntimeError):
    pass


@dataclass
class Samples:
    label: str
    total: list[float] = field(default_factory=list)
    create: list[float] = field(default_factory=list)
    get: list[float] = field(default_factory=list)
    polls: list[int] = field(default_factory=list)
    moto: list[dict[str, float]] = field(default_factory=list)
    """Per lifecycle (timed stack only): moto's seconds by operation, during it."""

    def add(self, total: float, create: float, gets: list[float]) -> None:
        """One lifecycle: its whole time, its create's, and each of its gets'."""
        self.total.append(total)
        self.create.append(create)
        self.get.extend(gets)
        self.polls.append(len(gets))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Control:
    """The command pipe of a `timed_stack.py` child: one JSON line per command."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self._process = process

    def ask(self, command: str) -> dict[str, Any]:
        assert self._process.stdin is not None
        assert self._process.stdout is not None
        self._process.stdin.write(command + "\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        if not line:
            raise ServerFailed(f"the timed stack did not answer {command!r}")
        answer: dict[str, Any] = json.loads(line)
        return answer


@contextmanager
def server_process(
    argv: list[str], env: dict[str, str] | None, url: str, *, controlled: bool = False
) -> Iterator[Control | None]:
    """Run a server child until it answers server/discover at `url`; always stop it. With
    `controlled`, the child's stdin and stdout are its command pipe (`Control`)."""
    with tempfile.TemporaryFile(mode="w+") as log:
        pipes: dict[str, Any] = (
            {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": log, "text": True}
            if controlled
            else {"stdout": log, "stderr": subprocess.STDOUT}
        )
        process = subprocess.Popen(argv, cwd=PROJECT_ROOT, env=env, **pipes)

        def tail() -> str:
            log.seek(0)
            lines = [line for line in log.read().splitlines() if line.strip()]
            return " | ".join(lines[-3:])

        try:
            client = McpHttpClient(url)
            deadline = time.monotonic() + STARTUP_DEADLINE_S
            while True:
                if process.poll() is not None:
                    raise ServerFailed(f"exited {process.returncode} at startup: {tail()}")
                try:
                    client.request("server/discover")
                    break
                except McpHttpError as exc:
                    if time.monotonic() > deadline:
                        raise ServerFailed(
                            f"not ready after {STARTUP_DEADLINE_S:.0f}s: {exc}"
                        ) from exc
                time.sleep(0.1)
            yield Control(process) if controlled else None
            if process.poll() is not None:
                raise ServerFailed(f"exited {process.returncode} while measured: {tail()}")
        finally:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=STOP_TIMEOUT_S)


def poll_until_completed(
    get_task: Callable[[str], dict[str, Any]], task_id: str
) -> tuple[dict[str, Any], list[float]]:
    """`tasks/get` every POLL_INTERVAL_S until the task is completed: the task, and how long
    each get took."""
    gets: list[float] = []
    deadline = time.monotonic() + LIFECYCLE_DEADLINE_S
    while True:
        time.sleep(POLL_INTERVAL_S)
        before = time.perf_counter()
        task = get_task(task_id)
        gets.append(time.perf_counter() - before)
        status = task.get("status")
        if status == "completed":
            return task, gets
        if status in ("failed", "cancelled"):
            raise McpHttpError(f"task {task_id} ended {status}: {task}")
        if time.monotonic() > deadline:
            raise McpHttpError(f"task {task_id} not completed after {LIFECYCLE_DEADLINE_S}s")


def check_result(task_id: str, result: dict[str, Any]) -> None:
    content = result.get("content") or [{}]
    if "Computed lifecycle" not in str(content[0].get("text", "")):
        raise McpHttpError(f"task {task_id} completed with an unexpected result: {result}")


def lifecycle(client: McpHttpClient, samples: Samples | None) -> None:
    """One create + poll-until-completed; recorded into `samples` unless warming up."""
    start = time.perf_counter()
    created = client.call_tool("slow_compute", {"seconds": 0, "label": "lifecycle"})
    create_done = time.perf_counter()
    task_id = task_id_of(created)
    task, gets = poll_until_completed(client.get_task, task_id)
    end = time.perf_counter()
    check_result(task_id, task.get("result") or {})
    if samples is not None:
        samples.add(end - start, create_done - start, gets)


def legacy_lifecycle(client: LegacyHttpClient, samples: Samples | None) -> None:
    """The 2025-11-25 lifecycle: create with params.task, poll until completed, tasks/result."""
    start = time.perf_counter()
    task_id = client.create_task("slow_compute", {"seconds": 0, "label": "lifecycle"})
    create_done = time.perf_counter()
    _, gets = poll_until_completed(client.get_task, task_id)
    result = client.request("tasks/result", {"taskId": task_id})
    end = time.perf_counter()
    check_result(task_id, result)
    if samples is not None:
        samples.add(end - start, create_done - start, gets)


def measure(url: str, label: str, runs: int, warmup: int = WARMUP_RUNS) -> Samples:
    client = McpHttpClient(url)
    samples = Samples(label)
    for _ in range(warmup):
        lifecycle(client, None)
    for _ in range(runs):
        lifecycle(client, samples)
    return samples


OURS = {
    "direct": "mcp-tasks-aws, direct leg (embedded)",
    "step_functions": "mcp-tasks-aws, Step Functions (embedded)",
}


@dataclass
class Split:
    """Where the direct lifecycle's time went: the timed samples, and the profile."""

    samples: Samples
    profile: dict[str, Any]
    runs: int
    """Lifecycles profiled."""


def moto_during(control: Control, action: Callable[[], None]) -> dict[str, float]:
    """Run `action`: moto's seconds by operation meanwhile."""
    before = control.ask("counts")["moto_s"]
    action()
    after = control.ask("counts")["moto_s"]
    return {op: after[op] - before.get(op, 0.0) for op in after if after[op] > before.get(op, 0.0)}


def ours(
    runs: int, path: str, warmup: int = WARMUP_RUNS
) -> tuple[Samples, Samples | None, Split | None]:
    """The lifecycle on one embedded stack; on the direct path (as deployed, on the timed
    stack) a 2025-11-25 session's too, interleaved run by run, and the split of its time."""
    port = free_port()
    timed = path == "direct"
    module = (
        [str(TIMED_STACK)] if timed else ["-m", "mcp_tasks_aws.local.stack", "--host", "127.0.0.1"]
    )
    argv = [PYTHON, *module, "--port", str(port)]
    # The stack makes its own table, state machine, bucket and state secret: the deployed
    # function's names and secret ARN (which would win over them) must not reach it.
    env = {k: v for k, v in deployed_environment().items() if not k.startswith("MCP_TASKS_")}
    env["MCP_TASKS_TOOLS"] = "conformance"
    if path == "step_functions":
        env["MCP_TASKS_WORKER_FUNCTION"] = ""  # no direct legs: every leg in an execution
    url = f"http://127.0.0.1:{port}/mcp"
    with server_process(argv, env, url, controlled=timed) as control:
        modern = McpHttpClient(url)
        samples = Samples(OURS[path])
        legacy: LegacyHttpClient | None = None
        legacy_samples: Samples | None = None
        if path == "direct":
            legacy = LegacyHttpClient(url)
            legacy.connect()
            legacy_samples = Samples("mcp-tasks-aws, 2025-11-25 session")
        for _ in range(warmup):
            lifecycle(modern, None)
            if legacy is not None:
                legacy_lifecycle(legacy, None)
        for _ in range(runs):
            if control is None:
                lifecycle(modern, samples)
            else:
                samples.moto.append(moto_during(control, lambda: lifecycle(modern, samples)))
            if legacy is not None:
                legacy_lifecycle(legacy, legacy_samples)
        split = None
        if control is not None:
            profiled = min(PROFILED_RUNS, runs)
            control.ask("profile on")
            for _ in range(profiled):
                lifecycle(modern, None)
            control.ask("profile off")
            split = Split(samples, control.ask("profile"), profiled)
        return samples, legacy_samples, split


def fastmcp(runs: int, warmup: int = WARMUP_RUNS) -> Samples:
    port = free_port()
    argv = fastmcp_side.server_argv(port)  # installs the side venv on first use
    url = f"http://127.0.0.1:{port}/mcp"
    with server_process(argv, fastmcp_side.side_environment(), url):
        return measure(url, fastmcp_side.label(), runs, warmup)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--lifecycle-runs",
        type=int,
        default=DEFAULT_RUNS,
        help=f"measured task lifecycles per server (default {DEFAULT_RUNS})",
    )
    parser.add_argument(
        "--lifecycle-warmup",
        type=int,
        default=WARMUP_RUNS,
        help=f"lifecycle: unmeasured lifecycles first, per server (default {WARMUP_RUNS})",
    )
    parser.add_argument(
        "--no-fastmcp",
        action="store_true",
        help="lifecycle: skip the FastMCP comparison (and its side install)",
    )


def _row(s: Samples, width: int) -> str:
    polls = sum(s.polls) / len(s.polls)
    return (
        f"{s.label:<{width}}{median_ms(s.total):>10.1f}{p90_ms(s.total):>9.1f}"
        f"{median_ms(s.create):>14.1f}{median_ms(s.get):>13.1f}{polls:>7.1f}"
    )


def main(args: argparse.Namespace) -> int:
    runs, warmup = max(1, args.lifecycle_runs), max(0, args.lifecycle_warmup)
    try:
        mine, mine_legacy, split = ours(runs, "direct", warmup)
        machine, _, _ = ours(runs, "step_functions", warmup)
    except (McpHttpError, ServerFailed) as exc:
        print(f"FAILED mcp-tasks-aws: {exc}")
        return 1
    theirs: Samples | None = None
    skipped = "--no-fastmcp" if args.no_fastmcp else ""
    if not skipped:
        try:
            theirs = fastmcp(runs, warmup)
        except (fastmcp_side.SideUnavailable, ServerFailed, McpHttpError, OSError) as exc:
            skipped = f"{fastmcp_side.label()}: {exc}"

    print(
        f"task lifecycle over HTTP: tools/call slow_compute(seconds=0) as a task, then tasks/get "
        f"every {POLL_INTERVAL_S * 1000:.0f} ms until completed; {runs} runs after "
        f"{warmup} warm-up"
    )
    measured = (
        [mine, machine] + ([mine_legacy] if mine_legacy else []) + ([theirs] if theirs else [])
    )
    width = max(len(s.label) for s in measured) + 2
    print(
        f"{'server':<{width}}{'median ms':>10}{'p90 ms':>9}{'tools/call ms':>14}"
        f"{'tasks/get ms':>13}{'polls':>7}"
    )
    for s in measured:
        print(_row(s, width))
    print("(tools/call, tasks/get: median latency of one request; polls: mean per lifecycle)")
    ratio = median_ms(mine.total) / median_ms(machine.total)
    print(f"ratio direct/Step Functions (median lifecycle): {ratio:.2f}")
    if mine_legacy is not None:
        legacy_ratio = median_ms(mine_legacy.total) / median_ms(mine.total)
        print(
            f"ratio 2025-11-25/2026-07-28 (median lifecycle, same server): {legacy_ratio:.2f}  "
            "(the 2025-11-25 one adds tasks/result and a session read per request)"
        )
    if theirs is None:
        print(f"skipped: {skipped}")
    else:
        for s in (mine, machine):
            ratio = median_ms(s.total) / median_ms(theirs.total)
            print(f"ratio {s.label} / FastMCP (median lifecycle): {ratio:.2f}  (informational)")
    if split is not None:
        report_split(split, theirs)
    return 0


def report_split(split: Split, theirs: Samples | None) -> None:
    s = split.samples
    moto = [sum(m.values()) for m in s.moto]
    ours_ms = statistics.median((t - m) * 1000 for t, m in zip(s.total, moto, strict=True))

    def per_call(ops: tuple[str, ...], calls_per_run: int) -> float:
        return (
            statistics.median(sum(m.get(op, 0.0) for op in ops) for m in s.moto)
            * 1000
            / max(1, calls_per_run)
        )

    polls = round(sum(s.polls) / len(s.polls))
    create_moto = per_call(("dynamodb.PutItem", "lambda.Invoke"), 1)
    get_moto = per_call(("dynamodb.GetItem",), polls)
    leg_moto = per_call(("dynamodb.UpdateItem",), 1)
    print()
    print(
        "where the direct lifecycle's time goes (the same runs; moto: answering AWS calls in "
        "this process, any thread; ours: the rest of the wall time)"
    )
    print(
        f"   lifecycle   {median_ms(s.total):7.1f} ms = moto {statistics.median(moto) * 1000:5.1f}"
        f" + ours {ours_ms:5.1f}"
    )
    print(
        f"   tools/call  {median_ms(s.create):7.1f} ms = moto {create_moto:5.1f} (PutItem, Invoke)"
        f" + ours {median_ms(s.create) - create_moto:5.1f}"
    )
    print(
        f"   tasks/get   {median_ms(s.get):7.1f} ms = moto {get_moto:5.1f} (GetItem)"
        f" + ours {median_ms(s.get) - get_moto:5.1f}"
    )
    print(f"   the worker's leg: moto {leg_moto:5.1f} ms (UpdateItem: claim, outcome)")
    if theirs is not None:
        whole = median_ms(s.total) / median_ms(theirs.total)
        mine = ours_ms / median_ms(theirs.total)
        verdict = "PASS" if mine <= OURS_TARGET else "MISS"
        print(f"ratio direct lifecycle / FastMCP's whole lifecycle: {whole:.2f} (moto included)")
        print(
            f"ratio ours (less moto) / FastMCP's whole lifecycle: {mine:.2f} "
            f"(target <= {OURS_TARGET})  {verdict}"
        )
    print(
        f"profile per request type ({split.runs} lifecycles under cProfile, which slows "
        "everything: read the shares), self time per request, ms:"
    )
    kinds = ("moto", "botocore", "ours", "powertools", "pydantic", "other")
    print(
        f"   {'method':<12}{'request':>9}{'SDK call':>10}{'in moto':>9}"
        + "".join(f"{k:>11}" for k in kinds)
    )
    for method, row in sorted(split.profile.items()):
        inclusive = row["inclusive_ms"]
        print(
            f"   {method:<12}{inclusive.get('request', 0.0):>9.2f}"
            f"{inclusive.get('sdk call', 0.0):>10.2f}{inclusive.get('moto', 0.0):>9.2f}"
            + "".join(f"{row['ms'].get(k, 0.0):>11.2f}" for k in kinds)
        )
    print(
        "   (request, SDK call, in moto: inclusive; then self time by where it ran, a builtin's "
        "counted with its caller's; moto includes the embedded stack's glue, mcp_tasks_aws.local)"
    )
    for method, row in sorted(split.profile.items()):
        top = ", ".join(f"{name} {ms:.2f}" for name, ms in row["ours_top"][:5])
        print(f"   our costliest in {method} (self): {top}")
        top = ", ".join(f"{name} {ms:.2f}" for name, ms in row["other_top"][:5])
        print(f"   the rest's costliest in {method} (self): {top}")
