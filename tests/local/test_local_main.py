"""`make run` (local.stack.main) fails in one line, not a traceback, for what a new user gets
wrong first: a tools module that does not exist, a path to no file, a port in use."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_local(tools: str, port: int) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_TASKS_", "AWS_"))}
    env.update({"MCP_TASKS_TOOLS": tools, "PORT": str(port)})
    return subprocess.run(
        [sys.executable, "-m", "mcp_tasks_aws.local.stack"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize(
    ("tools", "says"),
    [
        ("my_toolz", "no module named 'my_toolz'"),
        ("tools/my_tools.py", f"'tools/my_tools.py': no such file ({ROOT / 'tools/my_tools.py'})"),
        ("mcp_tasks_aws.toolsets.demo:nothing", "has no ToolSet named 'nothing'"),
    ],
    ids=["typo", "path", "attribute"],
)
def test_a_bad_tools_module_is_one_line(tools: str, says: str) -> None:
    done = run_local(tools, _free_port())
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert says in lines[0]
    assert "Traceback" not in done.stderr


def test_a_port_in_use_is_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = int(taken.getsockname()[1])
        done = run_local("demo", port)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"port {port}" in lines[0]
    assert "already in use" in lines[0]


def test_a_missing_import_inside_the_tools_module_keeps_its_traceback(tmp_path: Path) -> None:
    # A module that exists but imports something missing is the author's bug, not a typo.
    (tmp_path / "broken_tools.py").write_text("import not_installed_anywhere\n")
    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = f"{tmp_path}{os.pathsep}{env_path}"
    try:
        done = run_local("broken_tools", _free_port())
    finally:
        os.environ["PYTHONPATH"] = env_path
    assert done.returncode != 0
    assert "not_installed_anywhere" in done.stderr
    assert "Traceback" in done.stderr
