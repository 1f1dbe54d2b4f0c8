"""What `mcp-tasks` prints, without a server: tool descriptions, policies, saved media."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import pytest
from mcp_types import CallToolResult, ImageContent, TextContent, Tool

from mcp_tasks_aws.client.cli.display import MediaSaver, Output, describe_policy, signature
from mcp_tasks_aws.client.cli.terminal import Console, LineReader
from mcp_tasks_aws.protocol.names import TASK_POLICY_META

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "Where."},
        "unit": {"type": "string", "enum": ["c", "f"], "default": "c"},
        "days": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "region": {"type": "string", "x-mcp-header": "Region"},
    },
    "required": ["city"],
}


def _tool(**extra: Any) -> Tool:
    return Tool.model_validate({"name": "forecast", "inputSchema": SCHEMA, **extra})


def test_signature_marks_optional_arguments_and_unions() -> None:
    assert signature(_tool()) == (
        "city: string, unit: string?, days: integer|null?, tags: string[]?, region: string?"
    )


@pytest.mark.parametrize(
    ("extra", "policy"),
    [
        ({"_meta": {TASK_POLICY_META: "optional"}}, "task when allowed"),
        ({"_meta": {TASK_POLICY_META: "required"}}, "task only"),
        ({"_meta": {TASK_POLICY_META: "inline"}}, "inline"),
        ({"execution": {"taskSupport": "forbidden"}}, "inline"),  # a 2025-11-25 server
        ({"execution": {"taskSupport": "required"}}, "task only"),
        ({}, None),  # the server does not say
    ],
)
def test_task_policy_comes_from_meta_or_execution(extra: dict[str, Any], policy: str) -> None:
    assert describe_policy(_tool(**extra)) == policy


def _output(out: io.StringIO, save_dir: Path) -> Output:
    console = Console(io.StringIO(), LineReader(None), quiet=True)
    return Output(out, console, json=False, media=MediaSaver(save_dir))


def test_tools_listing_shows_defaults_choices_and_headers(tmp_path: Path) -> None:
    out = io.StringIO()
    _output(out, tmp_path).tools([_tool(description="Tomorrow's weather.\nMore.")])
    lines = out.getvalue().splitlines()
    assert lines[0] == f"forecast({signature(_tool())})"
    assert lines[1] == "    Tomorrow's weather."
    assert any("unit" in line and 'default "c"; one of c, f' in line for line in lines)
    assert any("region" in line and "header Mcp-Param-Region" in line for line in lines)
    assert any("city" in line and "required" in line and "Where." in line for line in lines)


def test_media_is_saved_and_never_overwritten(tmp_path: Path) -> None:
    out = io.StringIO()
    output = _output(out, tmp_path)
    png = base64.b64encode(b"\x89PNG first").decode()
    result = CallToolResult(
        content=[
            TextContent(type="text", text="chart:"),
            ImageContent(type="image", data=png, mime_type="image/png"),
        ]
    )
    output.result(None, result, stem="my chart")
    output.result(None, result, stem="my chart")
    first, second = tmp_path / "my-chart.png", tmp_path / "my-chart-2.png"
    assert out.getvalue() == (
        f"chart:\n[image image/png saved to {first}]\nchart:\n[image image/png saved to {second}]\n"
    )
    assert first.read_bytes() == second.read_bytes() == b"\x89PNG first"


def test_unknown_types_get_a_generic_extension_and_bad_base64_is_refused(tmp_path: Path) -> None:
    saver = MediaSaver(tmp_path)
    assert saver.save("blob", "application/x-unheard-of", "AAE=").name == "blob.bin"
    assert saver.save("note", "audio/wav", "AAE=").suffix == ".wav"
    with pytest.raises(ValueError, match="invalid Base64"):
        saver.save("bad", "image/png", "not base64!")


def test_no_directory_is_made_until_something_is_saved(tmp_path: Path) -> None:
    saver = MediaSaver()
    assert saver.directory is None
    path = saver.save("x", "image/png", "AAE=")
    assert path.parent.name.startswith("mcp-tasks-")
    path.unlink()
    path.parent.rmdir()


def test_content_that_cannot_be_saved_is_reported_in_place(tmp_path: Path) -> None:
    out = io.StringIO()
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    result = CallToolResult(
        content=[ImageContent(type="image", data="AAE=", mime_type="image/png")]
    )
    _output(out, blocked).result(None, result)
    assert out.getvalue().startswith("[image image/png not saved: ")


def test_the_live_status_line_draws_a_bar_for_numeric_progress() -> None:
    from rich.console import Console as RichConsole

    from mcp_tasks_aws.client.cli.terminal import _StatusLine
    from mcp_tasks_aws.client.wire import TaskFields

    line = _StatusLine()
    line.task = TaskFields.model_validate(
        {
            "taskId": "t",
            "status": "working",
            "statusMessage": "3/10 · migrating schema",
            "createdAt": "2026-01-01T00:00:00Z",
            "lastUpdatedAt": "2026-01-01T00:00:00Z",
            "ttlMs": None,
        }
    )
    console = RichConsole(file=io.StringIO(), width=120, color_system=None)
    with console.capture() as captured:
        console.print(line)
    text = captured.get()
    assert "[working]" in text
    assert "3/10 migrating schema" in text
    assert "━" in text  # the bar
    line.task = line.task.model_copy(update={"status_message": "just words"})
    with console.capture() as captured:
        console.print(line)
    assert "━" not in captured.get()
