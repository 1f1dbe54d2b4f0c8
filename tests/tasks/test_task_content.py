"""Rich results and progress in tasks: a binary result larger than the task item's budget goes
to the result bucket and comes back intact from tasks/get; numeric progress reaches pollers as
a statusMessage the CLI can parse."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest

from mcp_tasks_aws.protocol.progress import parse_status
from support import surface_tools
from support.mcp import running_stack
from support.tasks import TaskClient, WorkerDispatch, wait_until


@pytest.fixture(scope="module")
def client() -> Iterator[TaskClient]:
    with running_stack(MCP_TASKS_TOOLS="support.surface_tools") as stack:
        dispatch = WorkerDispatch(stack)
        stack.aws.register("WorkerFunction", dispatch)
        yield TaskClient(stack, dispatch)


@pytest.mark.parametrize("kilobytes", [4, 600])  # under and over the ~350 KB item budget
def test_an_image_result_comes_back_intact_from_tasks_get(
    client: TaskClient, kilobytes: int
) -> None:
    task_id = client.create("render", {"kilobytes": kilobytes})
    task = client.wait_terminal(task_id, timeout=10)
    assert task["status"] == "completed", task
    text, image = task["result"]["content"]
    data = base64.b64decode(image["data"])
    assert text["text"] == f"{len(data)} bytes"
    assert data == b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * (kilobytes * 4)
    assert image["mimeType"] == "image/png"


def test_progress_in_a_task_is_a_parseable_status_message(client: TaskClient) -> None:
    surface_tools.release.clear()
    task_id = client.create("staged_progress", {})
    try:
        task = wait_until(lambda: (t := client.get(task_id)).get("statusMessage") and t)
        assert task["status"] == "working"
        assert task["statusMessage"] == "3/10 · migrating schema"
        parsed = parse_status(task["statusMessage"])
        assert (parsed.progress, parsed.total, parsed.message) == (3, 10, "migrating schema")
    finally:
        surface_tools.release.set()
    assert client.wait_terminal(task_id)["status"] == "completed"
