"""`subscriptions/listen`: a request-scoped stream of notifications within a bounded window.

The stream is an iterator of JSON-RPC messages:
1. `notifications/subscriptions/acknowledged` with what the server honours: for `taskIds`,
   only the caller's live tasks (foreign, unknown and expired ids are silently left out);
   `toolsListChanged` / `promptsListChanged` when a change feed is configured;
2. `notifications/tasks` with the full task (what `tasks/get` returns, less `resultType`) each
   time a watched task's status changes, and `notifications/{tools,prompts}/list_changed`;
3. the listen result, the graceful close.
Every notification carries `_meta["io.modelcontextprotocol/subscriptionId"]` = the request id.
No progress or log notifications are ever sent on it.

A window is bounded (Python Lambda functions cannot stream: API Gateway gets the whole window
at once, so it must end well before the integration timeout) and closes early once something
was delivered, or once every watched task is terminal; the client listens again. Changes are
found by polling the store every `poll_ms`: one consistent batch read of the watched tasks and
one read of the list versions per poll.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from mcp_tasks_aws.ports import ChangeFeed
from mcp_tasks_aws.protocol import models as m
from mcp_tasks_aws.protocol.errors import InvalidParams, MissingClientCapability
from mcp_tasks_aws.protocol.jsonrpc import notification_message, result_message
from mcp_tasks_aws.server import Call
from mcp_tasks_aws.tasks.model import TERMINAL, TaskRecord
from mcp_tasks_aws.tasks.service import TaskService

SUBSCRIPTION_ID_KEY = "io.modelcontextprotocol/subscriptionId"
MAX_TASK_IDS = 100
_LIST_NOTIFICATIONS = {
    "tools": "notifications/tools/list_changed",
    "prompts": "notifications/prompts/list_changed",
}


class Listener:
    """Serves `subscriptions/listen` for one server."""

    def __init__(
        self,
        *,
        tasks: TaskService | None,
        feed: ChangeFeed | None,
        has_prompts: bool,
        window_ms: int = 20_000,
        poll_ms: int = 500,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.tasks = tasks
        self.feed = feed
        self.has_prompts = has_prompts
        self.window_ms = window_ms
        self.poll_ms = poll_ms
        self.clock = clock
        self.sleep = sleep

    @property
    def lists_supported(self) -> dict[str, bool]:
        """What `listChanged` the server can honour (advertised in `server/discover`)."""
        return {
            "tools": self.feed is not None,
            "prompts": self.feed is not None and self.has_prompts,
        }

    def open(self, call: Call, params: m.ListenParams) -> Iterator[dict[str, Any]]:
        """Validate now (errors answer the request); return the stream to send."""
        wanted = params.notifications
        task_ids = list(dict.fromkeys(wanted.task_ids or []))
        if wanted.task_ids is not None and not call.capabilities.tasks:
            raise MissingClientCapability({"extensions": {m.TASKS_EXTENSION: {}}})
        if len(task_ids) > MAX_TASK_IDS:
            raise InvalidParams(f"At most {MAX_TASK_IDS} taskIds per subscription")
        lists = [
            kind
            for kind, asked in (
                ("tools", wanted.tools_list_changed),
                ("prompts", wanted.prompts_list_changed),
            )
            if asked and self.lists_supported[kind]
        ]
        watched: dict[str, TaskRecord] = {}
        if task_ids and self.tasks is not None:
            watched = self.tasks.live_records(call.principal, task_ids)
        versions = self.feed.versions() if lists and self.feed is not None else {}
        return self._stream(call, wanted, lists, watched, versions)

    def _stream(
        self,
        call: Call,
        wanted: m.SubscriptionFilter,
        lists: list[str],
        watched: dict[str, TaskRecord],
        versions: dict[str, int],
    ) -> Iterator[dict[str, Any]]:
        subscription = {SUBSCRIPTION_ID_KEY: call.request.id}
        honoured: dict[str, Any] = {}
        if "tools" in lists:
            honoured["toolsListChanged"] = True
        if "prompts" in lists:
            honoured["promptsListChanged"] = True
        if wanted.task_ids is not None:
            honoured["taskIds"] = list(watched)
        yield notification_message(
            "notifications/subscriptions/acknowledged",
            {"notifications": honoured, "_meta": subscription},
        )
        deadline = self.clock() + self.window_ms / 1000
        while lists or not _all_terminal(watched):
            remaining = deadline - self.clock()
            if remaining <= 0:
                break
            self.sleep(min(self.poll_ms / 1000, remaining))
            delivered = False
            if watched and self.tasks is not None:
                now = self.tasks.live_records(call.principal, list(watched))
                for task_id, record in now.items():
                    if record.visible_status != watched[task_id].visible_status:
                        # The full task (an offloaded result read back) only when it is sent.
                        task = self.tasks.detailed(record)
                        yield notification_message(
                            "notifications/tasks", {**task, "_meta": subscription}
                        )
                        delivered = True
                # An expired task is gone: stop watching it.
                watched = now
            if lists and self.feed is not None:
                current = self.feed.versions()
                for kind in lists:
                    if current.get(kind, 0) != versions.get(kind, 0):
                        yield notification_message(
                            _LIST_NOTIFICATIONS[kind], {"_meta": subscription}
                        )
                        delivered = True
                versions = current
            if delivered:
                break
        yield result_message(call.request.id, {"resultType": "complete", "_meta": subscription})


def _all_terminal(watched: dict[str, TaskRecord]) -> bool:
    return all(record.visible_status in TERMINAL for record in watched.values())
