"""Official clients against the embedded stack: the referees for serving both protocol eras.

- The TypeScript SDK 1.x (`@modelcontextprotocol/sdk`, a 2025-11-25 client), driven by
  `scripts/interop/ts_sdk_client.cjs`: connect, tools, elicitation/sampling/roots mid-call,
  prompts, resources, logs, ending the session.
- The MCP Inspector 2.x CLI in its default era (legacy: an `initialize` first), and in its
  `modern` and `auto` eras: listing and calling tools, listing and reading resources.

Installs Node 22 (as the conformance runner does) and the pinned clients into `.tools/clients`
(git-ignored), starts the embedded stack with the conformance tools on a free loopback port,
and fails if any check fails. Usage: `python scripts/interop.py`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from conformance import ensure_suite  # noqa: E402  (the same Node 22)

CLIENTS_DIR = ROOT / ".tools" / "clients"
PACKAGES = ("@modelcontextprotocol/sdk@1.32.2", "@modelcontextprotocol/inspector@2.12.0")
TS_DRIVER = ROOT / "scripts" / "interop" / "ts_sdk_client.cjs"
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


def inspector_checks(node: Path, modules: Path, url: str) -> list[dict[str, Any]]:
    """The Inspector CLI's command lines the README gives, each with what it must print."""
    cli = [str(node), str(modules / INSPECTOR), "--cli", url]

    def text_is(expected: str) -> Callable[[Any], bool]:
        return lambda out: out["content"][0]["text"] == expected

    def lists(key: str, name: str, field: str = "name") -> Callable[[Any], bool]:
        return lambda out: name in [item[field] for item in out[key]]

    # (name, arguments, what the output must satisfy)
    cases: list[tuple[str, list[str], Callable[[Any], bool]]] = [
        ("legacy: tools/list", ["--method", "tools/list"], lists("tools", "greet")),
        (
            "legacy: tools/list says taskSupport",
            ["--method", "tools/list"],
            lambda out: all("taskSupport" in tool["execution"] for tool in out["tools"]),
        ),
        (
            "legacy: tools/call",
            ["--method", "tools/call", "--tool-name", "greet", "--tool-arg", "name=Ada"],
            text_is("Hello, Ada!"),
        ),
        (
            "legacy: tools/call of a tool error",
            ["--method", "tools/call", "--tool-name", "test_error_handling"],
            lambda out: out.get("isError") is True,
        ),
        (
            "legacy: resources/list",
            ["--method", "resources/list"],
            lists("resources", "conformance://readme", "uri"),
        ),
        (
            "legacy: resources/read",
            ["--method", "resources/read", "--uri", "conformance://readme"],
            lambda out: "fixtures" in out["contents"][0]["text"],
        ),
        (
            "legacy: prompts/list",
            ["--method", "prompts/list"],
            lists("prompts", "test_input_required_result_prompt"),
        ),
        (
            "modern: tools/call",
            ["--protocol-era", "modern", "--method", "tools/call", "--tool-name", "greet"],
            text_is("Hello, World!"),
        ),
        (
            "auto: tools/list",
            ["--protocol-era", "auto", "--method", "tools/list"],
            lists("tools", "greet"),
        ),
    ]
    results = []
    for name, args, expect in cases:
        proc = run([*cli, *args])
        # The CLI prints an isError result and exits 5 (its "tool returned an error" code).
        expected_exit = 5 if "--tool-name" in args and "test_error_handling" in args else 0
        try:
            ok = proc.returncode == expected_exit and expect(json.loads(proc.stdout))
        except (ValueError, KeyError, IndexError, TypeError):
            ok = False
        detail = (
            None if ok else f"exit {proc.returncode}: {proc.stdout[-400:]} {proc.stderr[-400:]}"
        )
        results.append({"check": f"inspector {name}", "ok": ok, "detail": detail})
    return results


def ts_sdk_checks(node: Path, modules: Path, url: str) -> list[dict[str, Any]]:
    proc = run([str(node), str(TS_DRIVER), str(modules), url], timeout=180)
    results = []
    for line in proc.stdout.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        results.append({**entry, "check": f"ts-sdk {entry['check']}"})
    if not results or (proc.returncode != 0 and all(r["ok"] for r in results)):
        results.append(
            {
                "check": "ts-sdk driver ran",
                "ok": False,
                "detail": f"exit {proc.returncode}: {proc.stdout[-500:]} {proc.stderr[-500:]}",
            }
        )
    return results


def main() -> int:
    node, _ = ensure_suite()
    modules = ensure_clients()
    os.environ["MCP_TASKS_TOOLS"] = "conformance"
    sys.path.insert(0, str(ROOT / "src"))
    from mcp_tasks_aws.local.server import EmbeddedStack

    with EmbeddedStack(host="127.0.0.1", port=0) as stack:
        results = ts_sdk_checks(node, modules, stack.url)
        results += inspector_checks(node, modules, stack.url)
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
