"""`make build`'s import smoke test reports a tool definition the server refuses as the one
`ToolDefinitionError` line, read from what the smoke child itself prints when the handlers'
import fails on it."""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
BAD_TOOLS = '''
from mcp_tasks_aws import ToolSet

tools = ToolSet()


class Opaque:
    pass


@tools.tool
def broken(when: Opaque) -> str:
    """Takes something no JSON Schema describes."""
    return "never"
'''


def _sam_build() -> ModuleType:
    if str(ROOT / "scripts") not in sys.path:  # it imports sam_tools, as `python scripts/…` does
        sys.path.insert(0, str(ROOT / "scripts"))
    spec = importlib.util.spec_from_file_location("sam_build", ROOT / "scripts" / "sam_build.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


sam_build = _sam_build()
sam_smoke = importlib.import_module("sam_smoke")


def _smoke_child(package: Path, tools_module: str) -> subprocess.CompletedProcess[str]:
    """The smoke test's child, run as `make build` runs it, over a package laid out as built."""
    env = sam_smoke.smoke_environment(package, tools_module)
    return subprocess.run(
        [
            *(sys.executable, "-I", "-c", sam_smoke.SMOKE_CHILD, str(package), str(package)),
            *('["handlers.api.handler"]', "[]", "[]"),
        ],
        env=env,
        cwd=Path("/"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_definition_error_in_the_build_is_one_line(tmp_path: Path) -> None:
    package = tmp_path / "ApiFunction"
    package.mkdir()
    os.symlink(ROOT / "handlers", package / "handlers")
    os.symlink(ROOT / "src" / "mcp_tasks_aws", package / "mcp_tasks_aws")
    (package / "bad_tools.py").write_text(BAD_TOOLS)
    child = _smoke_child(package, "bad_tools")
    assert child.returncode != 0
    assert "Traceback" in child.stderr
    assert sam_smoke.definition_error(child.stderr) == (
        "ToolDefinitionError: tool 'broken': parameter 'when' is typed Opaque, which has no "
        "JSON Schema; use JSON types (str, int, float, bool, list, dict), Literal, an Enum, "
        "a pydantic model, a dataclass or a TypedDict"
    )


@pytest.mark.parametrize(
    "stderr",
    ["", "Traceback (most recent call last):\n  ...\nModuleNotFoundError: No module named 'x'\n"],
)
def test_other_failures_are_not_mistaken_for_one(stderr: str) -> None:
    assert sam_smoke.definition_error(stderr) is None
