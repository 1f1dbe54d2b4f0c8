"""`scripts/conformance.py` runs a group of server scenarios in ONE suite process and reads each
scenario's checks back from the folders it wrote: a scenario of the listing without results, or
results of one the listing did not name, fails the run rather than going unnoticed."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "conformance.py"
STAMP = "2026-12-02T11-30-00-123Z"  # the suite's folder suffix: an ISO time, `:` and `.` as `-`


@pytest.fixture
def conformance() -> ModuleType:
    spec = importlib.util.spec_from_file_location("conformance_under_test", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_checks(out: Path, scenario: str, *statuses: str) -> None:
    folder = out / f"server-{scenario}-{STAMP}"
    folder.mkdir(parents=True)
    checks = [{"id": f"{scenario}-{i}", "status": s} for i, s in enumerate(statuses)]
    (folder / "checks.json").write_text(json.dumps(checks))


def test_results_are_read_back_by_scenario_even_when_one_name_prefixes_another(
    conformance: ModuleType, tmp_path: Path
) -> None:
    write_checks(tmp_path, "tools-call", "SUCCESS")
    write_checks(tmp_path, "tools-call-simple-text", "SUCCESS", "FAILURE")
    found = conformance.results_by_scenario(tmp_path)
    assert {name: [c["status"] for c in checks] for name, checks in found.items()} == {
        "tools-call": ["SUCCESS"],
        "tools-call-simple-text": ["SUCCESS", "FAILURE"],
    }


def test_a_group_run_names_what_did_not_run_and_what_ran_unlisted(
    conformance: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[list[str]] = []

    def suite(args: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        seen.append(args)
        out = Path(args[args.index("-o") + 1])
        write_checks(out, "tools-list", "SUCCESS")
        write_checks(out, "surprise", "SUCCESS")  # not in the listing below
        return subprocess.CompletedProcess(args, 1, "ran 2 scenarios", "")

    monkeypatch.setattr(conformance.subprocess, "run", suite)
    labels = ["tools-list@2025-11-25", "ping@2025-11-25"]
    results = conformance.run_group(
        Path("node"), Path("cli.js"), "http://localhost:1/mcp", labels, "2025-11-25", tmp_path
    )
    assert len(seen) == 1  # one suite process for the whole group
    assert seen[0][-4:] == ["--suite", "all", "--spec-version", "2025-11-25"]
    assert [c["status"] for c in results["tools-list@2025-11-25"]] == ["SUCCESS"]
    missing = results["ping@2025-11-25"]
    assert [(c["id"], c["status"]) for c in missing] == [("no-checks", "FAILURE")]
    assert "ran 2 scenarios" in missing[0]["errorMessage"]
    unlisted = results["surprise@2025-11-25"]
    assert (unlisted[0]["id"], unlisted[0]["status"]) == ("unlisted", "FAILURE")


def test_an_unreadable_result_folder_stops_the_run(conformance: ModuleType, tmp_path: Path) -> None:
    folder = tmp_path / "server-tools-list-yesterday"
    folder.mkdir()
    (folder / "checks.json").write_text("[]")
    with pytest.raises(SystemExit, match="cannot read: server-tools-list-yesterday"):
        conformance.results_by_scenario(tmp_path)


def test_a_failed_check_without_a_message_is_told_by_its_description(
    conformance: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline = tmp_path / "baseline.json"
    baseline.write_text("{}")
    tally = conformance.Tally(baseline, ("FAILURE",))
    missing = {"id": "scope", "status": "FAILURE", "description": "did not complete the flow"}
    tally.add("auth/scope", [missing])
    assert tally.failures == ["FAILURE auth/scope:scope: did not complete the flow"]
    assert "did not complete the flow" in capsys.readouterr().out


def test_a_failing_client_scenario_shows_what_the_client_printed(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location(
        "conformance_client_under_test", SCRIPT.with_name("conformance_client.py")
    )
    assert spec is not None
    assert spec.loader is not None
    client = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(client)
    folder = tmp_path / "all" / "auth" / f"scope-step-up-{STAMP}"  # as one suite process writes
    folder.mkdir(parents=True)
    (folder / "stderr.txt").write_text("cannot listen on 127.0.0.1:4000")
    alone = tmp_path / "3" / f"tools_call-{STAMP}"  # as `--only` writes, a folder per run
    alone.mkdir(parents=True)
    (alone / "stdout.txt").write_text("called")
    assert "cannot listen" in client.client_output(tmp_path, "auth/scope-step-up")
    assert "called" in client.client_output(tmp_path, "tools_call")
    assert client.client_output(tmp_path, "auth/scope") == ""  # a prefix is not the scenario
