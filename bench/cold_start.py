"""Cold start of the API function, measured as whole fresh processes.

Each case is a new `python -c` process timed from spawn to exit; the cases run interleaved
(A B C ... A B C ...) so that drift in machine load hits all of them alike. Cases:

- api:        import handlers/api.py with the deployed environment, then handle a
              `server/discover` and an inline `tools/call` (demo `text_stats`); both checked.
- api-import: the same import, no request (the difference is what handling costs).
- api-task:   `api`, then what the first task operation adds: the function creates its
              DynamoDB and Step Functions clients on first use (inline requests never do),
              so this is the cold start of an environment whose first request makes a task
              (less the two AWS calls themselves, which need a network).
- api-legacy: import, then a 2025-11-25 `initialize` (checked): what a legacy client's first
              request costs, the legacy side being built on first use (its next requests
              read the session's state, so they also create the DynamoDB client, as
              `api-task` does).
- floor:      import boto3 and create the DynamoDB and Step Functions clients, the least a
              function using those services pays (no network calls).
- sdk:        `import mcp.server`, the official MCP SDK's server side.
- python:     `python -c pass`, the interpreter alone.

Targets: api/floor <= 1.3 and api/sdk <= 0.5. The section is informational (a MISS does not
fail it), but a child that exits non-zero does: a benchmark of a broken handler is worthless.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from dataclasses import dataclass, field

from common import (
    API_HANDLER,
    PROJECT_ROOT,
    PYTHON,
    deployed_environment,
    lambda_context_fields,
    legacy_initialize,
    mcp_event,
    median_ms,
    p90_ms,
)

TARGETS = {("api", "floor"): 1.3, ("api", "sdk"): 0.5}
# Reported beside the targets: the first request that makes a task pays for the clients.
INFORMATIONAL = {
    ("api-task", "floor"): "first task request",
    ("api-task", "sdk"): "first task request",
    ("api-legacy", "floor"): "a 2025-11-25 initialize",
}
DEFAULT_ROUNDS = 15
CHILD_TIMEOUT_S = 120

# Loads handlers/api.py the way the Lambda runtime loads a handler module. sys.argv[1] names
# the file; sys.argv[2], if present, is JSON {"context": {...}, "events": [...]} to handle.
_IMPORT_API = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("api", sys.argv[1])
api = importlib.util.module_from_spec(spec)
sys.modules["api"] = api
spec.loader.exec_module(api)
api.handler  # what the Lambda runtime reads at init: builds the handler from the environment
"""

_HANDLE = """
import json

class Context:
    def __init__(self, fields):
        self.__dict__.update(fields)

    def get_remaining_time_in_millis(self):
        return 30_000

def message_of(response):
    body = response.get("body") or ""
    if (response.get("headers") or {}).get("content-type", "").startswith("text/event-stream"):
        body = [line[5:] for line in body.splitlines() if line.startswith("data:")][-1]
    return json.loads(body)

job = json.loads(sys.argv[2])
discover, call = (api.handler(event, Context(job["context"])) for event in job["events"])
if discover["statusCode"] != 200 or "result" not in message_of(discover):
    raise SystemExit(f"server/discover failed: {discover}")
result = message_of(call).get("result") if call["statusCode"] == 200 else None
if not result or result.get("isError") or "content" not in result:
    raise SystemExit(f"tools/call text_stats failed: {call}")
"""

_INITIALIZE = """
import json

class Context:
    def __init__(self, fields):
        self.__dict__.update(fields)

    def get_remaining_time_in_millis(self):
        return 30_000

job = json.loads(sys.argv[2])
answer = api.handler(job["events"][0], Context(job["context"]))
if answer["statusCode"] != 200 or "mcp-session-id" not in answer["headers"]:
    raise SystemExit(f"initialize failed: {answer}")
"""

_FORCE_CLIENTS = """
api.app.store.client.meta  # the first attribute access creates each client
api.app.runner.client.meta
"""

_FLOOR = """
import boto3
boto3.client("dynamodb", region_name="us-east-1")
boto3.client("stepfunctions", region_name="us-east-1")
"""


@dataclass
class Case:
    name: str
    argv: list[str]
    samples: list[float] = field(default_factory=list)


class ChildFailed(RuntimeError):
    pass


def cases() -> list[Case]:
    job = json.dumps(
        {
            "context": lambda_context_fields(),
            "events": [
                mcp_event("server/discover"),
                mcp_event(
                    "tools/call",
                    {"name": "text_stats", "arguments": {"text": "Hello world. Bye."}},
                    name="text_stats",
                    rid=2,
                ),
            ],
        }
    )
    initialize = json.dumps({"context": lambda_context_fields(), "events": [legacy_initialize()]})
    return [
        Case("api", [PYTHON, "-c", _IMPORT_API + _HANDLE, str(API_HANDLER), job]),
        Case("api-legacy", [PYTHON, "-c", _IMPORT_API + _INITIALIZE, str(API_HANDLER), initialize]),
        Case("api-import", [PYTHON, "-c", _IMPORT_API, str(API_HANDLER)]),
        Case(
            "api-task",
            [PYTHON, "-c", _IMPORT_API + _HANDLE + _FORCE_CLIENTS, str(API_HANDLER), job],
        ),
        Case("floor", [PYTHON, "-c", _FLOOR]),
        Case("sdk", [PYTHON, "-c", "import mcp.server"]),
        Case("python", [PYTHON, "-c", "pass"]),
    ]


def run_once(case: Case, env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        case.argv,
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT_S,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise ChildFailed(
            f"{case.name}: child exited {done.returncode}\n{done.stderr.strip() or done.stdout}"
        )
    return elapsed


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--rounds",
        type=int,
        default=DEFAULT_ROUNDS,
        help=f"cold-start rounds, each running every case once (default {DEFAULT_ROUNDS})",
    )


def main(args: argparse.Namespace) -> int:
    rounds = max(1, args.rounds)
    env = deployed_environment()
    measured = cases()
    try:
        for case in measured:  # warm-up, not counted: bytecode caches and the page cache
            run_once(case, env)
        for _ in range(rounds):
            for case in measured:
                case.samples.append(run_once(case, env))
    except (ChildFailed, subprocess.TimeoutExpired) as exc:
        print(f"FAILED {exc}")
        return 1

    by_name = {case.name: case for case in measured}
    print(f"{rounds} rounds, interleaved; each sample is one fresh process, spawn to exit")
    print(f"{'case':<12}{'median ms':>11}{'p90 ms':>9}")
    for case in measured:
        print(f"{case.name:<12}{median_ms(case.samples):>11.1f}{p90_ms(case.samples):>9.1f}")
    handling = median_ms(by_name["api"].samples) - median_ms(by_name["api-import"].samples)
    print(f"handling two requests (api - api-import medians): {handling:.1f} ms")
    for (top, bottom), target in TARGETS.items():
        ratio = median_ms(by_name[top].samples) / median_ms(by_name[bottom].samples)
        verdict = "PASS" if ratio <= target else "MISS"
        print(f"{top}/{bottom:<6} {ratio:5.2f}  (target <= {target})  {verdict}")
    for (top, bottom), what in INFORMATIONAL.items():
        ratio = median_ms(by_name[top].samples) / median_ms(by_name[bottom].samples)
        print(f"{top}/{bottom:<6} {ratio:5.2f}  ({what}, for information)")
    return 0
