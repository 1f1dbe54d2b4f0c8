"""What `make run` (local.stack.main) says when it starts, run as the `mcp-tasks-aws-local`
console script would be: from a script outside the project, in a directory holding the user's
own tools module, which it must find there as `python -m` would.

It serves, says that tasks live in memory and that an edit of the module reloads it, names the
next command to try, and logs one line per request.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

CONSOLE_SCRIPT = """import sys
from mcp_tasks_aws.local.stack import main
sys.exit(main())
"""
TOOLS = '''from mcp_tasks_aws import ToolSet

tools = ToolSet()


@tools.tool
def hello() -> str:
    """Says hello."""
    return "hello"
'''


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_it_finds_the_module_here_and_says_what_to_do_next(tmp_path: Path) -> None:
    bin_dir, work = tmp_path / "bin", tmp_path / "work"
    bin_dir.mkdir()
    work.mkdir()
    (bin_dir / "mcp-tasks-aws-local").write_text(CONSOLE_SCRIPT)
    (work / "here_tools.py").write_text(TOOLS)
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_TASKS_", "AWS_"))}
    env.update({"MCP_TASKS_TOOLS": "here_tools", "PORT": str(port)})
    if env.get("PYTHONPATH"):  # it runs elsewhere: a relative entry would point elsewhere too
        entries = env["PYTHONPATH"].split(os.pathsep)
        env["PYTHONPATH"] = os.pathsep.join(str(Path(e).resolve()) for e in entries if e)
    process = subprocess.Popen(
        [sys.executable, str(bin_dir / "mcp-tasks-aws-local")],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline().rstrip("\n") for _ in range(3)]
        assert lines == [
            f"mcp-tasks-aws embedded stack serving tools 'here_tools' at {url} (Ctrl-C stops)",
            "tasks live in this process's memory (moto): stopping the stack forgets them; "
            "editing here_tools.py reloads the tools and keeps them",
            f"try: mcp-tasks tools {url}",
        ]
        request = urllib.request.Request(
            url, data=b"{}", method="POST", headers={"content-type": "application/json"}
        )
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with contextlib.suppress(urllib.error.HTTPError):  # `{}` is refused, and still logged
            opener.open(request, timeout=30)
    finally:
        process.terminate()
        _, err = process.communicate(timeout=30)
    access = [line for line in err.splitlines() if line.startswith("POST ")]
    assert len(access) == 1, err
    assert access[0].startswith("POST ? -> 400")
