"""The demo's `build_report`: a task-only tool that needs no argument and asks nothing, so a
client that can run a task (the Inspector CLI, `mcp-tasks call URL build_report`) can try it as
it is; it reports progress section by section."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from mcp_tasks_aws.client import TaskHandle, Tasks, connect
from mcp_tasks_aws.toolsets import demo
from support.mcp import running_stack


class Reports:
    """A stand-in ToolContext that keeps what the tool reports."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, float | None, float | None]] = []

    def report(
        self, message: str, progress: float | None = None, total: float | None = None
    ) -> None:
        self.seen.append((message, progress, total))


def test_it_runs_only_as_a_task_and_needs_no_argument() -> None:
    spec = demo.tools.tools["build_report"]
    assert spec.task.value == "required"
    assert spec.input_schema.get("required", []) == []
    assert spec.handwritten_schema is None


def test_it_reports_each_section(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(demo.time, "sleep", lambda _: None)
    reports = Reports()
    report = demo.build_report(reports, sections=3)  # type: ignore[arg-type]
    assert report == demo.Report(title="Weekly report", sections=3, words=405)
    assert reports.seen == [
        ("writing section 1", 0, 3),
        ("writing section 2", 1, 3),
        ("writing section 3", 2, 3),
        ("done", 3, 3),
    ]


@pytest.fixture(scope="module")
def demo_url() -> Iterator[str]:
    with running_stack(MCP_TASKS_TOOLS="demo") as stack:
        yield stack.url


def test_called_without_arguments_it_becomes_a_task_and_completes(demo_url: str) -> None:
    async def run() -> Any:
        async with connect(demo_url) as client:
            started = await Tasks(client).start("build_report", {})
            assert isinstance(started, TaskHandle)
            return await started.wait(timeout=60)

    result = anyio.run(run)
    assert result.structured_content == {"title": "Weekly report", "sections": 4, "words": 570}
