"""The README's client examples (examples/*.py) run as they are, against the default tools
on an embedded stack, with the endpoint from MCP_TASKS_URL as a reader would set it.

The README's block that runs them (`python examples/call_tools.py`, `python
examples/task_handle.py`) is these runs: its test (tests/documentation) leaves it to this
module, which checks what the README promises they print and more."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.mcp import running_stack

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def demo_url() -> Iterator[str]:
    with running_stack(MCP_TASKS_TOOLS="demo") as stack:
        yield stack.url


def run_example(name: str, url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        env={**os.environ, "MCP_TASKS_URL": url},
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )


def test_call_tools_example(demo_url: str) -> None:
    done = run_example("call_tools.py", demo_url)
    assert done.returncode == 0, done.stderr
    assert "text_stats: {'words': 4, 'sentences': 2" in done.stdout
    assert "asked: billing 1.4.2 is on staging. Promote it to production?" in done.stdout
    assert "release: billing 1.4.2 is live in production" in done.stdout


def test_task_handle_example(demo_url: str) -> None:
    done = run_example("task_handle.py", demo_url)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("task ")
    assert lines[1] in ("status now: working", "status now: completed")
    assert lines[2].startswith("result: {")
    assert "'files': 6" in lines[2]
    assert lines[2].startswith("result: {'digest': ")  # as the README promises
