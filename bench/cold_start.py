"""Cold start of the API function, measured as whole fresh processes.

Each case is a new `python -c` process timed from spawn to exit; the cases run interleaved
(A B C ... A B C ...) so that drift in machine load hits all of them alike.

The `api*` cases run our code as a function package holds it: `handlers/` and `mcp_tasks_aws/`
(less the embedded stack) copied into a temporary folder and compiled to bytecode the way
`make build` compiles them (hash-based, unchecked), first on `PYTHONPATH`; the dependencies
come from the virtual environment, which pip compiled when it installed them. Cases:

- api:        import handlers/api.py with the deployed environment, then handle a
              `server/discover` and an inline `tools/call` (demo `text_stats`); both checked.
- api-import: the same import, no request (the difference is what handling costs).
- durable-import: the durable function's init: handlers/durable.py imported (the durable
              execution SDK with it) and its handler built from the deployed environment;
              no invocation (its first one would checkpoint with the durable service).
- api-managed: `api`'s import with MCP_TASKS_TOOLS=examples/managed/tools.yaml (a server
              that serves only a declaration: six managed tools), then `server/discover`
              and `tools/list` (checked: the six, and the three task-handle tools a client
              without tasks is shown); its first calls would reach AWS, so none is made.
- api-task:   `api`, then a `tools/call` that creates a task (demo `checksum_archive`, the
              client allowing tasks): the function creates its DynamoDB and Lambda clients on
              this first use (inline requests never do; a task's first leg runs directly, so
              Step Functions waits for an update or a cancel), loads the task result models,
              and makes its two calls, PutItem and Invoke. botocore serialises and signs them;
              a `before-send` hook answers them as AWS would (an empty PutItem, a 202), since
              there is no network. The cold start of an environment whose first request makes
              a task, less the two round trips.
- api-task-restored: `api-task` as SnapStart serves it: a child initialises the function
              (the runtime's hook library stood in for), runs its before-snapshot hooks
              (priming), then forks; the fork is a restored copy, which runs the after-restore
              hooks and the same three requests. Timed from the fork to the end of the last
              request (wall and CPU, as the fork reports them): what a restored environment
              still pays for its first task request. Lambda's own restore (bringing the
              snapshot's memory back) comes on top; its billed part is the after-restore hooks.
- api-legacy: import, then a 2025-11-25 `initialize` (checked): what a legacy client's first
              request costs, the legacy side being built on first use (its next requests
              read the session's state, so they also create the DynamoDB client, as
              `api-task` does). The session is sealed with the state secret, which a
              deployed function reads from Secrets Manager on first use; there is no
              network here, so the secret's value stands in for its ARN (that read, a
              client and one call, is not measured).
- api-oauth:  `api` in AuthMode OAUTH, both requests carrying a bearer token: the first
              authenticated request of an environment. It imports the crypto, fetches the
              issuer's keys (from a JWKS this process serves on 127.0.0.1) and checks the
              signature, issuer, audience and expiry.
- api-source: `api` from a copy without bytecode, which Python compiles at every start (as
              in a package built before `make build` compiled it: Lambda cannot write
              bytecode into the function's folder).
- crypto:     import the `cryptography` primitives the token check uses.
- pyjwt:      `import jwt` (PyJWT), which loads cryptography's X.509 stack as well: why
              edge/jose.py uses the primitives instead.
- floor:      import boto3 and create the DynamoDB and Step Functions clients, the least a
              function using those services pays (no network calls).
- floor-paused: the floor with the cyclic collector off for the whole process: what the
              collector lever alone is worth to any function (for information; our handlers
              pause it during init and client creation, see `mcp_tasks_aws/runtime.py`).
- sdk:        `import mcp.server`, the official MCP SDK's server side.
- python:     `python -c pass`, the interpreter alone.

With `.aws-sam/build` present (`make build`), the section also times the built API package
itself under Python 3.12 (the runtime's), with and without its bytecode: there the
dependencies are compiled by the build too, or not at all.

Targets: api/floor <= 1.3, api/sdk <= 0.5, api-oauth/floor <= 1.0 and api-task/floor <= 1.0.
The section is informational (a MISS does not fail it), but a child that exits non-zero does:
a benchmark of a broken handler is worthless.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import py_compile
import secrets
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from common import (
    PROJECT_ROOT,
    PYTHON,
    deployed_environment,
    lambda_context_fields,
    legacy_initialize,
    mcp_event,
    median_ms,
    p90_ms,
    sam_build,
)
from mcp_client import TASK_CAPABILITIES

TARGETS = {
    ("api", "floor"): 1.3,
    ("api", "sdk"): 0.5,
    ("api-oauth", "floor"): 1.0,
    ("api-task", "floor"): 1.0,
}
INFORMATIONAL = {
    ("api-managed", "api"): "a declaration's six managed tools, against the demo tools",
    ("api-task", "floor-paused"): "first task request, against a floor without collections",
    ("api-task-restored", "api-task"): "SnapStart: a restored copy's first task request",
    ("api-task-restored", "floor"): "SnapStart: a restored copy's first task request",
    ("floor-paused", "floor"): "the collector's share of the floor",
    ("api-task", "sdk"): "first task request",
    ("api-legacy", "floor"): "a 2025-11-25 initialize",
    ("pyjwt", "crypto"): "PyJWT against the primitives the token check uses",
    ("api", "api-source"): "bytecode as `make build` ships it, against none",
    ("durable-import", "floor"): "the durable function's init (its SDK, its handler built)",
    ("durable-import", "api-import"): "the durable function's init, against the API's",
}
DEFAULT_ROUNDS = 25
SMOKE = {"rounds": 1, "cold_warmup": 0}
"""`make bench`'s smoke (`bench/run.py --smoke`): the least that runs every case (once, checked
as every run is; no warm-up, which only steadies the figures)."""
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
import os, mcp_tasks_aws
if not mcp_tasks_aws.__file__.startswith(os.path.dirname(os.path.dirname(sys.argv[1]))):
    raise SystemExit(f"mcp_tasks_aws came from {mcp_tasks_aws.__file__}, not the staged copy")
"""

# Loads handlers/durable.py as the Lambda runtime would (the durable function's init: the
# durable SDK imported, the handler built from the environment). sys.argv[1] names the file.
_IMPORT_DURABLE = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("durable", sys.argv[1])
durable = importlib.util.module_from_spec(spec)
sys.modules["durable"] = durable
spec.loader.exec_module(durable)
durable.handler
if "aws_durable_execution_sdk_python" not in sys.modules:
    raise SystemExit("the durable function's init did not import the durable SDK")
"""

# A Lambda context rebuilt in the child from `lambda_context_fields()`.
_CONTEXT = """
import json

class Context:
    def __init__(self, fields):
        self.__dict__.update(fields)

    def get_remaining_time_in_millis(self):
        return 30_000
"""

_HANDLE = (
    _CONTEXT
    + """
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
)

_HANDLE_LIST = (
    _CONTEXT
    + """
job = json.loads(sys.argv[2])
discover, listed = (api.handler(event, Context(job["context"])) for event in job["events"])
names = sorted(tool["name"] for tool in json.loads(listed["body"])["result"]["tools"])
if discover["statusCode"] != 200 or names != job["listed"]:
    raise SystemExit(f"listed {names}, not {job['listed']}: {listed}")
"""
)
MANAGED_EXAMPLE = "examples/managed/tools.yaml"


def managed_listing() -> list[str]:
    """What `tools/list` shows the api-managed child: the declaration's tools and, since the
    child's client declares no tasks and the declaration has tools that run as tasks, the
    task-handle tools (docs/handles.md)."""
    from mcp_tasks_aws.server.handles import HANDLE_TOOLS
    from mcp_tasks_aws.targets.declaration import load_declaration

    declared = [tool.name for tool in load_declaration(PROJECT_ROOT / MANAGED_EXAMPLE).tools]
    return sorted([*declared, *HANDLE_TOOLS])


# Before the handler is imported: every client the function creates answers its calls here,
# after botocore serialised and signed them (no network): PutItem with nothing, Invoke with 202.
_CANNED_AWS = """
from mcp_tasks_aws.aws import clients as _clients

class _Raw:
    def __init__(self, body):
        self.body = body

    def stream(self, **_):
        yield self.body

def _canned(request, event_name, **_):
    from botocore.awsrequest import AWSResponse

    headers = {"x-amzn-requestid": "bench", "content-type": "application/x-amz-json-1.0"}
    if event_name.endswith(".PutItem"):
        return AWSResponse(request.url, 200, headers, _Raw(b"{}"))
    if event_name.endswith(".Invoke"):
        return AWSResponse(request.url, 202, headers, _Raw(b""))
    raise SystemExit(f"unexpected AWS call {event_name}")

_create = _clients.Clients._create

def _create_canned(self, service, *policy):
    client = _create(self, service, *policy)
    client.meta.events.register("before-send", _canned)
    return client

_clients.Clients._create = _create_canned
"""

# Lambda's hook library (`snapshot_restore_py`), stood in for: it records the hooks.
_FAKE_SNAPSTART = """
import sys, types

_hooks = {"before": [], "after": []}
_snapstart = types.ModuleType("snapshot_restore_py")
_snapstart.register_before_snapshot = lambda f, *a, **k: _hooks["before"].append(f)
_snapstart.register_after_restore = lambda f, *a, **k: _hooks["after"].append(f)
sys.modules["snapshot_restore_py"] = _snapstart
"""

# After init: prime (the before-snapshot hooks), fork; the parent relays the fork's report.
_SNAPSHOT = """
for hook in reversed(_hooks["before"]):
    hook()
if not _hooks["before"]:
    raise SystemExit("the handler registered no before-snapshot hook")
_read, _write = os.pipe()
_pid = os.fork()
if _pid:
    os.close(_write)
    with os.fdopen(_read) as _source:
        _report = _source.read()
    _, _status = os.waitpid(_pid, 0)
    if _status or not _report:
        raise SystemExit(f"the restored copy failed (status {_status})")
    print(_report, flush=True)
    os._exit(0)
os.close(_read)
import time as _time

_restored_at, _restored_cpu = _time.perf_counter(), _time.process_time()
for hook in _hooks["after"]:
    hook()
"""

_RESTORED_REPORT = """
with os.fdopen(_write, "w") as _out:
    _wall = _time.perf_counter() - _restored_at
    _out.write(json.dumps({"wall": _wall, "cpu": _time.process_time() - _restored_cpu}))
os._exit(0)
"""

_TASK = """
created = api.handler(job["task"], Context(job["context"]))
task = message_of(created).get("result") if created["statusCode"] == 200 else None
if not task or "taskId" not in task:
    raise SystemExit(f"the task-creating tools/call failed: {created}")
"""

_FLOOR = """
import boto3
boto3.client("dynamodb", region_name="us-east-1")
boto3.client("stepfunctions", region_name="us-east-1")
"""
_PAUSED = "import gc\ngc.disable()\n"


@dataclass
class Case:
    name: str
    argv: list[str]
    env: dict[str, str] | None = None
    """The child's environment, when not the deployed function's default."""
    reported: bool = False
    """The child prints its own wall and CPU time (JSON, last line) instead of being timed
    from spawn to exit."""
    samples: list[float] = field(default_factory=list)
    """Wall time of each run, spawn to exit."""
    cpu: list[float] = field(default_factory=list)
    """CPU time (user + system) of each run: what it would take on a core of its own."""

    def record(self, wall: float, cpu: float) -> None:
        self.samples.append(wall)
        self.cpu.append(cpu)


class ChildFailed(RuntimeError):
    pass


_INITIALIZE = (
    _CONTEXT
    + """
job = json.loads(sys.argv[2])
answer = api.handler(job["events"][0], Context(job["context"]))
if answer["statusCode"] != 200 or "mcp-session-id" not in answer["headers"]:
    raise SystemExit(f"initialize failed: {answer}")
"""
)


_CRYPTO = (
    "from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa, utils\n"
    "from cryptography.hazmat.primitives import hashes\n"
    "from cryptography.exceptions import InvalidSignature\n"
)


def _events(token: str | None = None) -> list[dict[str, object]]:
    events = [
        mcp_event("server/discover"),
        mcp_event(
            "tools/call",
            {"name": "text_stats", "arguments": {"text": "Hello world. Bye."}},
            name="text_stats",
            rid=2,
        ),
    ]
    if token is not None:
        for event in events:
            event["headers"]["authorization"] = f"Bearer {token}"  # type: ignore[index]
    return events


def _task_event() -> dict[str, object]:
    """A `tools/call` of a tool that may run as a task, from a client that allows tasks."""
    arguments = {"files": 3, "seconds_per_file": 0}
    return mcp_event(
        "tools/call",
        {"name": "checksum_archive", "arguments": arguments},
        name="checksum_archive",
        rid=3,
        capabilities=TASK_CAPABILITIES,
    )


def _with_secret_value(env: dict[str, str]) -> dict[str, str]:
    """`env` with the state secret's value instead of its ARN (no Secrets Manager here)."""
    kept = {k: v for k, v in env.items() if k != "MCP_TASKS_STATE_SECRET_ARN"}
    return {**kept, "MCP_TASKS_STATE_SECRET": secrets.token_hex(32)}


class StagedCode:
    """Our code as a function package holds it, in `root`: `handlers/` and `mcp_tasks_aws/`
    less the embedded stack, compiled like `make build` compiles it when `bytecode`."""

    def __init__(self, root: Path, *, bytecode: bool) -> None:
        sam_build.copy_function_code(root)
        if bytecode:
            mode = py_compile.PycInvalidationMode.UNCHECKED_HASH
            if not compileall.compile_dir(root, quiet=1, invalidation_mode=mode):
                raise ChildFailed(f"could not compile the staged code in {root}")
        self.root = root
        self.api_handler = root / "handlers" / "api.py"
        self.durable_handler = root / "handlers" / "durable.py"

    def env(self, base: dict[str, str]) -> dict[str, str]:
        """`base`, with this copy first on the path and no bytecode written by the child."""
        return {**base, "PYTHONPATH": str(self.root), "PYTHONDONTWRITEBYTECODE": "1"}


def cases(shipped: StagedCode, source: StagedCode, oauth: OAuthIssuer) -> list[Case]:
    job = json.dumps({"context": lambda_context_fields(), "events": _events()})
    task_job = json.dumps(
        {"context": lambda_context_fields(), "events": _events(), "task": _task_event()}
    )
    initialize = json.dumps({"context": lambda_context_fields(), "events": [legacy_initialize()]})
    oauth_job = json.dumps({"context": lambda_context_fields(), "events": _events(oauth.token())})
    handler, deployed = str(shipped.api_handler), shipped.env(deployed_environment())
    listing = json.dumps(
        {
            "context": lambda_context_fields(),
            "events": [mcp_event("server/discover"), mcp_event("tools/list", rid=2)],
            "listed": managed_listing(),
        }
    )
    managed = shipped.env(deployed_environment(MCP_TASKS_TOOLS=MANAGED_EXAMPLE))
    return [
        Case("api", [PYTHON, "-c", _IMPORT_API + _HANDLE, handler, job], deployed),
        Case("api-managed", [PYTHON, "-c", _IMPORT_API + _HANDLE_LIST, handler, listing], managed),
        Case("api-import", [PYTHON, "-c", _IMPORT_API, handler], deployed),
        Case(
            "durable-import",
            [PYTHON, "-c", _IMPORT_DURABLE, str(shipped.durable_handler)],
            deployed,
        ),
        Case(
            "api-task",
            [PYTHON, "-c", _CANNED_AWS + _IMPORT_API + _HANDLE + _TASK, handler, task_job],
            deployed,
        ),
        Case(
            "api-task-restored",
            [
                PYTHON,
                "-c",
                _CANNED_AWS
                + _FAKE_SNAPSTART
                + _IMPORT_API
                + _SNAPSHOT
                + _HANDLE
                + _TASK
                + _RESTORED_REPORT,
                handler,
                task_job,
            ],
            deployed,
            reported=True,
        ),
        Case(
            "api-source",
            [PYTHON, "-c", _IMPORT_API + _HANDLE, str(source.api_handler), job],
            source.env(deployed_environment()),
        ),
        Case("floor", [PYTHON, "-c", _FLOOR]),
        Case("floor-paused", [PYTHON, "-c", _PAUSED + _FLOOR]),
        Case("sdk", [PYTHON, "-c", "import mcp.server"]),
        Case("python", [PYTHON, "-c", "pass"]),
        Case(
            "api-legacy",
            [PYTHON, "-c", _IMPORT_API + _INITIALIZE, handler, initialize],
            shipped.env(_with_secret_value(deployed_environment())),
        ),
        Case("crypto", [PYTHON, "-c", _CRYPTO]),
        Case("pyjwt", [PYTHON, "-c", "import jwt"]),
        Case(
            "api-oauth",
            [PYTHON, "-c", _IMPORT_API + _HANDLE, handler, oauth_job],
            shipped.env(oauth.env),
        ),
    ]


class OAuthIssuer:
    """An issuer for the api-oauth case: a signing key, a token for the bench's resource, and
    the JWKS served on 127.0.0.1 for the children to fetch (stopped with `close`)."""

    RESOURCE = "https://mcp.bench.example/mcp"

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        from joserfc.jwk import KeySet, RSAKey

        self.key = RSAKey.generate_key(2048, parameters={"kid": "bench", "use": "sig"})
        document = json.dumps(KeySet([self.key]).as_dict(private=False)).encode()

        class Jwks(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(document)))
                self.end_headers()
                self.wfile.write(document)

            def log_message(self, format: str, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Jwks)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.issuer = f"http://127.0.0.1:{self.server.server_port}"
        self.env = deployed_environment(
            MCP_TASKS_AUTH_MODE="oauth",
            MCP_TASKS_RESOURCE_URL=self.RESOURCE,
            MCP_TASKS_OAUTH_ISSUER=self.issuer,
            MCP_TASKS_OAUTH_JWKS_URI=f"{self.issuer}/jwks",
        )

    def token(self) -> str:
        from joserfc import jwt

        now = int(time.time())
        claims = {"iss": self.issuer, "aud": self.RESOURCE, "sub": "bench", "client_id": "b"}
        claims |= {"iat": now, "exp": now + 24 * 3600, "scope": "mcp"}
        token: str = jwt.encode({"alg": "RS256", "kid": "bench"}, claims, self.key)
        return token

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


BUILT_API = PROJECT_ROOT / ".aws-sam" / "build" / "ApiFunction"
SMOKE_OVERLAY = PROJECT_ROOT / ".aws-sam" / "smoke"
"""`make build`'s API package, and the local twins of its arm64 wheels (its smoke test's)."""

_BUILT = (
    """
import importlib, sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
api = importlib.import_module("handlers.api")
"""
    + _CONTEXT
    + """
job = json.loads(sys.argv[3])
for event in job["events"]:
    answer = api.handler(event, Context(job["context"]))
    if answer["statusCode"] != 200:
        raise SystemExit(f"the built package answered {answer}")
"""
)


def built_package(rounds: int, warmup: int = 1) -> None:
    """The built API package under Python 3.12, with its bytecode and without (`api`'s two
    requests, `-I -B`: nothing from this project's environment, no bytecode written)."""
    if not (BUILT_API.is_dir() and SMOKE_OVERLAY.is_dir()):
        print("built package: not measured (`make build` first)")
        return
    python312 = sam_build.python312()
    tag = sam_build.cache_tag(python312)
    if sam_build.uncompiled(BUILT_API, sam_build.REQUIRED, tag):
        print("built package: built without bytecode (`make build` again)")
        return
    job = json.dumps({"context": lambda_context_fields(), "events": _events()})
    env = _with_secret_value(sam_build.smoke_environment(BUILT_API, "demo"))
    with tempfile.TemporaryDirectory(prefix="mcp-tasks-built-") as folder:
        bare = Path(folder) / "ApiFunction"
        shutil.copytree(BUILT_API, bare, ignore=shutil.ignore_patterns("__pycache__"))
        runs = [
            Case(name, [str(python312), "-I", "-B", "-c", _BUILT, str(SMOKE_OVERLAY), path, job])
            for name, path in (("built", str(BUILT_API)), ("built-bare", str(bare)))
        ]
        for _ in range(warmup):
            for case in runs:
                run_once(case, env)
        for _ in range(rounds):
            for case in runs:
                case.record(*run_once(case, env))
    built, bare_case = runs
    print(f"built package, Python 3.12 ({rounds} rounds): with bytecode (as shipped) ", end="")
    print(f"{median_ms(built.samples):.1f} ms, without {median_ms(bare_case.samples):.1f} ms")
    ratio = median_ms(built.samples) / median_ms(bare_case.samples)
    print(f"built/built-bare  {ratio:5.2f}  (bytecode against none, dependencies included)")


def run_once(case: Case, env: dict[str, str]) -> tuple[float, float]:
    """Run the case's child once: its wall time and its CPU time (user + system)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen(
            case.argv, cwd=PROJECT_ROOT, env=case.env or env, stdout=out, stderr=err
        )
        try:
            status, usage = _wait(child, CHILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
            raise
        elapsed = time.perf_counter() - start
        if status != 0:
            err.seek(0)
            out.seek(0)
            text = err.read().decode(errors="replace").strip() or out.read().decode()
            raise ChildFailed(f"{case.name}: child exited {status}\n{text}")
        if case.reported:
            out.seek(0)
            report = json.loads(out.read().decode().strip().splitlines()[-1])
            return float(report["wall"]), float(report["cpu"])
    return elapsed, usage.ru_utime + usage.ru_stime


def _wait(child: subprocess.Popen[bytes], timeout_s: float) -> tuple[int, os.struct_rusage]:
    """Wait for `child` (at most `timeout_s`): its exit status and its own resource usage."""
    deadline = time.monotonic() + timeout_s
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            child.returncode = os.waitstatus_to_exitcode(status)
            return child.returncode, usage
        if time.monotonic() > deadline:
            raise subprocess.TimeoutExpired(child.args, timeout_s)
        time.sleep(0.002)


def first_task_cpu_s(rounds: int, warmup: int = 1) -> dict[str, float]:
    """The median CPU time (s) of `rounds` runs of api-task and api-task-restored (after
    `warmup` each, not counted), by case name."""
    staging = tempfile.TemporaryDirectory(prefix="mcp-tasks-first-task-")
    oauth = OAuthIssuer()
    wanted = ("api-task", "api-task-restored")
    try:
        shipped = StagedCode(Path(staging.name) / "shipped", bytecode=True)
        source = StagedCode(Path(staging.name) / "source", bytecode=False)
        chosen = [c for c in cases(shipped, source, oauth) if c.name in wanted]
        for _ in range(warmup):
            for case in chosen:
                run_once(case, deployed_environment())
        for _ in range(rounds):
            for case in chosen:
                case.record(*run_once(case, deployed_environment()))
    finally:
        oauth.close()
        staging.cleanup()
    return {case.name: median_ms(case.cpu) / 1000 for case in chosen}


def _ratios(top: Case, bottom: Case) -> tuple[float, float]:
    """`top` over `bottom`: medians of CPU time, and of wall time."""
    cpu = median_ms(top.cpu) / median_ms(bottom.cpu)
    return cpu, median_ms(top.samples) / median_ms(bottom.samples)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--rounds",
        type=int,
        default=DEFAULT_ROUNDS,
        help=f"cold-start rounds, each running every case once (default {DEFAULT_ROUNDS})",
    )
    parser.add_argument(
        "--cold-warmup",
        type=int,
        default=1,
        help="cold-start warm-up rounds before those, not counted (default 1)",
    )


def main(args: argparse.Namespace) -> int:
    rounds = max(1, args.rounds)
    env = deployed_environment()
    oauth = OAuthIssuer()
    staging = tempfile.TemporaryDirectory(prefix="mcp-tasks-cold-start-")
    try:
        shipped = StagedCode(Path(staging.name) / "shipped", bytecode=True)
        source = StagedCode(Path(staging.name) / "source", bytecode=False)
        measured = cases(shipped, source, oauth)
        for _ in range(max(0, args.cold_warmup)):  # not counted: bytecode and page caches
            for case in measured:
                run_once(case, env)
        for _ in range(rounds):
            for case in measured:
                case.record(*run_once(case, env))
    except (ChildFailed, subprocess.TimeoutExpired) as exc:
        print(f"FAILED {exc}")
        return 1
    finally:
        oauth.close()
        staging.cleanup()

    by_name = {case.name: case for case in measured}
    print(
        f"{rounds} rounds, interleaved; each sample is one fresh process, spawn to exit "
        "(wall) and its CPU time (user + system)"
    )
    print(f"{'case':<14}{'median ms':>11}{'p90 ms':>9}{'CPU ms':>9}")
    for case in measured:
        print(
            f"{case.name:<14}{median_ms(case.samples):>11.1f}{p90_ms(case.samples):>9.1f}"
            f"{median_ms(case.cpu):>9.1f}"
        )
    handling = median_ms(by_name["api"].samples) - median_ms(by_name["api-import"].samples)
    print(f"handling two requests (api - api-import medians): {handling:.1f} ms")
    print("ratios of medians: CPU time (the verdict: a cold start is CPU-bound, and on shared")
    print("cores the wall time also counts waiting for one), then wall time")
    for (top, bottom), target in TARGETS.items():
        cpu, wall = _ratios(by_name[top], by_name[bottom])
        verdict = "PASS" if cpu <= target else "MISS"
        print(
            f"{top + '/' + bottom:<24} {cpu:5.2f}  wall {wall:5.2f}  "
            f"(target <= {target})  {verdict}"
        )
    for (top, bottom), what in INFORMATIONAL.items():
        cpu, wall = _ratios(by_name[top], by_name[bottom])
        print(f"{top + '/' + bottom:<24} {cpu:5.2f}  wall {wall:5.2f}  ({what}, for information)")
    try:
        built_package(rounds, max(0, args.cold_warmup))
    except (ChildFailed, subprocess.TimeoutExpired) as exc:
        print(f"FAILED {exc}")
        return 1
    return 0
