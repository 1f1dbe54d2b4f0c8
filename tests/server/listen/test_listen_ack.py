"""The acknowledgement: first on the stream, listing only what the server honours.

For `taskIds`, only the caller's live tasks are honoured: foreign, unknown and malformed ids are
left out silently (a foreign task looks exactly like an unknown one). Without the Tasks opt-in,
asking for `taskIds` is -32021 (HTTP 400); list-changed needs no opt-in.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from typing import Any

import pytest

from mcp_tasks_aws.local.stack import EmbeddedStack
from mcp_tasks_aws.protocol.transport import HttpResponse
from support.listen import (
    ACKNOWLEDGED,
    NO_TASKS_CAPABILITIES,
    SUBSCRIPTION_ID,
    TASK_NOTIFICATION,
    Listened,
    listen,
    task_note,
)
from support.mcp import TASKS_EXTENSION
from support.records import ON_STACK
from support.schemas import MCP, TASKS
from support.tasks import TaskClient, jwt, now_ms

assert_valid = MCP.assert_valid
make_record = ON_STACK.make  # records as the embedded stack's anonymous caller creates them

# Metrics are disabled locally; Powertools warns on each empty flush.
pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")
NewId = Callable[[], str]


def test_discover_advertises_list_changed_when_tasks_are_configured(tasks: TaskClient) -> None:
    result = tasks.result("server/discover", {})
    capabilities = result["capabilities"]
    assert capabilities["tools"] == {"listChanged": True}
    assert capabilities["prompts"] == {"listChanged": True}
    assert TASKS_EXTENSION in capabilities["extensions"]


@pytest.mark.parametrize("rid", ["listen-ack-string-id", 4242])
def test_ack_is_first_and_lists_every_honoured_filter(
    stack: EmbeddedStack, tasks: TaskClient, rid: Any
) -> None:
    task_id = tasks.create("slow_compute", {"seconds": 0.5, "label": "ack"})
    listened = listen(
        stack,
        {
            "taskIds": [task_id, task_id],
            "toolsListChanged": True,
            "promptsListChanged": True,
            # No resource list ever changes here: not honoured, so left out of the ack.
            "resourcesListChanged": True,
        },
        rid=rid,
        # Watching lists keeps the stream open to its time limit: the client closes it.
        until=task_note("completed"),
    )
    listened.check()
    ack = listened.ack
    assert ack["method"] == ACKNOWLEDGED
    assert ack["params"]["notifications"] == {
        "toolsListChanged": True,
        "promptsListChanged": True,
        "taskIds": [task_id],
    }
    assert ack["params"]["_meta"] == {SUBSCRIPTION_ID: rid}
    # The id is echoed with its type (a string stays a string, a number a number).
    assert type(ack["params"]["_meta"][SUBSCRIPTION_ID]) is type(rid)
    # The task completes within the window and is notified on the open stream.
    assert {n["method"] for n in listened.notifications} == {TASK_NOTIFICATION}
    assert listened.notifications[-1]["params"]["status"] == "completed"


def test_ack_leaves_out_what_was_not_asked(
    stack: EmbeddedStack, tasks: TaskClient, new_id: NewId
) -> None:
    task_id = tasks.create("slow_compute", {"seconds": 0, "label": "not-asked"})
    tasks.wait_terminal(task_id)
    rid = new_id()
    listened = listen(
        stack,
        {"taskIds": [task_id], "toolsListChanged": False, "promptsListChanged": False},
        rid=rid,
    )
    listened.check()
    assert listened.acked() == {"taskIds": [task_id]}


def test_foreign_unknown_and_malformed_ids_are_left_out(
    stack: EmbeddedStack, tasks: TaskClient, new_id: NewId
) -> None:
    alice, bob = jwt(f"alice-{secrets.token_hex(4)}"), jwt(f"bob-{secrets.token_hex(4)}")
    mine = tasks.create("slow_compute", {"seconds": 1.0, "label": "alice"}, token=alice)
    foreign = tasks.create("slow_compute", {"seconds": 0.5, "label": "bob"}, token=bob)
    anonymous = tasks.create("slow_compute", {"seconds": 0.5, "label": "anonymous"})
    unknown = secrets.token_hex(16)  # well-formed, never created
    asked = [foreign, unknown, mine, "not-a-task-id", anonymous, ""]

    rid = new_id()
    listened = listen(stack, {"taskIds": asked}, rid=rid, token=alice)
    listened.check()
    assert listened.acked() == {"taskIds": [mine]}
    # Only the honoured task is ever reported on.
    task_notes = listened.of(TASK_NOTIFICATION)
    assert [n["params"]["taskId"] for n in task_notes] == [mine]
    assert task_notes[0]["params"]["status"] == "completed"

    for task_id in (foreign, anonymous):
        tasks.wait_terminal(task_id, token=bob if task_id == foreign else None)


def test_a_listen_on_someone_elses_live_task_honours_nothing_and_closes(
    stack: EmbeddedStack, tasks: TaskClient, new_id: NewId
) -> None:
    owner, stranger = jwt(f"owner-{secrets.token_hex(4)}"), jwt(f"other-{secrets.token_hex(4)}")
    task_id = tasks.create("slow_compute", {"seconds": 1.5, "label": "private"}, token=owner)
    try:
        rid = new_id()
        listened = listen(stack, {"taskIds": [task_id]}, rid=rid, token=stranger)
        listened.check()
        assert listened.acked() == {"taskIds": []}
        # Nothing to watch: the window closes at once, and the live task never shows.
        assert listened.notifications == []
        assert listened.ended_at < 3.0, listened.ended_at
        assert tasks.get(task_id, token=owner)["status"] == "working"
        # An anonymous caller is someone else too.
        anonymous = listen(stack, {"taskIds": [task_id]}, rid=new_id())
        anonymous.check()
        assert anonymous.acked() == {"taskIds": []}
        assert anonymous.notifications == []
    finally:
        tasks.wait_terminal(task_id, token=owner)


def test_an_expired_task_is_left_out(
    stack: EmbeddedStack, tasks: TaskClient, new_id: NewId
) -> None:
    # Still in the table (DynamoDB TTL deletes late), but past its TTL: gone for the protocol.
    created = now_ms() - 60_000
    expired = make_record(created_at=created, updated_at=created, ttl_ms=1_000)
    tasks.store.put_new(expired)
    live = tasks.create("slow_compute", {"seconds": 0, "label": "live"})
    tasks.wait_terminal(live)
    assert tasks.rpc("tasks/get", {"taskId": expired.task_id})["error"]["code"] == -32602

    listened = listen(stack, {"taskIds": [expired.task_id, live]}, rid=new_id())
    listened.check()
    assert listened.acked() == {"taskIds": [live]}
    assert listened.notifications == []


def _assert_missing_tasks_capability(listened: Listened) -> None:
    assert listened.status == 400, (listened.status, listened.body)
    assert listened.headers["content-type"].startswith("application/json")
    error = listened.body
    assert error["id"] == listened.rid
    assert error["error"]["code"] == -32021
    assert TASKS_EXTENSION in error["error"]["data"]["requiredCapabilities"]["extensions"]
    assert_valid(error, "MissingRequiredClientCapabilityError")


@pytest.mark.parametrize(
    "notifications",
    [
        {"taskIds": ["0" * 32]},
        {"taskIds": []},
        {"taskIds": ["0" * 32], "toolsListChanged": True},
    ],
)
def test_task_ids_without_the_tasks_opt_in_is_32021(
    stack: EmbeddedStack, notifications: dict[str, Any], new_id: NewId
) -> None:
    listened = listen(stack, notifications, rid=new_id(), capabilities=NO_TASKS_CAPABILITIES)
    _assert_missing_tasks_capability(listened)


def test_own_task_ids_without_the_opt_in_are_still_32021(
    stack: EmbeddedStack, tasks: TaskClient, new_id: NewId
) -> None:
    # Even the caller's own live task: the opt-in is checked first, nothing leaks.
    task_id = tasks.create("slow_compute", {"seconds": 0, "label": "no-opt-in"})
    listened = listen(
        stack, {"taskIds": [task_id]}, rid=new_id(), capabilities=NO_TASKS_CAPABILITIES
    )
    _assert_missing_tasks_capability(listened)
    tasks.wait_terminal(task_id)


def test_too_many_task_ids_is_invalid_params(stack: EmbeddedStack, new_id: NewId) -> None:
    asked = [secrets.token_hex(16) for _ in range(101)]
    listened = listen(stack, {"taskIds": asked}, rid=new_id())
    assert listened.body is not None, listened.messages
    assert listened.body["error"]["code"] == -32602


# -- in process, a server without a change feed or task backend ---------------------------------
# `client` is the root conftest's McpClient (not imported: other `conftest` modules shadow it).


def _in_process(client: Any, notifications: dict[str, Any], **kwargs: Any) -> HttpResponse:
    return client.request("subscriptions/listen", {"notifications": notifications}, **kwargs)


def test_without_a_change_feed_list_changed_is_neither_advertised_nor_honoured(
    client: Any,
) -> None:
    discovered = client.result("server/discover")
    assert discovered["capabilities"]["tools"] == {}
    response = _in_process(
        client, {"toolsListChanged": True, "promptsListChanged": True}, rid="no-feed"
    )
    assert response.status == 200
    assert response.headers["content-type"] == "text/event-stream"
    body = response.read_all().decode()
    messages = [json.loads(line[5:]) for line in body.split("\n") if line.startswith("data:")]
    assert [m.get("method") for m in messages] == [ACKNOWLEDGED, None]
    assert messages[0]["params"] == {"notifications": {}, "_meta": {SUBSCRIPTION_ID: "no-feed"}}
    assert messages[1] == {
        "jsonrpc": "2.0",
        "id": "no-feed",
        "result": {"resultType": "complete", "_meta": {SUBSCRIPTION_ID: "no-feed"}},
    }
    assert_valid(messages[0], "SubscriptionsAcknowledgedNotification")
    assert_valid(messages[1], "SubscriptionsListenResultResponse")


def test_in_process_task_ids_without_opt_in_is_32021_http_400(client: Any) -> None:
    response = _in_process(client, {"taskIds": ["0" * 32]}, rid=9, capabilities={})
    assert response.status == 400
    error = client.error(response)
    assert error["code"] == -32021
    assert_valid(response.json, "MissingRequiredClientCapabilityError")


def test_a_listen_that_cannot_stream_is_not_acceptable(client: Any) -> None:
    response = _in_process(
        client, {"toolsListChanged": True}, rid=10, headers={"accept": "application/json"}
    )
    assert response.status == 406
    assert response.stream is None


def test_the_tasks_schema_resolves_offline() -> None:
    schema = TASKS.document
    refs = {
        value
        for value in _walk_refs(schema)
        if not value.startswith("#")  # everything else would need the network
    }
    assert refs == set()


def _walk_refs(node: Any) -> list[str]:
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                found.append(value)
            else:
                found += _walk_refs(value)
    elif isinstance(node, list):
        for item in node:
            found += _walk_refs(item)
    return found
