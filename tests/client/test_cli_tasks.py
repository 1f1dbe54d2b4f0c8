"""`mcp-tasks tasks [URL]`: on 2026-07-28 (no `tasks/list`) the tasks this CLI started on the
server, from its history file, with the last status seen (refreshed for those still running);
on 2025-11-25 the server's own `tasks/list`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_tasks_aws.client.cli.history import History
from mcp_tasks_aws.client.cli.main import Cli, main


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MCP_TASKS_STATE_DIR", str(tmp_path))
    return tmp_path


def out(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def listed(capsys: pytest.CaptureFixture[str], url: str) -> dict[str, dict[str, object]]:
    document = json.loads(out(capsys, "tasks", url, "--json"))
    assert document["source"] == "history"
    return {task["taskId"]: task for task in document["tasks"]}


def test_the_tasks_this_cli_started_with_their_last_status(
    stack_url: str, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    quick = out(capsys, "call", stack_url, "slow_compute", "seconds=0", "label=q", "--detach")
    long = out(capsys, "call", stack_url, "slow_compute", "seconds=60", "label=l", "--detach")
    quick, long = quick.strip(), long.strip()
    out(capsys, "wait", stack_url, quick, "-q")  # now seen completed
    tasks = listed(capsys, stack_url)
    assert list(tasks) == [long, quick]  # newest first
    assert tasks[quick]["status"] == "completed"
    assert (tasks[long]["status"], tasks[long]["tool"]) == ("working", "slow_compute")

    out(capsys, "cancel", stack_url, long)
    assert listed(capsys, stack_url)[long]["status"] == "cancelled"
    text = out(capsys, "tasks", stack_url).splitlines()
    assert text[0].split() == ["task", "status", "tool", "created", "message"]
    assert text[1].split()[:3] == [long, "cancelled", "slow_compute"]
    assert History(state).path == state / "history.json"


def test_another_server_has_its_own_list(
    stack_url: str, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    History(state).record("http://elsewhere:8000/mcp", "t-elsewhere", "working", tool="x")
    assert main(["tasks", stack_url]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"no tasks started from this CLI on this server (history: {state / 'history.json'})\n"
    )


def test_a_2025_11_25_server_lists_its_own(
    stack_url: str, state: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    started = out(capsys, "call", stack_url, "slow_compute", "seconds=0", "label=x", "--detach")
    task_id = started.strip()
    monkeypatch.setattr(Cli, "client_mode", "legacy")
    document = json.loads(out(capsys, "tasks", stack_url, "--json"))
    # Its session lists only what it created; the task this CLI started earlier (another
    # session) comes from the history.
    assert document["source"] == "tasks/list+history"
    assert task_id in [task["taskId"] for task in document["tasks"]]
