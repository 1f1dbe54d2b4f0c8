"""`make run` reloads the tools module when its file changes: the next call runs the new code,
tasks made before the reload are still there, and an edit that does not import (or defines a
tool the server refuses) leaves the tools as they were, said in one log line.

The watcher is polled by hand (`tools_watcher.poll()`), so nothing waits on a timer.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from mcp_tasks_aws.client import Tasks, connect
from mcp_tasks_aws.local.reload import tools_files
from mcp_tasks_aws.local.stack import EmbeddedStack

MODULE = "reload_me_tools"
VERSION = '''
from mcp_tasks_aws import TaskPolicy, ToolSet

tools = ToolSet()


@tools.tool
def hello() -> str:
    """Says which version answers."""
    return "{answer}"


@tools.tool(task=TaskPolicy.REQUIRED)
def job() -> str:
    """A quick task."""
    return "job done"
'''


def write(path: Path, answer: str) -> None:
    path.write_text(VERSION.format(answer=answer))


def call(url: str, tool: str) -> str:
    async def go() -> str:
        async with connect(url) as client:
            result = await client.call_tool(tool, {})
            return str(result.content[0].text)  # type: ignore[union-attr]

    return anyio.run(go)


def run_task(url: str) -> str:
    async def go() -> str:
        async with connect(url) as client:
            handle = await Tasks(client).start("job", {})
            await handle.wait(timeout=30)  # type: ignore[union-attr]
            return str(handle.task_id)  # type: ignore[union-attr]

    return anyio.run(go)


def status_of(url: str, task_id: str) -> str:
    async def go() -> str:
        async with connect(url) as client:
            return str((await Tasks(client).get(task_id)).status)

    return anyio.run(go)


@pytest.fixture
def module_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    import sys

    path = tmp_path / f"{MODULE}.py"
    write(path, "version one")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield path
    sys.modules.pop(MODULE, None)


@pytest.fixture
def stack(module_file: Path) -> Iterator[EmbeddedStack]:
    # An hour between polls: the test polls itself.
    with EmbeddedStack(env={"MCP_TASKS_TOOLS": MODULE}, reload_interval_s=3600) as running:
        yield running


def test_an_edit_is_served_and_the_tasks_stay(
    stack: EmbeddedStack, module_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert stack.tools_watcher is not None
    assert call(stack.url, "hello") == "version one"
    task_id = run_task(stack.url)
    assert stack.tools_watcher.poll() is False  # nothing changed yet

    write(module_file, "version two, edited")
    with caplog.at_level(logging.INFO, logger="mcp_tasks_aws.local"):
        assert stack.tools_watcher.poll() is True
    assert call(stack.url, "hello") == "version two, edited"
    assert status_of(stack.url, task_id) == "completed"  # moto was not restarted
    assert f"reloaded {MODULE}: 2 tools (tasks kept)" in caplog.messages


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        ("def broken(:\n", "SyntaxError: invalid syntax"),
        (
            "class Opaque:\n    pass\n\n\n@tools.tool\ndef odd(x: Opaque) -> str:\n"
            '    """Odd."""\n    return ""\n',
            "ToolDefinitionError: tool 'odd': parameter 'x' is typed Opaque",
        ),
    ],
    ids=["syntax", "definition"],
)
def test_an_edit_that_fails_keeps_the_tools_as_they_were(
    stack: EmbeddedStack,
    module_file: Path,
    caplog: pytest.LogCaptureFixture,
    edit: str,
    reason: str,
) -> None:
    assert stack.tools_watcher is not None
    module_file.write_text(module_file.read_text() + edit)
    with caplog.at_level(logging.WARNING, logger="mcp_tasks_aws.local"):
        assert stack.tools_watcher.poll() is True
    assert call(stack.url, "hello") == "version one"
    [line] = [m for m in caplog.messages if m.startswith("reloading")]
    assert line.startswith(
        f"reloading {MODULE} failed, still serving the tools as they were: {reason}"
    )


def test_a_package_is_watched_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib
    import sys

    package = tmp_path / "reload_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helpers.py").write_text("X = 1\n")
    (package / "tools.py").write_text("from reload_pkg.helpers import X\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("reload_pkg.tools")
    try:
        assert tools_files("reload_pkg.tools") == sorted(package.glob("*.py"))
        importlib.import_module("mcp_tasks_aws.toolsets.demo")  # one of the project's: one file
        assert [p.name for p in tools_files("mcp_tasks_aws.toolsets.demo")] == ["demo.py"]
    finally:
        for name in [n for n in sys.modules if n.startswith("reload_pkg")]:
            del sys.modules[name]
