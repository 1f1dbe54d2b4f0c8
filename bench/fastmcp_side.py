"""FastMCP 4 with fastmcp-tasks, for comparison: a side virtualenv and a server script.

The side virtualenv lives in `.tools/fastmcp-venv` (git-ignored), made with `python -m venv`
and filled by its own pip, so the project's `.venv` is never touched. It is installed once and
reused while its stamp names the same pinned versions. fastmcp-tasks pins fastmcp-slim to its
own exact version, so both packages are pinned to one release.

The server defines `slow_compute(seconds, label)` like the conformance tool, with task support
optional (`task=TaskConfig(mode="optional")`), on the tasks extension's in-memory backend
(`memory://`), served over streamable HTTP on 127.0.0.1 by `FastMCP.run(transport="http")`.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from common import PROJECT_ROOT, PYTHON

FASTMCP_VERSION = "4.1.4"
REQUIREMENTS = (f"fastmcp=={FASTMCP_VERSION}", f"fastmcp-tasks=={FASTMCP_VERSION}")
SIDE_VENV = PROJECT_ROOT / ".tools" / "fastmcp-venv"
INSTALL_TIMEOUT_S = 600
_STAMP = SIDE_VENV / ".bench-requirements"

SERVER_SCRIPT = '''\
"""FastMCP 4 + fastmcp-tasks server for `make bench` (written by bench/fastmcp_side.py)."""

import argparse
import asyncio

from fastmcp import FastMCP
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension

mcp = FastMCP("bench-fastmcp")
mcp.add_extension(TasksExtension(url="memory://"))


@mcp.tool(task=TaskConfig(mode="optional"))
async def slow_compute(seconds: float, label: str) -> str:
    """Sleeps for a while, then reports; a task when the client opts in."""
    await asyncio.sleep(max(0.0, seconds))
    return f"Computed {label} after {seconds}s."


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    mcp.run(
        transport="http",
        host="127.0.0.1",
        port=args.port,
        show_banner=False,
        log_level="warning",
    )
'''


class SideUnavailable(RuntimeError):
    """The side install, or the FastMCP server, could not be had; the reason is the message."""


def side_environment() -> dict[str, str]:
    """The caller's environment without what would point a child at the project's venv."""
    dropped = {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "__PYVENV_LAUNCHER__"}
    return {k: v for k, v in os.environ.items() if k not in dropped}


def _run(argv: list[str], what: str, timeout: float) -> str:
    try:
        done = subprocess.run(
            argv,
            cwd=PROJECT_ROOT,
            env=side_environment(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise SideUnavailable(f"{what} took more than {timeout:.0f}s") from None
    except OSError as exc:
        raise SideUnavailable(f"{what}: {exc}") from exc
    if done.returncode != 0:
        lines = [
            line
            for line in (done.stderr + done.stdout).splitlines()
            if line.strip() and "is ignored" not in line
        ]
        tail = " | ".join(lines[-3:]) or f"exit status {done.returncode}"
        raise SideUnavailable(f"{what} failed: {tail}")
    return done.stdout.strip()


def ensure_side_venv() -> Path:
    """The side venv's interpreter, installing it first if needed (SideUnavailable if not)."""
    python = SIDE_VENV / "bin" / "python"
    wanted = "\n".join(REQUIREMENTS)
    if python.exists() and _STAMP.exists() and _STAMP.read_text() == wanted:
        return python
    if SIDE_VENV.resolve().parent != (PROJECT_ROOT / ".tools").resolve():
        raise SideUnavailable(f"unexpected side venv location {SIDE_VENV}")
    print(f"installing {' '.join(REQUIREMENTS)} into .tools/fastmcp-venv (first run only)...")
    # `python -m venv` from inside .venv makes a venv of the base interpreter.
    _run([PYTHON, "-m", "venv", "--clear", str(SIDE_VENV)], "creating the side venv", 120)
    _run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            *REQUIREMENTS,
        ],
        "pip install " + " ".join(REQUIREMENTS),
        INSTALL_TIMEOUT_S,
    )
    _run(
        [str(python), "-c", "import fastmcp, fastmcp_tasks"],
        "importing fastmcp and fastmcp_tasks",
        120,
    )
    _STAMP.write_text(wanted)
    return python


def server_argv(port: int) -> list[str]:
    """The command that serves the comparison server on 127.0.0.1:`port` (installs first)."""
    python = ensure_side_venv()
    script = SIDE_VENV / "bench_server.py"
    if not script.exists() or script.read_text() != SERVER_SCRIPT:
        script.write_text(SERVER_SCRIPT)
    return [str(python), str(script), "--port", str(port)]


def label() -> str:
    return f"FastMCP {FASTMCP_VERSION} + fastmcp-tasks (memory)"
