"""`make run TOOLS=path/tools.yaml` serves a declaration, and a declaration that cannot be
served stops `make run` in one line naming the file, the tool and the field."""

from __future__ import annotations

import subprocess
from pathlib import Path

from local.test_local_main import ROOT, _free_port, run_local
from support.targets import tool, write


def test_make_run_passes_tools_on_as_mcp_tasks_tools() -> None:
    dry = subprocess.run(
        ["make", "-n", "run", "TOOLS=examples/managed/tools.yaml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "MCP_TASKS_TOOLS=examples/managed/tools.yaml" in dry.stdout


def test_a_bad_declaration_is_one_line(tmp_path: Path) -> None:
    path = write(tmp_path, tool("echo", {"kind": "lambda", "function": "arn:aws:nope"}))
    done = run_local(str(path), _free_port())
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"{path}: tool 'echo': target.function:" in lines[0]
    assert "Traceback" not in done.stderr


def test_a_function_without_a_local_stand_in_is_one_line(tmp_path: Path) -> None:
    path = write(tmp_path, tool("echo", {"kind": "lambda", "function": "echo-fn"}))
    done = run_local(str(path), _free_port())
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert (
        "tool 'echo': local.module: name a module with a stand-in for function 'echo-fn'"
        in (lines[0])
    )
