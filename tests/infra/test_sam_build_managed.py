"""scripts/sam_build.py with a declaration as the ToolsModule: a bad one stops the build in one
line (file, tool, field), a good one is staged beside the code and its least-privilege
parameters are written and printed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infra.test_sam_build import sam_build
from support.targets import tool, write

EXAMPLE = "examples/managed/tools.yaml"


def test_a_bad_declaration_stops_the_build_in_one_line(tmp_path: Path) -> None:
    path = write(tmp_path, tool("echo", {"kind": "sqs"}))
    with pytest.raises(SystemExit) as stopped:
        sam_build.check_declaration(str(path))
    message = str(stopped.value)
    assert "\n" not in message
    assert message == (
        f"[sam_build] ToolsModule={path}: {path}: tool 'echo': target.kind: unknown target "
        "kind 'sqs' (one of: lambda, stateMachine, http)"
    )


def test_the_example_writes_and_prints_its_parameters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sam_build, "MANAGED_PARAMETERS", tmp_path / "managed.json")
    parameters = sam_build.check_declaration(EXAMPLE)
    assert json.loads((tmp_path / "managed.json").read_text()) == parameters
    assert parameters["ManagedWorkflowArns"] == [
        "arn:aws:states:us-east-1:123456789012:stateMachine:deploy-approval"
    ]
    printed = capsys.readouterr().out
    assert f"--parameter-overrides ToolsModule={EXAMPLE} ManagedFunctionArns=" in printed


def test_the_declarations_folder_is_staged_at_its_relative_path(tmp_path: Path) -> None:
    sam_build.stage_declaration(tmp_path, EXAMPLE)
    staged = tmp_path / "examples" / "managed"
    assert (staged / "tools.yaml").is_file()
    assert (staged / "inventory.openapi.yaml").is_file()
    assert not list(staged.rglob("__pycache__"))


def test_a_declaration_is_recognised_by_its_suffix() -> None:
    assert sam_build.is_declaration("examples/managed/tools.yaml")
    assert sam_build.is_declaration("tools.JSON")
    assert not sam_build.is_declaration("my_tools:toolset")
