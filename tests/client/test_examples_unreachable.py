"""An example run with no server listening ends in one line that says what to do, not the
SDK's nested traceback (MCP_TASKS_DEBUG=1 brings the traceback back)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("example", ["call_tools.py", "task_handle.py"])
def test_no_server_is_one_line(example: str) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/mcp"
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / example), url],
        env={k: v for k, v in os.environ.items() if k != "MCP_TASKS_DEBUG"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"{EXAMPLES / example}: cannot reach {url}: nothing answers there; is the server "
        "running? (`make run` serves http://127.0.0.1:8000/mcp)"
    ]


def test_debug_keeps_the_traceback() -> None:
    url = f"http://127.0.0.1:{_closed_port()}/mcp"
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "task_handle.py"), url],
        env={**os.environ, "MCP_TASKS_DEBUG": "1"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert "Traceback" in done.stderr
