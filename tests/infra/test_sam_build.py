"""scripts/sam_build.py's smoke test serves what the stack will serve: the ToolsModule from
the command line, samconfig.toml (where `sam deploy --guided` saves it), the environment, or
the template's default, in that order; and the functions' environment is the deployed one."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


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
sam_smoke = importlib.import_module("sam_smoke")  # the build's import smoke test

GUIDED = """version = 0.1
[default.deploy.parameters]
stack_name = "mcp-tasks"
parameter_overrides = "ToolsModule=\\"my_tools\\" AuthMode=\\"JWT\\""
"""
AS_TABLE = """version = 0.1
[default.deploy.parameters.parameter_overrides]
ToolsModule = "tools/my_tools.py"
AuthMode = "NONE"
"""
AS_LIST = """version = 0.1
[prod.deploy.parameters]
parameter_overrides = ["AuthMode=IAM", "ToolsModule=billing.tools:toolset"]
"""


@pytest.mark.parametrize(
    ("samconfig", "expected"),
    [(GUIDED, "my_tools"), (AS_LIST, "billing.tools:toolset"), (AS_TABLE, "tools/my_tools.py")],
    ids=["string", "list", "table (sam deploy --save-params)"],
)
def test_the_tools_module_saved_by_sam_deploy_is_smoke_tested(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, samconfig: str, expected: str
) -> None:
    monkeypatch.delenv("MCP_TASKS_TOOLS", raising=False)
    (tmp_path / "samconfig.toml").write_text(samconfig)
    assert sam_build.configured_tools_module(None, tmp_path) == expected
    env = sam_smoke.smoke_environment(tmp_path, sam_build.configured_tools_module(None, tmp_path))
    assert env["MCP_TASKS_TOOLS"] == expected


def test_the_command_line_wins(tmp_path: Path) -> None:
    (tmp_path / "samconfig.toml").write_text(GUIDED)
    assert sam_build.configured_tools_module("other.mod", tmp_path) == "other.mod"


def test_without_samconfig_the_environment_then_the_template_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_TASKS_TOOLS", "from_env")
    assert sam_build.configured_tools_module(None, tmp_path) == "from_env"
    monkeypatch.delenv("MCP_TASKS_TOOLS")
    assert sam_build.configured_tools_module(None, tmp_path) == "demo"


def test_the_smoke_environment_is_the_deployed_one(tmp_path: Path) -> None:
    env = sam_smoke.smoke_environment(tmp_path, "demo")
    assert "MCP_TASKS_STATE_SECRET" not in env  # deployed functions get the secret's ARN only
    assert env["MCP_TASKS_STATE_SECRET_ARN"].startswith("arn:aws:secretsmanager:")
    assert "cryptography.hazmat.primitives.ciphers.aead" in sam_smoke.LAZY_IMPORTS


def test_only_unchecked_hash_bytecode_counts_as_compiled(tmp_path: Path) -> None:
    """A function's modules must carry bytecode Lambda can use as is: hash-based and unchecked
    (Lambda cannot write bytecode, and a zip's 2 s file times can make timestamps look stale)."""
    import compileall
    import py_compile
    import sys

    package = tmp_path / "ApiFunction"
    for name in ("unchecked", "timestamp", "checked", "none"):
        (package / "mcp_tasks_aws" / name).mkdir(parents=True)
        (package / "mcp_tasks_aws" / name / "module.py").write_text("VALUE = 1\n")
    modes = {
        "unchecked": py_compile.PycInvalidationMode.UNCHECKED_HASH,
        "timestamp": py_compile.PycInvalidationMode.TIMESTAMP,
        "checked": py_compile.PycInvalidationMode.CHECKED_HASH,
    }
    for name, mode in modes.items():
        assert compileall.compile_dir(
            package / "mcp_tasks_aws" / name, quiet=1, invalidation_mode=mode
        )
    tag = sys.implementation.cache_tag

    missing = sam_build.uncompiled(package, ("mcp_tasks_aws",), tag)

    assert sorted(p.parent.name for p in missing) == ["checked", "none", "timestamp"]
    assert sam_build.uncompiled(package, ("mcp_tasks_aws",), "cpython-0") != []


def test_the_smoke_test_imports_every_functions_handler_from_the_template(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The list of functions and handlers comes from template.yaml (it once missed
    handlers.sweep): both front doors' for the API function (`Fn::If` on FrontDoor), the
    STREAMING one being the ASGI app handlers/run.sh serves."""
    import json
    import subprocess

    from mcp_tasks_aws.local.template import load_template

    template = load_template(ROOT / "template.yaml")
    functions = sam_build.function_handlers(template, ROOT)
    assert functions == {
        "ApiFunction": ["handlers.stream.asgi", "handlers.api.handler"],
        "WorkerFunction": ["handlers.worker.handler"],
        "ReconcileFunction": ["handlers.reconcile.handler"],
        "SweepFunction": ["handlers.sweep.handler"],
        "AskFunction": ["handlers.ask.handler"],
        "DurableFunction": ["handlers.durable.handler"],
    }
    staged = tmp_path / "template.json"
    staged.write_text(json.dumps(template))
    (tmp_path / "function").symlink_to(ROOT)
    assert sam_build.functions_in(staged) == functions
    # Each function's smoke child is asked to import that function's own handlers
    asked: dict[str, list[str]] = {}

    def child(argv: list[str], **options: object) -> subprocess.CompletedProcess[str]:
        # python -I -B -c CHILD OVERLAY PACKAGE HANDLERS ...
        package = argv.index("-c") + 3
        asked[Path(argv[package]).name] = json.loads(argv[package + 1])
        return subprocess.CompletedProcess(argv, 0, "", "")

    smoke = tmp_path / "smoke"
    smoke.mkdir()
    (smoke / ".pins").write_text("boto3")
    monkeypatch.setattr(sam_smoke, "binary_distributions", lambda package: [])
    monkeypatch.setattr(sam_smoke.subprocess, "run", child)
    sam_smoke.smoke(Path(sys.executable), tmp_path / "build", smoke, functions, "demo")
    assert asked == functions


def test_each_function_is_built_by_its_runtimes_python(tmp_path: Path) -> None:
    # The durable function runs python3.13: sam build needs that Python on PATH for it (the
    # build once failed there), and its bytecode must be 3.13's to be used.
    import json

    from mcp_tasks_aws.local.template import load_template

    staged = tmp_path / "template.json"
    staged.write_text(json.dumps(load_template(ROOT / "template.yaml")))
    versions = sam_build.runtimes_in(staged)
    assert versions.pop("DurableFunction") == "3.13"
    assert set(versions.values()) == {"3.12"}
    first, other = Path("/opt/py312/bin/python3.12"), Path("/opt/py313/bin/python3.13")
    path = sam_build.tool_env(first, other, first)["PATH"].split(os.pathsep)
    assert path[1:3] == [str(first.parent), str(other.parent)]  # after the SAM venv, once each
