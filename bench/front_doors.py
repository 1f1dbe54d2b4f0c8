"""`make bench`, section front-doors: the STREAMING door beside the BUFFERED one, in one run.

1. **Cold start** (CPU time of a fresh process, median of `--door-rounds`):
   - the adapter-hosted app: `handlers/run.sh`'s command (uvicorn on `handlers.stream:asgi`)
     started with the deployed environment, polled on its readiness path as the Lambda Web
     Adapter polls it (every 10 ms), then `server/discover` and an inline `tools/call` over
     HTTP, then stopped; the adapter's own binary is not run (it cannot be had here) and its
     CPU is not counted;
   - today's handler: `handlers/api.py` imported as the Lambda runtime imports it, and the same
     two requests as events;
   - the floor: `import boto3` and the DynamoDB and Step Functions clients.
   Both from source with bytecode cached after `--cold-warmup` rounds (default 1; none in the
   smoke), not the staged build of the cold-start section: compare the ratios.
2. **Time to first byte of a progress event**: `checksum_archive`, 4 files of 0.5 s, with a
   progressToken. Streamed: the adapter-hosted app, the first progress event on the wire.
   Buffered: the buffered handler as Lambda runs it (no response stream): API Gateway gets
   the answer, its progress inside, when the handler returns. The adapter-hosted app started
   for it then serves the hop's requests (3.).
3. **Cost per million tasks**, cases 1 to 4 (`cost_model`) on the direct path, behind each
   door: the REST API's request price ($3.50 a million against $1.00), the follow-up
   invocation API Gateway makes after each streamed answer, the adapter's HTTP hop on every
   API invocation (measured here), and streamed listen windows, which hold until the task
   ends or their 240 s bound (so a watched 5-minute task holds the API function for its whole
   run) and carry the result (no `tasks/get`). And a long inline call, which only the
   streaming door can make.
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import signal
import socket
import statistics
import subprocess
import time
from dataclasses import dataclass, replace
from typing import Any

import cold_start
from common import PROJECT_ROOT, PYTHON, deployed_environment, lambda_context_fields, mcp_event
from cost_model import (
    CASES,
    MEMORY_MB,
    PRICES,
    STORE_POLL_S,
    Bill,
    Measured,
    Op,
    bill,
    bill_work,
    timeline,
)
from costs import measure_path, per_million

REST_REQUEST = 3.50 / 1e6  # REST API, first 333 M requests a month (2025 list price)
STREAM_WINDOW_S = 240.0  # template.yaml: MCP_TASKS_LISTEN_WINDOW_MS behind STREAMING
STREAM_INLINE_S = 240.0  # template.yaml: MCP_TASKS_INLINE_DEADLINE_MS behind STREAMING
FOLLOW_UP = Op(seconds=0.0002, calls=[])  # the acknowledged follow-up invocation
FILES, SECONDS_PER_FILE = 4, 0.5
STAGE_CONTEXT = json.dumps({"stage": "api", "identity": {"sourceIp": "203.0.113.9"}})


IMPORT_ROUNDS = 5
"""Fresh processes behind the import cost of uvicorn (at most `--door-rounds`)."""
SMOKE = {"door_rounds": 1}
"""The smoke: one cold-start round per door (and `--cold-warmup`'s smoke: no warm-up)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--door-rounds", type=int, default=7, help="front-doors: cold-start rounds (default 7)"
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def environment(**extra: str) -> dict[str, str]:
    env = deployed_environment(MCP_TASKS_STATE_SECRET=os.urandom(16).hex(), **extra)
    env.pop("MCP_TASKS_STATE_SECRET_ARN", None)  # no Secrets Manager here
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode cached after the warm-up, as shipped
    return env


def http_request(port: int, event: dict[str, Any]) -> http.client.HTTPResponse:
    """An API Gateway event, forwarded as the adapter forwards a REST invocation."""
    headers = {
        **event["headers"],
        "x-amzn-request-context": STAGE_CONTEXT,
        "x-amzn-lambda-context": json.dumps({"deadline": int((time.time() + 250) * 1000)}),
    }
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("POST", "/api/mcp", event["body"], headers)
    return conn.getresponse()


class AdapterHosted:
    """handlers/run.sh's server, started as the adapter starts it."""

    def __init__(self) -> None:
        self.port = free_port()
        self.env = environment(AWS_LWA_PORT=str(self.port), AWS_LWA_INVOKE_MODE="response_stream")
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["/bin/bash", str(PROJECT_ROOT / "handlers" / "run.sh")],
            cwd=PROJECT_ROOT,
            env={**self.env, "PATH": f"{os.path.dirname(PYTHON)}:{self.env.get('PATH', '')}"},
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request("GET", "/_lambda/ready")
                if conn.getresponse().status == 200:
                    return
            except OSError:
                time.sleep(0.01)  # the adapter's readiness step
        raise RuntimeError("the adapter-hosted app never became ready")

    def stop(self) -> float:
        """Stop it; its CPU time (user + system, the whole process group's leader)."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGTERM)
        _, _, usage = os.wait4(self.process.pid, 0)
        self.process.returncode = 0
        return usage.ru_utime + usage.ru_stime


def adapter_cold_start() -> float:
    hosted = AdapterHosted()
    hosted.start()
    for event in cold_start._events():
        response = http_request(hosted.port, event)
        body = response.read()
        if response.status != 200:
            raise RuntimeError(f"the adapter-hosted app answered {response.status}: {body!r}")
    return hosted.stop()


def child_cpu(argv: list[str]) -> float:
    case = cold_start.Case("child", argv)
    _, cpu = cold_start.run_once(case, environment())
    return cpu


def handler_argv() -> list[str]:
    job = {"context": lambda_context_fields(), "events": cold_start._events()}
    handler = str(PROJECT_ROOT / "handlers" / "api.py")
    return [PYTHON, "-c", cold_start._IMPORT_API + cold_start._HANDLE, handler, json.dumps(job)]


def cold_starts(rounds: int, warmup: int = 1) -> dict[str, float]:
    """The median CPU of `rounds` rounds after `warmup` ones (which warm the bytecode and are
    not counted)."""
    runs: dict[str, list[float]] = {"adapter": [], "handler": [], "floor": []}
    floor = [PYTHON, "-c", cold_start._FLOOR]
    for _ in range(warmup + rounds):
        runs["adapter"].append(adapter_cold_start())
        runs["handler"].append(child_cpu(handler_argv()))
        runs["floor"].append(child_cpu(floor))
    return {name: statistics.median(values[warmup:]) for name, values in runs.items()}


def progress_event() -> dict[str, Any]:
    arguments = {"files": FILES, "seconds_per_file": SECONDS_PER_FILE}
    params = {"name": "checksum_archive", "arguments": arguments}
    event = mcp_event("tools/call", params, name="checksum_archive")
    body = json.loads(event["body"])
    body["params"]["_meta"]["progressToken"] = "p"
    event["body"] = json.dumps(body)
    return event


def first_progress_streamed(hosted: AdapterHosted) -> tuple[float, float]:
    """(first progress event, result) in seconds, through the adapter-hosted app."""
    started = time.monotonic()
    response = http_request(hosted.port, progress_event())
    first = done = math.nan
    while line := response.readline():
        if b"notifications/progress" in line and math.isnan(first):
            first = time.monotonic() - started
        if b'"result"' in line:
            done = time.monotonic() - started
    return first, done


def first_progress_buffered() -> tuple[float, float]:
    """(first progress byte, result) as the buffered door delivers them: both at the end."""
    from mcp_tasks_aws.local.apigw_emulator import LocalLambdaContext

    handler = buffered_handler()
    started = time.monotonic()
    answer = handler(progress_event(), LocalLambdaContext(timeout_s=29))
    done = time.monotonic() - started
    if "notifications/progress" not in answer["body"]:
        raise RuntimeError("the buffered answer has no progress")
    return done, done


def buffered_handler() -> Any:
    """The buffered door's handler in this process, as Lambda runs it (Powertools quiet)."""
    from mcp_tasks_aws.app import App
    from mcp_tasks_aws.config import Settings
    from mcp_tasks_aws.local.stack import POWERTOOLS_LOCAL_DEFAULTS, handler_module

    for key, value in POWERTOOLS_LOCAL_DEFAULTS.items():
        os.environ.setdefault(key, value)
    return handler_module("api").make_handler(App(Settings.from_env(environment())))


def hop_seconds(hosted: AdapterHosted, repeats: int = 30) -> float:
    """The adapter's HTTP hop per API invocation: `server/discover` through the hosted app's
    port against the same request handed to the buffered handler in-process (median)."""
    from mcp_tasks_aws.local.apigw_emulator import LocalLambdaContext

    discover = cold_start._events()[0]
    handler = buffered_handler()
    through, direct = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        http_request(hosted.port, discover).read()
        through.append(time.perf_counter() - started)
        started = time.perf_counter()
        handler(discover, LocalLambdaContext())
        direct.append(time.perf_counter() - started)
    return max(0.0, statistics.median(through) - statistics.median(direct))


@dataclass
class StreamedBill(Bill):
    """A task's bill behind the streaming door: REST's request price, and one follow-up
    invocation after each streamed answer."""

    def lines(self) -> dict[str, float]:
        lines = super().lines()
        lines["API Gateway"] = self.requests * REST_REQUEST
        return lines


def streamed(m: Measured, hop_s: float) -> Measured:
    """The measured operations behind the adapter: each API invocation takes the hop more."""
    hop = dict.fromkeys(("create", "get", "update", "listen_open"))
    for name in hop:
        op: Op = getattr(m, name)
        hop[name] = replace(op, seconds=op.seconds + hop_s)
    return replace(m, **hop)


def streamed_bill(number: int, m: Measured) -> StreamedBill:
    """Cases 1 to 4 behind the streaming door (direct path). Polling: as buffered. Listening:
    windows hold until the task ends or STREAM_WINDOW_S, the client listens again at once
    after a window that ended at its bound, and the completion carries the result."""
    case = CASES[number - 1]
    base = bill(case, m, "direct")
    polled = StreamedBill(**{f: getattr(base, f) for f in base.__dataclass_fields__})
    if not case.listening:
        b = polled
    else:
        b = StreamedBill(memory=base.memory, transitions=base.transitions)
        bill_work(b, case, m)
        ends = timeline(case).ends_at
        held = math.ceil(ends / STORE_POLL_S) * STORE_POLL_S  # seen at the next store read
        while held > 0:
            window = min(held, STREAM_WINDOW_S)
            b.add(m.listen_open, waiting_s=window)
            b.rru += math.ceil(window / STORE_POLL_S)
            held -= window
    for _ in range(b.requests):  # API Gateway's follow-up after each streamed answer
        b.add(FOLLOW_UP, request=False)
    return b


def inline_call(seconds: float) -> float:
    """One inline call of `seconds` on the API function behind the streaming door."""
    b = StreamedBill()
    b.add(Op(seconds=0.005, calls=[]), waiting_s=seconds)
    b.add(FOLLOW_UP, request=False)
    return b.total


def main(args: argparse.Namespace) -> int:
    rounds = max(1, args.door_rounds)
    cpu = cold_starts(rounds, max(0, args.cold_warmup))
    floor = cpu["floor"]
    print(f"cold start, CPU of a fresh process (median of {rounds}; source with cached bytecode):")
    print(f"   floor (boto3 + 2 clients)           {cpu['floor'] * 1000:7.0f} ms")
    for name, label in (("handler", "BUFFERED handler"), ("adapter", "STREAMING app (uvicorn)")):
        print(
            f"   {label:<36}{cpu[name] * 1000:7.0f} ms  {cpu[name] / floor:5.2f}x floor  "
            f"{cpu[name] / cpu['handler']:5.2f}x the buffered handler"
        )
    uvicorn_ms = import_cost_ms("uvicorn", min(IMPORT_ROUNDS, rounds))
    print(f"   import uvicorn (fresh process, less `python -c pass`): {uvicorn_ms:.0f} ms")

    # One adapter-hosted app, already warm, for the progress event and then the hop.
    hosted = AdapterHosted()
    hosted.start()
    try:
        streamed_first, streamed_done = first_progress_streamed(hosted)
        hop_s = hop_seconds(hosted)
    finally:
        hosted.stop()
    buffered_first, _ = first_progress_buffered()
    print()
    print(f"first progress event of a {FILES * SECONDS_PER_FILE:.0f} s inline call (4 reports):")
    print(f"   STREAMING  {streamed_first * 1000:7.0f} ms (result at {streamed_done:.2f} s)")
    print(f"   BUFFERED   {buffered_first * 1000:7.0f} ms (with the result)")
    print(f"   streamed / buffered = {streamed_first / buffered_first:.3f}")

    m = measure_path("direct", max(1, getattr(args, "cost_repeats", 3)))
    ms = streamed(m, hop_s)
    print()
    print(
        f"cost per million tasks, direct path, {MEMORY_MB} MB (adapter hop {hop_s * 1000:.1f} ms "
        f"per API invocation; REST ${REST_REQUEST * 1e6:.2f}/M against HTTP "
        f"${PRICES['apigw_request'] * 1e6:.2f}/M):"
    )
    print(f"{'case':<40}{'BUFFERED':>12}{'STREAMING':>12}{'ratio':>8}")
    for case in CASES:
        buffered = bill(case, m, "direct")
        streaming = streamed_bill(case.number, ms)
        print(
            f"{case.number}. {case.name:<37}{per_million(buffered.total):>12}"
            f"{per_million(streaming.total):>12}{streaming.total / buffered.total:>8.2f}"
        )
    for seconds in (10.0, 60.0, STREAM_INLINE_S):
        print(
            f"an inline call of {seconds:.0f} s (STREAMING only past 28 s): "
            f"{per_million(inline_call(seconds))} per million calls"
        )
    return 0


def import_cost_ms(module: str, rounds: int = IMPORT_ROUNDS) -> float:
    def timed(code: str) -> float:
        return child_cpu([PYTHON, "-c", code])

    base = statistics.median(timed("pass") for _ in range(rounds))
    return (statistics.median(timed(f"import {module}") for _ in range(rounds)) - base) * 1000
