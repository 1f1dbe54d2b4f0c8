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
- api-managed: `api`'s import with MCP_TASKS_TOOLS=examples/managed/tools.yaml (a server
              that serves only a declaration: six managed tools), then `server/discover`
              and `tools/list` (checked); its first calls would reach AWS, so none is made.
- api-task:   `api`, then what the first task operation adds: the function creates its
              DynamoDB and Lambda clients on first use (inline requests never do; a task's
              first leg runs directly, so Step Functions waits for an update or a cancel),
              so this is the cold start of an environment whose first request makes a task
              (less the two AWS calls themselves, which need a network).
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
- sdk:        `import mcp.server`, the official MCP SDK's server side.
- python:     `python -c pass`, the interpreter alone.

With `.aws-sam/build` present (`make build`), the section also times the built API package
itself under Python 3.12 (the runtime's), with and without its bytecode: there the
dependencies are compiled by the build too, or not at all.

Targets: api/floor <= 1.3, api/sdk <= 0.5, and api-oauth/floor <= 1.0. The section is
informational (a MISS does not fail it), but a child that exits non-zero does: a benchmark of a
broken handler is worthless.
"""

from __future__ import annotations

import argparse
import compileall
import json
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

TARGETS = {("api", "floor"): 1.3, ("api", "sdk"): 0.5, ("api-oauth", "floor"): 1.0}
# Reported beside the targets: the first request that makes a task pays for the clients.
INFORMATIONAL = {
    ("api-managed", "api"): "a declaration's six managed tools, against the demo tools",
    ("api-task", "floor"): "first task request",
    ("api-task", "sdk"): "first task request",
    ("api-legacy", "floor"): "a 2025-11-25 initialize",
    ("pyjwt", "crypto"): "PyJWT against the primitives the token check uses",
    ("api", "api-source"): "bytecode as `make build` ships it, against none",
}
DEFAULT_ROUNDS = 25
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
names = {tool["name"] for tool in json.loads(listed["body"])["result"]["tools"]}
if discover["statusCode"] != 200 or len(names) != 6:
    raise SystemExit(f"the declaration's tools were not listed: {listed}")
"""
)
MANAGED_EXAMPLE = "examples/managed/tools.yaml"

_FORCE_CLIENTS = """
api.app.store.client.meta  # the first attribute access creates each client
api.app.direct_legs.client.meta
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
    env: dict[str, str] | None = None
    """The child's environment, when not the deployed function's default."""
    samples: list[float] = field(default_factory=list)


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

    def env(self, base: dict[str, str]) -> dict[str, str]:
        """`base`, with this copy first on the path and no bytecode written by the child."""
        return {**base, "PYTHONPATH": str(self.root), "PYTHONDONTWRITEBYTECODE": "1"}


def cases(shipped: StagedCode, source: StagedCode, oauth: OAuthIssuer) -> list[Case]:
    job = json.dumps({"context": lambda_context_fields(), "events": _events()})
    initialize = json.dumps({"context": lambda_context_fields(), "events": [legacy_initialize()]})
    oauth_job = json.dumps({"context": lambda_context_fields(), "events": _events(oauth.token())})
    handler, deployed = str(shipped.api_handler), shipped.env(deployed_environment())
    listing = json.dumps(
        {
            "context": lambda_context_fields(),
            "events": [mcp_event("server/discover"), mcp_event("tools/list", rid=2)],
        }
    )
    managed = shipped.env(deployed_environment(MCP_TASKS_TOOLS=MANAGED_EXAMPLE))
    return [
        Case("api", [PYTHON, "-c", _IMPORT_API + _HANDLE, handler, job], deployed),
        Case("api-managed", [PYTHON, "-c", _IMPORT_API + _HANDLE_LIST, handler, listing], managed),
        Case("api-import", [PYTHON, "-c", _IMPORT_API, handler], deployed),
        Case(
            "api-task",
            [PYTHON, "-c", _IMPORT_API + _HANDLE + _FORCE_CLIENTS, handler, job],
            deployed,
        ),
        Case(
            "api-source",
            [PYTHON, "-c", _IMPORT_API + _HANDLE, str(source.api_handler), job],
            source.env(deployed_environment()),
        ),
        Case("floor", [PYTHON, "-c", _FLOOR]),
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


def built_package(rounds: int) -> None:
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
        for case in runs:
            run_once(case, env)
        for _ in range(rounds):
            for case in runs:
                case.samples.append(run_once(case, env))
    built, bare_case = runs
    print(f"built package, Python 3.12 ({rounds} rounds): with bytecode (as shipped) ", end="")
    print(f"{median_ms(built.samples):.1f} ms, without {median_ms(bare_case.samples):.1f} ms")
    ratio = median_ms(built.samples) / median_ms(bare_case.samples)
    print(f"built/built-bare  {ratio:5.2f}  (bytecode against none, dependencies included)")


def run_once(case: Case, env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        case.argv,
        cwd=PROJECT_ROOT,
        env=case.env or env,
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
    oauth = OAuthIssuer()
    staging = tempfile.TemporaryDirectory(prefix="mcp-tasks-cold-start-")
    try:
        shipped = StagedCode(Path(staging.name) / "shipped", bytecode=True)
        source = StagedCode(Path(staging.name) / "source", bytecode=False)
        measured = cases(shipped, source, oauth)
        for case in measured:  # warm-up, not counted: bytecode caches and the page cache
            run_once(case, env)
        for _ in range(rounds):
            for case in measured:
                case.samples.append(run_once(case, env))
    except (ChildFailed, subprocess.TimeoutExpired) as exc:
        print(f"FAILED {exc}")
        return 1
    finally:
        oauth.close()
        staging.cleanup()

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
    try:
        built_package(rounds)
    except (ChildFailed, subprocess.TimeoutExpired) as exc:
        print(f"FAILED {exc}")
        return 1
    return 0
