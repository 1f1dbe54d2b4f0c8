"""The docs call tools the server they name serves (issue 29, item 3): docs/client.md once
called `slow_compute` and `confirm_delete`, which `make run` (the demo) does not serve.

Each page is read in order. The server is the demo's until a `make run` line names other
tools (`make run TOOLS=X`, `MCP_TASKS_TOOLS=X make run`); every tool called after it
(`mcp-tasks call ... TOOL`, `call_tool("TOOL"`, `Tasks(...).start("TOOL"`) must be one that
server lists. The README's calls run for real (test_readme_blocks.py).
"""

from __future__ import annotations

import re
import shlex
from functools import cache
from pathlib import Path

import pytest

from mcp_tasks_aws.config import load_toolset

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs").glob("*.md"))
SERVER = re.compile(r"(?:make run\b[^\n`]*?\bTOOLS=(\S+?)[`\s]|MCP_TASKS_TOOLS=(\S+) make run)")
CLI_CALL = re.compile(r"mcp-tasks call\b([^\n`#]*)")
SDK_CALL = re.compile(r"(?:call_tool|\.start)\(\s*[\"'](\w+)[\"']")


@cache
def served(tools: str) -> frozenset[str]:
    import os

    here = os.getcwd()
    os.chdir(ROOT)  # paths in the docs are relative to the checkout, as make run's are
    try:
        return frozenset(load_toolset(tools).tools)
    finally:
        os.chdir(here)


def cli_tool(arguments: str) -> str | None:
    """The tool a `mcp-tasks call` line names (after options and the endpoint), if any."""
    try:
        words = shlex.split(arguments)
    except ValueError:
        words = arguments.split()
    for word in words:
        if word.startswith(("-", "$")) or "://" in word:
            continue
        return word if re.fullmatch(r"[A-Za-z_]\w*", word) else None
    return None


def calls(page: Path) -> list[tuple[str, str]]:
    """(server, tool) for every tool call of the page, in order."""
    text = page.read_text()
    events: list[tuple[int, str, str]] = []
    for match in SERVER.finditer(text):
        events.append((match.start(), "server", match.group(1) or match.group(2)))
    for match in CLI_CALL.finditer(text):
        tool = cli_tool(match.group(1))
        if tool is not None:
            events.append((match.start(), "call", tool))
    for match in SDK_CALL.finditer(text):
        events.append((match.start(), "call", match.group(1)))
    server, found = "demo", []
    for _, kind, value in sorted(events):
        if kind == "server":
            server = value
        else:
            found.append((server, value))
    return found


@pytest.mark.parametrize("page", DOCS, ids=[p.name for p in DOCS])
def test_the_docs_call_tools_their_server_serves(page: Path) -> None:
    unknown = [f"{tool} (server: {server})" for server, tool in calls(page)
               if tool not in served(server)]  # fmt: skip
    assert unknown == []


def test_the_pages_that_call_tools_are_read() -> None:
    read = {page.name: calls(page) for page in DOCS}
    assert ("demo", "release") in read["client.md"]
    assert ("examples/managed/tools.yaml", "word_count") in read["managed.md"]
    assert cli_tool("https://x/mcp --json checksum_archive files=1") == "checksum_archive"
    assert cli_tool('"$URL" <tool> key=value') is None
