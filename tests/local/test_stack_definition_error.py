"""`make run` with a tool its server cannot describe ends in the one `ToolDefinitionError` line
(which tool, which parameter, what to use instead), not a traceback around it; MCP_TASKS_DEBUG=1
shows the traceback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

BAD_TOOLS = '''
from mcp_tasks_aws import ToolSet

tools = ToolSet()


class Opaque:
    pass


@tools.tool
def broken(thing: Opaque) -> str:
    """Takes something no JSON Schema describes."""
    return "never"
'''


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run_local(tmp_path: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "bad_tools.py").write_text(BAD_TOOLS)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_TASKS_", "AWS_"))}
    path = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    env.update({"MCP_TASKS_TOOLS": "bad_tools", "PORT": str(_free_port()), "PYTHONPATH": path})
    env.update(extra)
    return subprocess.run(
        [sys.executable, "-m", "mcp_tasks_aws.local.stack"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_bad_tool_definition_is_the_one_line(tmp_path: Path) -> None:
    done = run_local(tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "mcp-tasks-aws-local: ToolDefinitionError: tool 'broken': parameter 'thing' is typed "
        "Opaque, which has no JSON Schema; use JSON types (str, int, float, bool, list, dict), "
        "Literal, an Enum, a pydantic model, a dataclass or a TypedDict"
    ]


def test_debug_shows_its_traceback(tmp_path: Path) -> None:
    done = run_local(tmp_path, MCP_TASKS_DEBUG="1")
    assert done.returncode != 0
    assert "Traceback" in done.stderr
    assert done.stderr.strip().splitlines()[-1].endswith("a dataclass or a TypedDict")
