"""Production latency on paper: from `tools/call` to the result in the client, on AWS.

There is no AWS account here, so this is a model, not a measurement of AWS: a dated table of
assumed service latencies (`ASSUMED`, typical in-region medians; replace them with your own
CloudWatch and X-Ray figures), and two figures measured here:
- the API function's own time per warm request (a task-creating `tools/call` and a
  `tasks/get`, CPU on this machine's core, scaled to the function's share of a vCPU): the
  handler with its AWS calls answered in-process after botocore serialised and signed them,
  the same child as the cold-start section's `api-task` (`cold_start.py`), repeated warm;
- the first task request's cold start, fresh and restored from a SnapStart snapshot (the
  cold-start section's api-task and api-task-restored).

Measured requests answer their AWS calls in-process; the DynamoDB and Lambda round trips come
from the table. The timeline of a task on the direct path: the client sends `tools/call`; API
Gateway; the API function writes the task (PutItem) and queues its first leg (an asynchronous
Invoke); the CreateTaskResult goes back. Lambda delivers the event to the worker, which claims
the task (UpdateItem), runs the tool (0 s or 1 s here) and writes the outcome (UpdateItem). The
client sleeps the CreateTaskResult's `pollIntervalMs`, then polls `tasks/get` (GetItem) at the
interval each answer suggests, until one shows the result. The section prints, for a 0 s and a
1 s task with a warm or cold worker: when the task is done and when the client has its result,
with the server's first `pollIntervalMs` (500 ms) and with the one the model suggests: the
earliest a poll can find a warm 0 s task done, rounded up to 50 ms.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import cold_start
from common import PYTHON, deployed_environment, lambda_context_fields, mcp_event
from cost_model import FULL_CORE_MB, MEMORY_MB
from mcp_client import TASK_CAPABILITIES

from mcp_tasks_aws.config import Settings
from mcp_tasks_aws.tasks.model import suggested_poll_interval

ASSUMED_AS_OF = "typical in-region medians, 2025 (assumptions: check your account's metrics)"
ASSUMED = {
    "client_rtt": 0.030,  # the client to the region and back (network only)
    "api_gateway": 0.010,  # HTTP API, added by the gateway per request
    "lambda_invoke": 0.005,  # the Lambda service routing a synchronous invoke (warm)
    "dynamodb": 0.005,  # one single-item read or write
    "async_accept": 0.015,  # an asynchronous Invoke (InvocationType=Event) accepted, 202
    "async_delivery": 0.050,  # the queued event reaching a warm worker
    "runtime_init": 0.150,  # a new environment's runtime start, before our init code
    "snapstart_restore": 0.250,  # Lambda bringing a snapshot back (Python, 512 MB)
}
WARM_ROUNDS = 15
ROUND_TO_S = 0.05

_MEMORY_AWS = """
from mcp_tasks_aws.aws import clients as _clients
import json as _json

_items = {}

class _Raw:
    def __init__(self, body):
        self.body = body

    def stream(self, **_):
        yield self.body

def _answer(request, event_name, **_):
    from botocore.awsrequest import AWSResponse

    headers = {"x-amzn-requestid": "bench", "content-type": "application/x-amz-json-1.0"}
    dynamodb = event_name.startswith("before-send.dynamodb")
    body = _json.loads(request.body or b"{}") if dynamodb else {}
    if event_name.endswith(".PutItem"):
        _items[body["Item"]["taskId"]["S"]] = body["Item"]
        return AWSResponse(request.url, 200, headers, _Raw(b"{}"))
    if event_name.endswith(".GetItem"):
        item = _items.get(body["Key"]["taskId"]["S"])
        return AWSResponse(request.url, 200, headers, _Raw(_json.dumps({"Item": item}).encode()))
    if event_name.endswith(".Invoke"):
        return AWSResponse(request.url, 202, headers, _Raw(b""))
    raise SystemExit(f"unexpected AWS call {event_name}")

_create = _clients.Clients._create

def _create_answered(self, service, *policy):
    client = _create(self, service, *policy)
    client.meta.events.register("before-send", _answer)
    return client

_clients.Clients._create = _create_answered
"""

_WARM = """
import time

job = json.loads(sys.argv[2])

def message_of(response):
    body = response.get("body") or ""
    if (response.get("headers") or {}).get("content-type", "").startswith("text/event-stream"):
        body = [line[5:] for line in body.splitlines() if line.startswith("data:")][-1]
    return json.loads(body)

def timed(event):
    wall, cpu = time.perf_counter(), time.process_time()
    answer = message_of(api.handler(event, Context(job["context"])))
    if "result" not in answer:
        raise SystemExit(f"request failed: {answer}")
    return answer["result"], time.process_time() - cpu, time.perf_counter() - wall

samples = {"create": [], "get": []}
for round_ in range(job["rounds"] + 3):
    created, create_cpu, _ = timed(job["task"])
    get = json.loads(json.dumps(job["get"]).replace("TASKID", created["taskId"]))
    _, get_cpu, _ = timed(get)
    if round_ >= 3:  # warm-up first
        samples["create"].append(create_cpu)
        samples["get"].append(get_cpu)
print(json.dumps(samples))
"""


@dataclass
class Measured:
    create_cpu_s: float
    get_cpu_s: float
    cold_cpu_s: float
    restored_cpu_s: float


def measure(rounds: int, cold_rounds: int, cold_warmup: int = 1) -> Measured:
    with tempfile.TemporaryDirectory(prefix="mcp-tasks-latency-") as folder:
        staged = cold_start.StagedCode(Path(folder) / "shipped", bytecode=True)
        get = mcp_event(
            "tasks/get", {"taskId": "TASKID"}, name="TASKID", rid=4, capabilities=TASK_CAPABILITIES
        )
        job = {
            "context": lambda_context_fields(),
            "task": cold_start._task_event(),
            "get": get,
            "rounds": rounds,
        }
        script = _MEMORY_AWS + cold_start._IMPORT_API + cold_start._CONTEXT + _WARM
        done = subprocess.run(
            [PYTHON, "-c", script, str(staged.api_handler), json.dumps(job)],
            env=staged.env(deployed_environment()),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if done.returncode != 0:
            raise cold_start.ChildFailed(done.stderr.strip() or done.stdout)
        samples = json.loads(done.stdout.strip().splitlines()[-1])
    cold = cold_start.first_task_cpu_s(cold_rounds, cold_warmup)
    return Measured(
        statistics.median(samples["create"]),
        statistics.median(samples["get"]),
        cold["api-task"],
        cold["api-task-restored"],
    )


def on_lambda(cpu_s: float) -> float:
    """CPU time on this machine's core, as a MEMORY_MB function takes it."""
    return cpu_s * FULL_CORE_MB / min(MEMORY_MB, FULL_CORE_MB)


@dataclass
class Timeline:
    created_s: float  # the client has the CreateTaskResult
    done_s: float  # the outcome is written
    get_s: float  # one tasks/get, client to client


def timeline(m: Measured, work_s: float, worker: str) -> Timeline:
    a = ASSUMED
    request = a["client_rtt"] + a["api_gateway"] + a["lambda_invoke"]
    created = request + on_lambda(m.create_cpu_s) + a["dynamodb"] + a["async_accept"]
    queued = created - a["client_rtt"] / 2 - a["api_gateway"] / 2  # the Invoke returned
    start = {
        "warm": 0.0,
        "cold": a["runtime_init"] + on_lambda(m.cold_cpu_s),
        "restored": a["snapstart_restore"] + on_lambda(m.restored_cpu_s),
    }[worker]
    # The worker's own time per leg is taken as the API's per task-creating request (two
    # DynamoDB writes and our code around them): not measured separately here.
    leg = start + on_lambda(m.create_cpu_s) + 2 * a["dynamodb"] + work_s
    done = queued + a["async_delivery"] + leg
    get = request + on_lambda(m.get_cpu_s) + a["dynamodb"]
    return Timeline(created, done, get)


def result_at(line: Timeline, first_hint_s: float) -> tuple[float, int]:
    """When a client sleeping each hint has the result, and how many polls it took. A poll
    sees the outcome if it reached the table after it was written (half its round trip)."""
    settings = Settings()
    t, hint, polls = line.created_s, first_hint_s, 0
    while True:
        t += hint
        polls += 1
        if t + line.get_s / 2 >= line.done_s:
            return t + line.get_s, polls
        age_ms = int(t * 1000)
        hint = (
            suggested_poll_interval(
                age_ms, settings.poll_interval_ms, settings.max_poll_interval_ms
            )
            / 1000
        )
        t += line.get_s


SMOKE = {"latency_rounds": 1, "latency_cold_rounds": 1}
"""The smoke: the fewest warm requests (the section measures at least three), one fresh and
one restored first task request (and `--cold-warmup`'s smoke: no warm-up)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--latency-rounds",
        type=int,
        default=WARM_ROUNDS,
        help=f"latency: warm requests measured per kind (default {WARM_ROUNDS})",
    )
    parser.add_argument(
        "--latency-cold-rounds",
        type=int,
        default=0,
        help="latency: first task requests measured, fresh and restored (default: a third of "
        "--latency-rounds, at least 3)",
    )


def main(args: argparse.Namespace) -> int:
    rounds = max(3, args.latency_rounds)
    cold_rounds = args.latency_cold_rounds or max(3, rounds // 3)
    try:
        m = measure(rounds, max(1, cold_rounds), max(0, args.cold_warmup))
    except (cold_start.ChildFailed, subprocess.TimeoutExpired) as exc:
        print(f"FAILED {exc}")
        return 1
    default_hint = Settings().poll_interval_ms / 1000
    warm = timeline(m, 0.0, "warm")
    suggested = math.ceil((warm.done_s - warm.created_s - warm.get_s / 2) / ROUND_TO_S) * ROUND_TO_S
    suggested = max(ROUND_TO_S, suggested)
    print(f"assumed service latencies ({ASSUMED_AS_OF}):")
    print("   " + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in ASSUMED.items()))
    print(
        f"measured here, as a {MEMORY_MB} MB function takes them: a warm task-creating "
        f"tools/call {on_lambda(m.create_cpu_s) * 1000:.0f} ms, a warm tasks/get "
        f"{on_lambda(m.get_cpu_s) * 1000:.0f} ms, a first task request "
        f"{on_lambda(m.cold_cpu_s) * 1000:.0f} ms fresh, {on_lambda(m.restored_cpu_s) * 1000:.0f}"
        " ms restored (SnapStart)"
    )
    print(
        f"{'task, worker':<22}{'created':>9}{'done':>8}"
        f"{f'result @{default_hint * 1000:.0f} ms':>16}{'polls':>7}"
        f"{f'result @{suggested * 1000:.0f} ms':>16}{'polls':>7}"
    )
    for work_s in (0.0, 1.0):
        for worker in ("warm", "restored", "cold"):
            line = timeline(m, work_s, worker)
            default_at, default_polls = result_at(line, default_hint)
            suggested_at, suggested_polls = result_at(line, suggested)
            print(
                f"{f'{work_s:.0f} s, {worker}':<22}{line.created_s:>8.2f}s{line.done_s:>7.2f}s"
                f"{default_at:>15.2f}s{default_polls:>7}{suggested_at:>15.2f}s{suggested_polls:>7}"
            )
    one_s = timeline(m, 1.0, "warm")
    (fast_at, fast_polls), (slow_at, slow_polls) = (
        result_at(one_s, suggested),
        result_at(one_s, default_hint),
    )
    print(
        f"suggested first pollIntervalMs: {suggested * 1000:.0f} ms for a tool whose work is "
        "usually instant (the earliest a poll finds a warm 0 s task done; a tool sets it with "
        "poll_interval_ms=); each poll is one GetItem, as before"
    )
    print(
        f"the server's default stays {default_hint * 1000:.0f} ms: with {suggested * 1000:.0f} ms "
        f"first, a warm 1 s task takes {fast_polls - slow_polls:+d} poll(s) and has its result "
        f"at {fast_at:.2f} s instead of {slow_at:.2f} s (its outcome lands between the "
        "age-based polls either way): most tasks would pay a request more for nothing"
    )
    return 0
