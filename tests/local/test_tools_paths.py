"""Tool code has one home from `make run` to `make deploy` (issue 29, item 1): `MCP_TASKS_TOOLS`
(`make run TOOLS=...`) takes a module name, a `.py` file anywhere in the checkout (its
neighbours import by their plain names, as when Python runs a script), or a declaration
anywhere, whose `local` modules are found beside it whatever the current directory; and what
cannot be served is one line that says what to do.
"""

from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from mcp_tasks_aws.client import connect
from mcp_tasks_aws.config import ToolsModuleError, load_toolset, tools_module_name
from mcp_tasks_aws.local.stack import EmbeddedStack
from support.user_tools import HELPERS, MY_TOOLS

ROOT = Path(__file__).resolve().parents[2]


def call(url: str, tool: str, arguments: dict[str, object]) -> str:
    async def go() -> str:
        async with connect(url) as client:
            result = await client.call_tool(tool, arguments)
            return str(result.content[0].text)  # type: ignore[union-attr]

    return anyio.run(go)


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A checkout-like folder holding the user's code in a subfolder, and a current
    directory that is neither (as when a test or another tool starts the stack)."""
    work = tmp_path / "checkout" / "team" / "tools"
    work.mkdir(parents=True)
    (work / "my_tools.py").write_text(MY_TOOLS)
    (work / "helpers.py").write_text(HELPERS)
    cwd = tmp_path / "somewhere-else"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    saved = list(sys.path)
    yield tmp_path / "checkout"
    sys.path[:] = saved
    for name in ("my_tools", "helpers", "functions", "stub"):
        sys.modules.pop(name, None)


def test_a_py_file_is_served_with_its_neighbours(
    elsewhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(elsewhere)
    spec = "team/tools/my_tools.py"
    assert tools_module_name(spec) == "my_tools"
    with EmbeddedStack(env={"MCP_TASKS_TOOLS": spec}) as stack:
        assert call(stack.url, "greet", {"name": "ada"}) == "HELLO, ADA!"


def test_an_edit_of_a_py_file_reloads_it(elsewhere: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(elsewhere)
    spec = "team/tools/my_tools.py"
    with EmbeddedStack(env={"MCP_TASKS_TOOLS": spec}, reload_interval_s=60) as stack:
        assert stack.tools_watcher is not None
        tools = elsewhere / spec
        tools.write_text(MY_TOOLS.replace('f"hello, {name}"', 'f"hi, {name}"'))
        assert stack.tools_watcher.poll()
        assert call(stack.url, "greet", {"name": "ada"}) == "HI, ADA!"


def test_a_file_with_an_attribute_names_its_tool_set(elsewhere: Path) -> None:
    path = elsewhere / "team" / "tools" / "my_tools.py"
    assert load_toolset(f"{path}:tools").name == "mine"


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("team/tools/missing.py", "MCP_TASKS_TOOLS='team/tools/missing.py': no such file ("),
        ("team/tools/my-tools.py", "'my-tools' cannot be a module name: rename the file"),
        ("team/tools/notes.txt", "name a .py file, a module or a declaration"),
    ],
    ids=["missing", "not-a-name", "not-python"],
)
def test_a_file_that_cannot_be_served_is_one_line(
    elsewhere: Path, monkeypatch: pytest.MonkeyPatch, spec: str, says: str
) -> None:
    monkeypatch.chdir(elsewhere)
    shutil.copy(elsewhere / "team" / "tools" / "my_tools.py", elsewhere / "team/tools/my-tools.py")
    (elsewhere / "team" / "tools" / "notes.txt").write_text("")
    with pytest.raises(ToolsModuleError) as refused:
        load_toolset(spec)
    assert says in str(refused.value)
    assert "\n" not in str(refused.value)


def beside(declaration: Path) -> None:
    """The declaration's `local` section naming modules by their plain names."""
    text = re.sub(r"(?m)^  module: .*$", "  module: functions", declaration.read_text())
    declaration.write_text(re.sub(r"(?m)^  httpStub: .*$", "  httpStub: stub:app", text))


def test_a_declaration_finds_its_local_modules_beside_it(tmp_path: Path, elsewhere: Path) -> None:
    # Given the managed example copied into a folder of its own, and the stack started from
    # a directory that is neither that folder nor the checkout
    folder = tmp_path / "anywhere" / "managed"
    shutil.copytree(ROOT / "examples" / "managed", folder)
    beside(folder / "tools.yaml")
    with EmbeddedStack(env={"MCP_TASKS_TOOLS": str(folder / "tools.yaml")}) as stack:
        # Then its Lambda stand-in (local.module: functions) and HTTP stub (stub:app) serve
        assert '"words":3' in call(stack.url, "word_count", {"text": "one two three"})
        assert "widget" in call(stack.url, "list_items", {})


def test_a_declarations_missing_local_module_is_one_line(tmp_path: Path, elsewhere: Path) -> None:
    folder = tmp_path / "managed"
    shutil.copytree(ROOT / "examples" / "managed", folder)
    beside(folder / "tools.yaml")
    (folder / "functions.py").unlink()
    with pytest.raises(ToolsModuleError) as refused:
        EmbeddedStack(env={"MCP_TASKS_TOOLS": str(folder / "tools.yaml")})
    assert str(refused.value) == (
        f"{folder / 'tools.yaml'}: local.module: no module 'functions' beside the declaration "
        f"(functions.py in {folder})"
    )
