"""Run the MCP conformance suite's client scenarios against the `mcp-tasks` CLI.

The suite starts a scenario server (for `auth/*`, with a fake authorization server) and runs
`python scripts/conformance_client.py drive` with the server's URL as last argument and the
scenario in `$MCP_CONFORMANCE_SCENARIO`. `drive` then does with the real `mcp-tasks` what a user
would: `mcp-tasks tools URL --json`, and calls the tools listed there (a scenario's own
arguments where the suite gives them; otherwise values filled in from each tool's schema). Each
command is the CLI's `main` with its own command line, typed input (on a pipe) and stdout (the
tests' `support.cli.run_cli`), one after the other in the `drive` process, so a scenario costs
one Python process, not one per command (each about a second of imports). That process is not
even started afresh: the command the suite runs is `launch`, a bare interpreter (no
site-packages, no imports of ours) that hands its arguments, environment, working directory and
standard streams over a Unix socket to a fork server this runner starts once (`serve`: the CLI
and its dependencies imported, then one `os.fork` per scenario, whose child runs `drive` as that
process would and sends back its exit code). Sign-ins go through the CLI's own code: its
`webbrowser.open` reaches `scripts/headless_browser.py`'s person at a browser (registered as the
preferred browser, in this process), the token cache is a fresh directory per scenario, its
callback port a free one, and a pre-registered client from the scenario's context becomes
`--client-id/--client-secret`.

The scenarios (SCENARIOS: what the suite lists for 2026-07-28, checked against what ran) run
in ONE suite process (`client --suite all --spec-version 2026-07-28`, which runs them side by
side): a Node process per scenario cost more CPU than the scenarios. `--only` runs each named
scenario in a suite process of its own (`--jobs` at a time).

A check that is FAILURE or WARNING fails the run unless `tests/conformance/client-baseline.json`
lists it with a reason; a listed check that passes fails the run too (the baseline only
shrinks). Usage: `python scripts/conformance_client.py [--only SCENARIO ...]`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import webbrowser
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "tests" / "conformance" / "client-baseline.json"
SPEC_VERSION = "2026-07-28"
AUTH = [
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/authorization-server-migration",
    "auth/iss-supported",
    "auth/iss-not-advertised",
    "auth/iss-supported-missing",
    "auth/iss-wrong-issuer",
    "auth/iss-unexpected",
    "auth/iss-normalized",
    "auth/metadata-issuer-mismatch",
]
OTHER = [
    "tools_call",
    "request-metadata",
    "sep-2322-client-request-state",
    "http-standard-headers",
    "http-custom-headers",
    "http-invalid-tool-headers",
    "json-schema-ref-no-deref",
    "json-schema-2020-12-preservation",
]
SCENARIOS = AUTH + OTHER
# What a user would type for the suite's fixed tools (as every SDK's conformance client does).
ARGUMENTS = {"add_numbers": {"a": 5, "b": 3}}
# An HTTPS client metadata document id, for servers that take one instead of registration.
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"


# -- the driver: what the suite runs ------------------------------------------------------------


def filler(schema: dict[str, Any]) -> dict[str, Any]:
    """Values for a tool's required arguments, by type (a person would type something)."""
    values: dict[str, Any] = {}
    samples = {"string": "test", "number": 1, "integer": 1, "boolean": True, "object": {}}
    properties = schema.get("properties") or {}
    for name in schema.get("required") or []:
        kind = (properties.get(name) or {}).get("type", "string")
        values[name] = [] if kind == "array" else samples.get(kind, "test")
    return values


def mcp_tasks(url: str, command: str, *args: str, typed: str = "") -> tuple[int, str]:
    """Run `mcp-tasks` in this process (the tests' `support.cli.run_cli`: its `main` with a
    process's command line, input and streams): (exit code, stdout); `typed` is what the
    person types at its prompts."""
    sys.path.insert(0, str(ROOT / "tests"))
    from support.cli import run_cli

    print("$ mcp-tasks", command, url, *map(shlex.quote, args), file=sys.stderr, flush=True)
    done = run_cli(command, url, *args, stdin=typed)
    sys.stderr.write(done.stderr)
    print(done.stdout, file=sys.stderr, flush=True)
    return done.returncode, done.stdout


class HeadlessBrowser(webbrowser.BaseBrowser):
    """`scripts/headless_browser.py`'s person at a browser, as Python's `webbrowser` sees one."""

    def open(self, url: str, new: int = 0, autoraise: bool = True) -> bool:
        sys.path.insert(0, str(ROOT / "scripts"))
        from headless_browser import sign_in

        try:
            sign_in(url, os.environ.get("HEADLESS_USER", "alice"))
        except SystemExit as failed:  # what the browser would print as it exits non-zero
            print(failed, file=sys.stderr, flush=True)
            return False
        return True


# A person answering each question the server asks: accept, then "y" to a yes/no field.
ANSWERS = "a\ny\n" * 4


def call(url: str, tool: str, arguments: dict[str, Any]) -> int:
    pairs = [f"{key}:={json.dumps(value)}" for key, value in arguments.items()]
    code, _ = mcp_tasks(url, "call", tool, *pairs, typed=ANSWERS)
    return code


def drive(url: str) -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    env = dict(os.environ)
    env.pop("MCP_TASKS_TOKEN", None)
    env["MCP_TASKS_CONFIG_DIR"] = tempfile.mkdtemp(prefix="mcp-tasks-conformance-")
    env.pop("BROWSER", None)
    webbrowser.register("headless", None, HeadlessBrowser("headless"), preferred=True)
    env["MCP_TASKS_SIGN_IN_TIMEOUT"] = "30"
    env["MCP_TASKS_CALLBACK_PORT"] = os.environ.get("CONFORMANCE_CALLBACK_PORT") or str(free_port())
    if context.get("client_id"):
        env["MCP_TASKS_CLIENT_ID"] = context["client_id"]
        if context.get("client_secret"):
            env["MCP_TASKS_CLIENT_SECRET"] = context["client_secret"]
    extra = ["--client-metadata-url", CLIENT_METADATA_URL] if scenario == "auth/basic-cimd" else []
    os.environ.clear()
    os.environ.update(env)

    if scenario.startswith("auth/"):
        # Sign in first, as mcp-tasks says to: --json (below) never opens a browser.
        code, _ = mcp_tasks(url, "login", *extra)
        if code != 0:
            return code
    code, listed = mcp_tasks(url, "tools", "--json", *extra)
    if code != 0:
        return code
    tools = {tool["name"]: tool for tool in json.loads(listed)["tools"]}
    if scenario == "http-custom-headers":
        calls = [(c["name"], c.get("arguments") or {}) for c in context.get("toolCalls", [])]
    elif scenario == "json-schema-2020-12-preservation":
        focal = next(
            t for t in tools.values() if "schema" not in t["inputSchema"].get("properties", {})
        )
        echo = next(name for name in tools if name != focal["name"])
        calls = [(echo, {"schema": focal["inputSchema"]})]
    elif scenario.startswith("auth/"):
        calls = [(name, filler(tool["inputSchema"])) for name, tool in list(tools.items())[:1]]
    else:
        calls = [
            (name, ARGUMENTS.get(name, filler(tool["inputSchema"]))) for name, tool in tools.items()
        ]
    failed = 0
    for name, arguments in calls:
        if name in tools or scenario == "http-custom-headers":
            result = call(url, name, arguments)
            failed = failed or (result if result not in (0, 1) else 0)  # 1: the tool's own error
    return failed


# -- the fork server: `drive` without a second of imports per scenario ---------------------------


def serve(path: str) -> None:
    """Import what `drive` runs, then serve `launch`es on the Unix socket `path`: each one
    forks a child that takes the launcher's streams, environment and working directory and
    runs `drive` with its arguments (the parent only accepts and forks: one thread, so a fork
    copies nothing half-done)."""
    import anyio._backends._asyncio  # noqa: F401 - anyio loads its backend on first run

    import mcp_tasks_aws.client.cli.main  # noqa: F401

    sys.path[:0] = [str(ROOT / "scripts"), str(ROOT / "tests")]
    import headless_browser  # noqa: F401

    import support.cli  # noqa: F401

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(64)
    print("ready", flush=True)
    sys.stderr.flush()
    while True:
        conn, _ = server.accept()
        _, fds, _, _ = socket.recv_fds(conn, 1, 3)
        if len(fds) != 3:
            conn.close()
            continue
        if os.fork() == 0:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            server.close()
            os._exit(_forked_drive(conn, fds))
        conn.close()
        for fd in fds:
            os.close(fd)


def _forked_drive(conn: socket.socket, fds: list[int]) -> int:
    """In the forked child: become the launcher's process, run `drive`, report its code."""
    code = 1
    try:
        with conn.makefile("rb") as reader:
            job = json.loads(reader.read())
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(job["cwd"])
        os.environ.clear()
        os.environ.update(job["env"])
        sys.argv = job["argv"]
        code = drive(job["argv"][-1])
    except BaseException:  # what the process would have printed as it died
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        conn.sendall(str(code).encode())
        conn.close()
    return 0


def launch(path: str) -> int:
    """What the suite runs: hand this process's arguments, environment, working directory
    and standard streams to the fork server at `path`; its child's exit code is this one."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(path)
        socket.send_fds(conn, [b"-"], [0, 1, 2])
        job = {"argv": sys.argv, "env": dict(os.environ), "cwd": os.getcwd()}
        conn.sendall(json.dumps(job).encode())
        conn.shutdown(socket.SHUT_WR)
        answer = b"".join(iter(lambda: conn.recv(64), b""))
    return int(answer) if answer.strip().isdigit() else 1


@contextmanager
def fork_server(folder: Path) -> Iterator[str]:
    """The fork server, running on a socket in `folder`, for the scenarios' launches."""
    path = str(folder / "drive.sock")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    script = str(ROOT / "scripts" / "conformance_client.py")
    proc = subprocess.Popen(
        [sys.executable, script, "serve", path],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,  # its children in its process group, stopped with it
    )
    try:
        assert proc.stdout is not None
        if proc.stdout.readline().strip() != "ready":
            raise SystemExit(f"the fork server did not start (exit {proc.wait()})")
        yield path
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait()


# -- the runner ---------------------------------------------------------------------------------


def free_port() -> int:
    """A loopback port free right now (fixed ones can collide with other processes' ephemeral
    ports on a shared machine)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _suite_args(node: Path, cli: Path, server: str, out: Path) -> list[str]:
    script = ROOT / "scripts" / "conformance_client.py"
    command = f"{sys.executable} -I -S {script} launch {server}"
    args = [str(node), str(cli), "client", "--command", command, "--spec-version", SPEC_VERSION]
    return [*args, "-o", str(out), "--timeout", "90000"]


# The folder the suite writes a scenario's checks.json into: <scenario>-<ISO time>, the
# scenario's `auth/` prefix a folder of its own.
RESULT_DIR = re.compile(r"^(?P<scenario>.+)-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$")


def client_output(out: Path, scenario: str) -> str:
    """The end of what the client printed in `scenario` (the suite keeps its stdout and
    stderr beside its checks), to say why a check failed."""
    texts = []
    for name in ("stderr.txt", "stdout.txt"):
        for path in sorted(out.rglob(name)):
            match = RESULT_DIR.match(path.parent.relative_to(out).as_posix())
            found = match["scenario"] if match else ""  # `--only` adds a folder in front
            if found == scenario or found.endswith(f"/{scenario}"):
                texts.append(f"--- {name}\n{path.read_text(errors='replace')[-1500:]}")
    return "\n".join(texts)


def run_all(node: Path, cli: Path, out: Path, server: str) -> dict[str, list[dict[str, Any]]]:
    """Every scenario the suite lists for SPEC_VERSION, in ONE suite process (a Node process
    per scenario cost more CPU than the scenarios): {scenario: its checks}. SCENARIOS must be
    exactly what ran: a scenario without checks, or checks of one not in it, fail the run."""
    args = [*_suite_args(node, cli, server, out), "--suite", "all"]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}  # drive picks its callback ports
    timeout = 60 * len(SCENARIOS) + 120
    proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env)
    from conformance import results_by_scenario

    found = results_by_scenario(out, RESULT_DIR)
    tail = f"{proc.stdout[-800:]}{proc.stderr[-800:]}"
    results: dict[str, list[dict[str, Any]]] = {}
    for scenario in SCENARIOS:
        results[scenario] = found.pop(scenario, None) or [
            {"id": "no-checks", "status": "FAILURE", "errorMessage": f"no checks: {tail}"}
        ]
    for scenario, checks in found.items():
        reason = f"the suite also ran {scenario}, which SCENARIOS does not name"
        results[scenario] = [{"id": "unlisted", "status": "FAILURE", "errorMessage": reason}]
        results[scenario] += checks
    return results


def run_scenario(
    node: Path, cli: Path, scenario: str, out: Path, server: str
) -> list[dict[str, Any]]:
    """One scenario (`--only`), in a suite process of its own: its checks."""
    args = [*_suite_args(node, cli, server, out), "--scenario", scenario]
    port = free_port()
    env = {**os.environ, "CONFORMANCE_CALLBACK_PORT": str(port), "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env)
    checks: list[dict[str, Any]] = []
    for path in out.rglob("checks.json"):
        checks.extend(json.loads(path.read_text()))
    if not checks:
        tail = f"{proc.stdout[-800:]}{proc.stderr[-800:]}"
        checks = [{"id": "no-checks", "status": "FAILURE", "errorMessage": f"no checks: {tail}"}]
    return checks


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", action="append", help="run only this scenario (repeatable)")
    parser.add_argument("--jobs", type=int, default=2, help="--only scenarios side by side")
    parser.add_argument("--verbose", action="store_true", help="print every check")
    args = parser.parse_args()
    scenarios = args.only or SCENARIOS

    sys.path.insert(0, str(ROOT / "scripts"))
    from conformance import Tally, ensure_suite

    node, cli = ensure_suite()
    tally = Tally(BASELINE, ("FAILURE", "WARNING"))
    with tempfile.TemporaryDirectory() as tmp, fork_server(Path(tmp)) as server:
        if args.only:
            with ThreadPoolExecutor(args.jobs) as pool:
                futures = {
                    scenario: pool.submit(
                        run_scenario, node, cli, scenario, Path(tmp) / str(i), server
                    )
                    for i, scenario in enumerate(scenarios)
                }
                results = {scenario: future.result() for scenario, future in futures.items()}
        else:
            results = run_all(node, cli, Path(tmp) / "all", server)
        for scenario, checks in results.items():
            before = len(tally.failures)
            tally.add(scenario, checks, verbose=args.verbose)
            if len(tally.failures) > before:
                print(client_output(Path(tmp), scenario), flush=True)
    tally.check_baseline(list(results))
    counts = tally.counts
    summary = ", ".join(f"{n} {status.lower()}" for status, n in sorted(counts.items()))
    print(f"conformance (client, mcp-tasks): {summary}")
    return 1 if tally.failures else 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "drive":
        raise SystemExit(drive(sys.argv[-1]))
    if len(sys.argv) > 3 and sys.argv[1] == "launch":
        raise SystemExit(launch(sys.argv[2]))
    if len(sys.argv) == 3 and sys.argv[1] == "serve":
        serve(sys.argv[2])
    raise SystemExit(main())
