"""Official clients against the embedded stack: the referees for serving both protocol eras.

- The TypeScript SDK 1.x (`@modelcontextprotocol/sdk`, a 2025-11-25 client), driven by
  `scripts/interop/ts_sdk_client.cjs`: connect, tools, elicitation/sampling/roots mid-call,
  prompts, resources, logs, ending the session; and by `scripts/interop/ts_sdk_tasks.cjs`:
  its 2025-11-25 tasks (`client.experimental.tasks`: a call with `params.task`, tasks/get,
  tasks/result, tasks/list, tasks/cancel, an elicitation during a task, failures, another
  caller's tasks out of reach; a durable tool's question and its result after its sleep); and,
  WITHOUT the tasks capability, by
  `scripts/interop/ts_sdk_handles.cjs`: task handles (`docs/handles.md`) followed to their
  results through task_status / task_answer / task_cancel, one question answered through its
  elicitation handler and one through task_answer by a client reading only the text.
- `@modelcontextprotocol/ext-tasks` 0.2.x on `@modelcontextprotocol/client` 2.x, driven by
  `scripts/interop/ext_tasks_client.mjs`, in both eras (its v1 and v2 requesters; its v1
  requester gets a task's question on a `tasks/get` stream, `server/legacy/task_questions.py`),
  a durable tool (`durable_confirm`: its question, its sleep, a cancel mid-sleep in the modern
  era) included.
- `@modelcontextprotocol/client` 2.x WITHOUT ext-tasks, driven by
  `scripts/interop/ts_client_handles.mjs`, in both eras: task handles followed to their
  results through the handle tools, one question through its elicitation handler, one through
  task_answer by a client reading only the text.
- The MCP Inspector 2.x CLI in its default era (legacy: an `initialize` first), and in its
  `modern` and `auto` eras: listing and calling tools (a task-only tool runs as a task through
  ext-tasks in both eras), listing and reading resources; and, tasks off (legacy era, a tool
  the server answers with a handle), following a handle through the handle tools; and in the
  modern era with the Tasks extension left out where the CLI allows it, following handles
  (started by a plain call) through task_status and task_answer.

- The managed example (`examples/managed/tools.yaml`, docs/managed.md): the TS SDK
  (`scripts/interop/ts_sdk_managed.cjs`, 2025-11-25 tasks), ext-tasks
  (`scripts/interop/ext_tasks_managed.mjs`, both eras) and the Inspector CLI (both eras; the
  legacy one through task handles) drive its approval workflow, whose run is the MCP task.

Installs Node 22 (as the conformance runner does) and the pinned clients into `.tools/clients`
(git-ignored), starts embedded stacks on free loopback ports (serving the conformance tools,
or the managed example), and fails if any check fails. The conformance tools' clients and the
managed example are two sections, each with a stack of its own in a process of its own, side
by side (`--section NAME` runs one and prints its checks as JSON).
Usage: `python scripts/interop.py` (`--install`: install the Node tools, conformance's too,
and stop).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from conformance import ensure_suite  # noqa: E402  (the same Node 22)

CLIENTS_DIR = ROOT / ".tools" / "clients"
PACKAGES = ("@modelcontextprotocol/sdk@1.32.2", "@modelcontextprotocol/inspector@2.12.0")
TS_DRIVER = ROOT / "scripts" / "interop" / "ts_sdk_client.cjs"
TS_TASKS_DRIVER = ROOT / "scripts" / "interop" / "ts_sdk_tasks.cjs"
TS_HANDLES_DRIVER = ROOT / "scripts" / "interop" / "ts_sdk_handles.cjs"
EXT_TASKS_DRIVER = ROOT / "scripts" / "interop" / "ext_tasks_client.mjs"
TS_MANAGED_DRIVER = ROOT / "scripts" / "interop" / "ts_sdk_managed.cjs"
EXT_TASKS_MANAGED_DRIVER = ROOT / "scripts" / "interop" / "ext_tasks_managed.mjs"
MANAGED_EXAMPLE = "examples/managed/tools.yaml"
TS2_HANDLES_DRIVER = ROOT / "scripts" / "interop" / "ts_client_handles.mjs"
INSPECTOR = "@modelcontextprotocol/inspector/clients/launcher/build/index.js"


def ensure_clients() -> Path:
    modules = CLIENTS_DIR / "node_modules"
    installed = all(
        (modules / name.rsplit("@", 1)[0] / "package.json").exists() for name in PACKAGES
    ) and all(
        json.loads((modules / name.rsplit("@", 1)[0] / "package.json").read_text())["version"]
        == name.rsplit("@", 1)[1]
        for name in PACKAGES
    )
    if not installed:
        npm = shutil.which("npm")
        if npm is None:
            sys.exit("npm is needed to install the MCP clients")
        CLIENTS_DIR.mkdir(parents=True, exist_ok=True)
        print(f"installing {', '.join(PACKAGES)} into {CLIENTS_DIR}", flush=True)
        subprocess.run(
            [
                npm,
                "install",
                "--prefix",
                str(CLIENTS_DIR),
                "--no-audit",
                "--no-fund",
                "--no-save",
                "--loglevel=error",
                *PACKAGES,
            ],
            check=True,
        )
    return modules


def run(args: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    # Loopback traffic must never go through a proxy from the environment.
    env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env)


class Case(NamedTuple):
    """One Inspector command line and what it must print (on stdout, or stderr) and exit with."""

    name: str
    args: list[str]
    expect: Callable[[Any], bool]
    exit_code: int = 0
    on_stderr: bool = False


# The CLI's exit codes: a result with isError is 5 ("tool returned an error"); a call that
# fails (a JSON-RPC error, a failed task) prints its error on stderr and exits 1.
TOOL_ERROR_EXIT, FAILED_EXIT = 5, 1


def inspector_checks(node: Path, modules: Path, url: str) -> list[dict[str, Any]]:
    """The Inspector CLI's command lines the README gives, each with what it must print."""
    cli = [str(node), str(modules / INSPECTOR), "--cli", url]

    def text_is(expected: str) -> Callable[[Any], bool]:
        return lambda out: out["content"][0]["text"] == expected

    def lists(key: str, name: str, field: str = "name") -> Callable[[Any], bool]:
        return lambda out: name in [item[field] for item in out[key]]

    def is_error(out: Any) -> bool:
        return out.get("isError") is True

    failing = ["--method", "tools/call", "--tool-name", "failing_job"]
    cases = [
        Case("legacy: tools/list", ["--method", "tools/list"], lists("tools", "greet")),
        Case(
            "legacy: tools/list says taskSupport",
            ["--method", "tools/list"],
            lambda out: all("taskSupport" in tool["execution"] for tool in out["tools"]),
        ),
        Case(
            "legacy: tools/call",
            ["--method", "tools/call", "--tool-name", "greet", "--tool-arg", "name=Ada"],
            text_is("Hello, Ada!"),
        ),
        Case(
            "legacy: tools/call of a tool error",
            ["--method", "tools/call", "--tool-name", "test_error_handling"],
            is_error,
            TOOL_ERROR_EXIT,
        ),
        Case(
            "legacy: resources/list",
            ["--method", "resources/list"],
            lists("resources", "conformance://readme", "uri"),
        ),
        Case(
            "legacy: resources/read",
            ["--method", "resources/read", "--uri", "conformance://readme"],
            lambda out: "fixtures" in out["contents"][0]["text"],
        ),
        Case(
            "legacy: prompts/list",
            ["--method", "prompts/list"],
            lists("prompts", "test_input_required_result_prompt"),
        ),
        # A task-only tool runs as a 2025-11-25 task (ext-tasks v1): its tool error ends it
        # failed, and the CLI prints the task's statusMessage.
        Case(
            "legacy: tools/call of a task-only tool runs it as a task",
            failing,
            lambda out: "input data is inconsistent" in out["error"]["message"],
            FAILED_EXIT,
            on_stderr=True,
        ),
        Case(
            "modern: tools/call",
            ["--protocol-era", "modern", "--method", "tools/call", "--tool-name", "greet"],
            text_is("Hello, World!"),
        ),
        # The same tool through the Tasks extension (ext-tasks v2): completed, isError.
        Case(
            "modern: tools/call of a task-only tool runs it as a task",
            ["--protocol-era", "modern", *failing],
            is_error,
            TOOL_ERROR_EXIT,
        ),
        Case(
            "auto: tools/list",
            ["--protocol-era", "auto", "--method", "tools/list"],
            lists("tools", "greet"),
        ),
    ]
    results = []
    for case in cases:
        proc = run([*cli, *case.args])
        output = proc.stderr if case.on_stderr else proc.stdout
        try:
            ok = proc.returncode == case.exit_code and case.expect(json.loads(output))
        except (ValueError, KeyError, IndexError, TypeError):
            ok = False
        detail = (
            None if ok else f"exit {proc.returncode}: {proc.stdout[-400:]} {proc.stderr[-400:]}"
        )
        results.append({"check": f"inspector {case.name}", "ok": ok, "detail": detail})
    return results


NEXT = re.compile(r"Next: call `(?P<tool>[\w.-]+)` with ")


def _filled(value: Any) -> Any:
    """A model's part: each `<type>` placeholder the text asks to fill in, filled."""
    if isinstance(value, dict):
        return {k: _filled(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_filled(v) for v in value]
    if isinstance(value, str) and re.fullmatch(r"<[^>]+>", value):
        return True if value == "<boolean>" else "interop"
    return value


def _text(result: Any) -> str:
    return "\n".join(b.get("text", "") for b in result.get("content", []))


def _follow_text(call: Callable[[str, dict[str, Any]], Any], first: Any, steps: list[str]) -> str:
    """A model's part: follow the `Next: call ...` each result's text names, filling in the
    answers it asks for, until a result names nothing more; return that result's text."""
    words = _text(first)
    while (found := NEXT.search(words)) is not None:
        if len(steps) > 20:
            raise RuntimeError(f"no end in sight: {words[-400:]}")
        arguments, _ = json.JSONDecoder().raw_decode(words[found.end() :])
        steps.append(found["tool"])
        words = _text(call(found["tool"], _filled(arguments)))
    return words


def _cli_caller(cli: list[str]) -> Callable[[str, dict[str, Any]], Any]:
    """One Inspector CLI command per tool call (its JSON output; a non-zero exit raises)."""

    def call(tool: str, arguments: dict[str, Any]) -> Any:
        proc = run(
            [
                *cli,
                "--method",
                "tools/call",
                "--tool-name",
                tool,
                "--tool-args-json",
                json.dumps(arguments),
            ]
        )
        if proc.returncode != 0:
            raise RuntimeError(f"{tool}: exit {proc.returncode}: {proc.stderr[-400:]}")
        return json.loads(proc.stdout)

    return call


def inspector_handle_checks(node: Path, modules: Path, url: str) -> list[dict[str, Any]]:
    """The Inspector CLI (legacy era, no tasks: it runs a task only for a `required` tool, and
    a tool that answers with a handle is listed `optional`) follows a task-only tool's handle
    through the handle tools, reading only the text of each result, one command per call."""
    call = _cli_caller([str(node), str(modules / INSPECTOR), "--cli", url])
    results = []
    steps: list[str] = []
    try:
        first = call("confirm_delete", {"filename": "inspector.txt"})
        started = (first.get("structuredContent") or {}).get("status") == "working"
        results.append(
            {
                "check": "inspector legacy: a task-only tool answers with a handle",
                "ok": started and "Started task" in _text(first),
                "detail": None if started else str(first)[:400],
            }
        )
        words = _follow_text(call, first, steps)
        ok = words == "Deleted inspector.txt." and "task_answer" in steps
        detail = None if ok else f"{steps}: {words[-400:]}"
    except (RuntimeError, ValueError, KeyError) as exc:
        ok, detail = False, f"{steps}: {exc}"
    results.append(
        {
            "check": "inspector legacy: following the text, task_status and task_answer reach "
            "the result",
            "ok": ok,
            "detail": detail,
        }
    )
    steps = []
    try:
        first = call("long_compute", {"label": "inspector"})
        words = _follow_text(call, first, steps)
        ok = (first.get("structuredContent") or {}).get("status") == "working"
        ok = ok and words == "Computed inspector after 2s." and steps[:1] == ["task_status"]
        detail = None if ok else f"{steps}: {words[-400:]}"
    except (RuntimeError, ValueError, KeyError) as exc:
        ok, detail = False, f"{steps}: {exc}"
    results.append(
        {
            "check": "inspector legacy: a long optional tool answers with a handle, and "
            "task_status brings its result",
            "ok": ok,
            "detail": detail,
        }
    )
    return results


def inspector_managed_checks(node: Path, modules: Path, url: str) -> list[dict[str, Any]]:
    """The Inspector CLI against the managed example (examples/managed/tools.yaml).

    Legacy era (no tasks for an `optional` listing): the approval workflow's task answers with
    a handle, and following its text answers the workflow's question (task_answer) and reaches
    the workflow's output. Modern era: the CLI runs the task through ext-tasks, and, as it
    advertises no elicitation, the workflow's question is refused and the task ends failed
    saying so (McpUnsupported). Both eras: a declared Lambda function and an Express machine
    answer inline.
    """
    base = [str(node), str(modules / INSPECTOR), "--cli", url]
    results = []
    for era in ("legacy", "modern"):
        call = _cli_caller([*base, *(["--protocol-era", era] if era == "modern" else [])])
        for tool, arguments, expected in (
            ("word_count", {"text": "one two three"}, {"words": 3, "lines": 1}),
            ("quote", {"item": "bolt", "quantity": 2}, {"item": "bolt", "quantity": 2}),
        ):
            try:
                structured = call(tool, arguments).get("structuredContent") or {}
                ok = all(structured.get(k) == v for k, v in expected.items())
                detail = None if ok else str(structured)[:400]
            except (RuntimeError, ValueError) as exc:
                ok, detail = False, str(exc)
            results.append(
                {
                    "check": f"inspector managed {era}: {tool} answers inline",
                    "ok": ok,
                    "detail": detail,
                }
            )
    legacy = _cli_caller(base)
    steps: list[str] = []
    deploy = {"version": "v3.0", "environment": "staging", "stepSeconds": 1}
    try:
        words = _follow_text(legacy, legacy("deploy", deploy), steps)
        ok = '"deployed":"v3.0"' in words and "task_answer" in steps
        detail = None if ok else f"{steps}: {words[-400:]}"
    except (RuntimeError, ValueError, KeyError) as exc:
        ok, detail = False, f"{steps}: {exc}"
    results.append(
        {
            "check": "inspector managed legacy: the approval workflow's handle, followed, answers "
            "its question and reaches its output",
            "ok": ok,
            "detail": detail,
        }
    )
    modern = [*base, "--protocol-era", "modern", "--method", "tools/call", "--tool-name", "deploy"]
    proc = run([*modern, "--tool-args-json", json.dumps(deploy)])
    ok = proc.returncode == FAILED_EXIT and "McpUnsupported" in proc.stderr
    results.append(
        {
            "check": "inspector managed modern: the workflow runs as a task; its question, which "
            "this client cannot answer, ends it failed saying so",
            "ok": ok,
            "detail": None
            if ok
            else f"exit {proc.returncode}: {proc.stdout[-300:]} {proc.stderr[-300:]}",
        }
    )
    return results


MODERN = "2026-07-28"


def plain_modern_call(url: str, tool: str, arguments: dict[str, Any]) -> Any:
    """A 2026-07-28 tools/call that declares nothing (no Tasks extension, no elicitation): what
    a host without tasks sends. Its result (a handle for a task-only tool)."""
    import urllib.request

    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "interop-plain", "version": "1.0.0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": meta},
    }
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": tool,
    }
    if not url.startswith("http://127.0.0.1:"):
        raise ValueError(f"not the embedded stack's loopback URL: {url}")
    data = json.dumps(body).encode()
    request = urllib.request.Request(url, data, headers, method="POST")  # noqa: S310 - loopback http checked above
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: no proxy
    with opener.open(request, timeout=30) as response:
        return json.loads(response.read())["result"]


def inspector_modern_handle_checks(
    node: Path, modules: Path, url: str, workdir: Path
) -> list[dict[str, Any]]:
    """The Inspector CLI in the 2026-07-28 era, with the Tasks extension left out of its
    requests' `clientCapabilities` where the CLI lets it be (a config file's per-server
    `metadata`; docs/handles.md says why its own tools/call still declares it): its tools/list
    shows the handle tools, and it follows handles, reading only the text of each result,
    through task_status and task_answer to each task's result. The handles are started by a
    plain 2026-07-28 call of the same caller (the CLI cannot start one: ext-tasks stamps the
    Tasks extension on its every tools/call, so a long tool is a task for it)."""
    config = workdir / "inspector-modern-no-tasks.json"
    server = {
        "type": "streamable-http",
        "url": url,
        "protocolEra": "modern",
        "metadata": {"io.modelcontextprotocol/clientCapabilities": {}},
    }
    config.write_text(json.dumps({"mcpServers": {"no-tasks": server}}))
    cli = [str(node), str(modules / INSPECTOR), "--cli", "--config", str(config)]
    cli += ["--server", "no-tasks"]
    results = []
    listed = run([*cli, "--method", "tools/list"])
    try:
        names = [tool["name"] for tool in json.loads(listed.stdout)["tools"]]
        ok = {"task_status", "task_answer", "task_cancel"} <= set(names)
        detail = None if ok else str(names)
    except (ValueError, KeyError, TypeError):
        ok, detail = False, f"exit {listed.returncode}: {listed.stderr[-400:]}"
    results.append(
        {
            "check": "inspector modern, tasks off: tools/list shows the handle tools",
            "ok": ok,
            "detail": detail,
        }
    )
    call = _cli_caller(cli)
    cases = [
        ("confirm_delete", {"filename": "inspector-modern.txt"}, "Deleted inspector-modern.txt."),
        ("multi_input", {}, "Got interop and interop."),
    ]
    for tool, arguments, expected in cases:
        steps: list[str] = []
        try:
            words = _follow_text(call, plain_modern_call(url, tool, arguments), steps)
            ok = words == expected and steps[0] == "task_status" and "task_answer" in steps
            detail = None if ok else f"{steps}: {words[-400:]}"
        except (RuntimeError, ValueError, KeyError, OSError) as exc:
            ok, detail = False, f"{steps}: {exc}"
        results.append(
            {
                "check": f"inspector modern, tasks off: {tool}'s handle followed through "
                "task_status and task_answer reaches its result",
                "ok": ok,
                "detail": detail,
            }
        )
    return results


def driver_checks(
    label: str, node: Path, driver: Path, modules: Path, url: str
) -> list[dict[str, Any]]:
    """Run a driver script that prints one JSON line per check."""
    proc = run([str(node), str(driver), str(modules), url], timeout=360)
    results = []
    for line in proc.stdout.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        results.append({**entry, "check": f"{label} {entry['check']}"})
    if not results or (proc.returncode != 0 and all(r["ok"] for r in results)):
        results.append(
            {
                "check": f"{label} driver ran",
                "ok": False,
                "detail": f"exit {proc.returncode}: {proc.stdout[-500:]} {proc.stderr[-500:]}",
            }
        )
    return results


def clients_section(node: Path, modules: Path) -> list[dict[str, Any]]:
    """The official clients' drivers, then the Inspector CLI, against a stack serving the
    conformance tools (one after the other: listings would show each other's tasks)."""
    os.environ["MCP_TASKS_TOOLS"] = "conformance"
    from mcp_tasks_aws.local.stack import EmbeddedStack

    with EmbeddedStack(host="127.0.0.1", port=0) as stack:
        results = driver_checks("ts-sdk", node, TS_DRIVER, modules, stack.url)
        results += driver_checks("ts-sdk tasks", node, TS_TASKS_DRIVER, modules, stack.url)
        results += driver_checks("ts-sdk handles", node, TS_HANDLES_DRIVER, modules, stack.url)
        results += driver_checks("ext-tasks", node, EXT_TASKS_DRIVER, modules, stack.url)
        results += driver_checks("ts-client handles", node, TS2_HANDLES_DRIVER, modules, stack.url)
        results += inspector_checks(node, modules, stack.url)
        results += inspector_handle_checks(node, modules, stack.url)
        with tempfile.TemporaryDirectory() as workdir:
            results += inspector_modern_handle_checks(node, modules, stack.url, Path(workdir))
    return results


def managed_section(node: Path, modules: Path) -> list[dict[str, Any]]:
    """The managed example: a declaration's tools, its approval workflow run as the task."""
    from mcp_tasks_aws.local.stack import EmbeddedStack

    # Its local stand-ins (examples.managed.functions) import from the project root, as
    # `make run` imports from the current directory.
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    managed_env = {**os.environ, "MCP_TASKS_TOOLS": str(ROOT / MANAGED_EXAMPLE)}
    # The three clients side by side: each runs its own workflows' tasks, and most of their
    # time is spent waiting out poll intervals (up to the example's 30 s while a task waits
    # for its approval), not computing; results keep this order.
    with (
        EmbeddedStack(host="127.0.0.1", port=0, env=managed_env) as stack,
        ThreadPoolExecutor(max_workers=3) as pool,
    ):
        groups = [
            pool.submit(driver_checks, "ts-sdk", node, TS_MANAGED_DRIVER, modules, stack.url),
            pool.submit(
                driver_checks, "ext-tasks", node, EXT_TASKS_MANAGED_DRIVER, modules, stack.url
            ),
            pool.submit(inspector_managed_checks, node, modules, stack.url),
        ]
        return [result for group in groups for result in group.result()]


# Each section has a stack of its own, in a process of its own (moto is one per process), and
# they run side by side: most of their time is waiting (poll intervals, Node starting).
SECTIONS: dict[str, Callable[[Path, Path], list[dict[str, Any]]]] = {
    "clients": clients_section,
    "managed": managed_section,
}
RESULT = "interop-result "  # how a section's process prints each check for the parent


def section_process(name: str) -> subprocess.Popen[str]:
    args = [sys.executable, str(Path(__file__).resolve()), "--section", name]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def section_results(name: str, process: subprocess.Popen[str]) -> list[dict[str, Any]]:
    """The checks a section's process printed; a process that failed or printed none fails."""
    try:
        out, err = process.communicate(timeout=900)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
    results = [
        json.loads(line.removeprefix(RESULT))
        for line in out.splitlines()
        if line.startswith(RESULT)
    ]
    if not results or process.returncode != 0:
        detail = f"exit {process.returncode}: {out[-500:]} {err[-500:]}"
        results.append({"check": f"{name} section ran", "ok": False, "detail": detail})
    return results


def main() -> int:
    node, _ = ensure_suite()
    modules = ensure_clients()
    if sys.argv[1:] == ["--install"]:  # `make node-tools`: installs only (conformance's too)
        return 0
    sys.path.insert(0, str(ROOT / "src"))
    if sys.argv[1:2] == ["--section"]:  # one section, in the process the parent started
        for result in SECTIONS[sys.argv[2]](node, modules):
            print(RESULT + json.dumps(result), flush=True)
        return 0
    others = {name: section_process(name) for name in SECTIONS if name != "clients"}
    try:
        results = clients_section(node, modules)
    except BaseException:
        for process in others.values():
            process.kill()
        raise
    for name, process in others.items():
        results += section_results(name, process)
    failed = [r for r in results if not r["ok"]]
    for result in results:
        mark = "ok  " if result["ok"] else "FAIL"
        print(
            f"{mark} {result['check']}" + (f": {result['detail']}" if result.get("detail") else "")
        )
    print(f"interop: {len(results) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
