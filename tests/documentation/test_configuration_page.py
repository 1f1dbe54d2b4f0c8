"""docs/configuration.md cannot drift from the code: every variable the server's settings read
is documented there, and every server variable the page documents is read by the code."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "mcp_tasks_aws"
PAGE = ROOT / "docs" / "configuration.md"
VARIABLE = re.compile(r"MCP_TASKS_[A-Z0-9_]+")
# Where the deployed functions and the embedded stack read their settings.
SETTINGS_SOURCES = [SRC / "config.py", SRC / "edge" / "auth_settings.py"]


def read_by_settings() -> set[str]:
    return {name for path in SETTINGS_SOURCES for name in VARIABLE.findall(path.read_text())}


def read_anywhere() -> set[str]:
    return {name for path in SRC.rglob("*.py") for name in VARIABLE.findall(path.read_text())}


def documented() -> set[str]:
    rows = [line for line in PAGE.read_text().splitlines() if line.startswith("| `MCP_TASKS_")]
    return {name for row in rows for name in VARIABLE.findall(row.split("|")[1])}


def test_every_setting_the_server_reads_is_documented() -> None:
    missing = read_by_settings() - documented()
    assert not missing, f"add these to docs/configuration.md: {sorted(missing)}"


def test_every_documented_variable_is_read_by_the_code() -> None:
    unknown = documented() - read_anywhere()
    assert not unknown, f"docs/configuration.md names variables nothing reads: {sorted(unknown)}"


def test_the_page_lists_something() -> None:
    assert len(documented()) >= 20
