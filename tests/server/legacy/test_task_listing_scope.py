"""A 2025-11-25 `tasks/list` shows the tasks its session created, and no others. Without
authentication every caller is the one principal `anonymous`, and a task id is a bearer
secret: listing the principal's tasks handed every caller every task id, 2026-07-28 ones
included. Tasks stay shared by id: a known id still reads from another session."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_tasks_aws.protocol.transport import HttpTransport
from support.domain import Domain, tools
from support.legacy import LegacyClient, task_transport
from support.mcp import TASKS_EXTENSION, McpClient


@pytest.fixture
def transport() -> HttpTransport:
    return task_transport(Domain().service, tools, page_size=2)


def _session(transport: HttpTransport) -> LegacyClient:
    client = LegacyClient(transport)  # principal "anonymous": no authentication
    client.initialize()
    return client


def _create(client: LegacyClient, text: str) -> str:
    result = client.result("tools/call", {"name": "echo", "arguments": {"text": text}, "task": {}})
    task_id: str = result["task"]["taskId"]
    return task_id


def _listed(client: LegacyClient) -> list[str]:
    seen: list[str] = []
    cursor: str | None = None
    while True:
        page: dict[str, Any] = client.result("tasks/list", {"cursor": cursor} if cursor else {})
        seen += [task["taskId"] for task in page["tasks"]]
        cursor = page.get("nextCursor")
        if cursor is None:
            return seen


def test_another_sessions_tasks_are_not_listed(transport: HttpTransport) -> None:
    alice, bob = _session(transport), _session(transport)
    mine = [_create(alice, "a1"), _create(alice, "a2"), _create(alice, "a3")]
    theirs = _create(bob, "b1")
    assert _listed(alice) == list(reversed(mine))
    assert _listed(bob) == [theirs]
    # Shared by id, as before: a session that knows an id reads the task.
    assert bob.result("tasks/get", {"taskId": mine[0]})["taskId"] == mine[0]


def test_tasks_created_in_2026_07_28_are_not_listed(transport: HttpTransport) -> None:
    modern = McpClient(transport).result(
        "tools/call",
        {"name": "echo", "arguments": {"text": "m"}},
        capabilities={"extensions": {TASKS_EXTENSION: {}}},
    )
    assert modern["resultType"] == "task"
    legacy = _session(transport)
    assert _listed(legacy) == []
    created = _create(legacy, "l1")
    assert _listed(legacy) == [created]


def test_a_cursor_opens_only_in_its_session(transport: HttpTransport) -> None:
    alice, bob = _session(transport), _session(transport)
    for n in range(3):
        _create(alice, str(n))
    cursor = alice.result("tasks/list")["nextCursor"]
    response = bob.request("tasks/list", {"cursor": cursor})
    assert response.json["error"] == {"code": -32602, "message": "Invalid cursor"}
