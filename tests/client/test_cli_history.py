"""The history file behind `mcp-tasks tasks`: where it lives, what it keeps, how much, and
that a damaged file never fails a command."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from mcp_tasks_aws.client.cli.history import MAX_ENTRIES, History, state_dir

URL = "http://127.0.0.1:8000/mcp"


def test_where_it_lives() -> None:
    assert state_dir({"MCP_TASKS_STATE_DIR": "/x"}) == Path("/x")
    assert state_dir({"XDG_STATE_HOME": "/s"}) == Path("/s/mcp-tasks")
    assert state_dir({}) == Path.home() / ".local" / "state" / "mcp-tasks"


def test_it_keeps_the_newest_and_only_what_this_cli_started(tmp_path: Path) -> None:
    history = History(tmp_path)
    for n in range(MAX_ENTRIES + 5):
        history.record(URL, f"t{n}", "working", tool="job", created_at=f"c{n}")
    history.update_known(URL, f"t{MAX_ENTRIES + 4}", "completed", None)
    history.update_known(URL, "started-elsewhere", "completed", None)
    entries = history.of(URL)
    assert len(entries) == MAX_ENTRIES
    assert (entries[0].task_id, entries[0].status, entries[0].tool) == (
        f"t{MAX_ENTRIES + 4}",
        "completed",
        "job",
    )
    assert entries[-1].task_id == "t5"
    assert "started-elsewhere" not in {e.task_id for e in entries}
    assert stat.S_IMODE(history.path.stat().st_mode) == 0o600
    assert set(json.loads(history.path.read_text())["tasks"][0]) == {
        "server",
        "task_id",
        "tool",
        "created_at",
        "status",
        "status_message",
    }


def test_a_damaged_file_reads_as_empty_and_is_replaced(tmp_path: Path) -> None:
    history = History(tmp_path)
    history.path.write_text("{not json")
    assert history.of(URL) == []
    history.record(URL, "t1", "working")
    assert [e.task_id for e in history.of(URL)] == ["t1"]
