"""scripts/sam_build.py with a declaration as the ToolsModule: a bad one stops the build in one
line (file, tool, field), a good one is staged beside the code (it and what it references) and
its least-privilege parameters are written and printed."""

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
    assert f"make deploy passes ToolsModule={EXAMPLE} ManagedFunctionArns=" in printed


def test_the_declaration_and_what_it_references_are_staged_at_their_paths(
    tmp_path: Path,
) -> None:
    staged = sam_build.tools_plan(EXAMPLE).stage(tmp_path)
    # The file, its OpenAPI document and its ASL files; not its local stand-ins (never
    # deployed), nor anything else in its folder
    assert sorted(map(str, staged)) == [
        "examples/managed/approval.asl.json",
        "examples/managed/inventory.openapi.yaml",
        "examples/managed/quote.asl.json",
        "examples/managed/tools.yaml",
    ]
    assert sorted(p.name for p in (tmp_path / "examples" / "managed").iterdir()) == [
        "approval.asl.json",
        "inventory.openapi.yaml",
        "quote.asl.json",
        "tools.yaml",
    ]


def test_a_declaration_is_recognised_by_its_suffix() -> None:
    assert sam_build.is_declaration("examples/managed/tools.yaml")
    assert sam_build.is_declaration("tools.JSON")
    assert not sam_build.is_declaration("my_tools:toolset")
