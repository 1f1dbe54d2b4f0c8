"""`subscriptions/listen` on the wire: a request-scoped stream of notifications in a bounded window.

The stream is an iterator of JSON-RPC messages:
1. `notifications/subscriptions/acknowledged` with what the server honours: for `taskIds`,
   only the caller's live tasks; `toolsListChanged` / `promptsListChanged` when a change feed
   is configured;
2. `notifications/tasks` with the full task (what `tasks/get` returns, less `resultType`):
   first each watched task as it stands, then again each time it changes (any write: status,
   statusMessage, a new round of input); and `notifications/{tools,prompts}/list_changed`;
3. the listen result, the graceful close.
Every notification carries `_meta["io.modelcontextprotocol/subscriptionId"]` = the request id.
No progress or log notifications are ever sent on it.

What is watched, and when a window ends, is `tasks.watch`. A window is bounded: Python Lambda
functions cannot stream, so API Gateway gets the whole window at once and it must end well
before the integration timeout; the client listens again.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from typing import Any, Final

from mcp_tasks_aws.protocol import models as m
from mcp_tasks_aws.protocol.errors import InvalidParams, MissingClientCapability
from mcp_tasks_aws.protocol.jsonrpc import notification_message, result_message
from mcp_tasks_aws.protocol.names import SUBSCRIPTION_ID_KEY, TASKS_EXTENSION
from mcp_tasks_aws.server.call import Call
from mcp_tasks_aws.server.tasks import detailed_task
from mcp_tasks_aws.tasks.ports import ChangeFeed
from mcp_tasks_aws.tasks.service import TaskService
from mcp_tasks_aws.tasks.watch import ListChanged, PollWindow, TaskChanged, Watch

MAX_TASK_IDS: Final = 100
_LIST_NOTIFICATIONS: Final = {
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
            raise MissingClientCapability({"extensions": {TASKS_EXTENSION: {}}})
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
        watch = Watch(
            tasks=self.tasks,
            feed=self.feed,
            owner=call.principal,
            task_ids=task_ids,
            lists=lists,
            window=PollWindow(self.window_ms, self.poll_ms, self.clock, self.sleep),
            keep_open=call.streaming,
        )
        return self._stream(call, wanted, watch)

    def _stream(
        self, call: Call, wanted: m.SubscriptionFilter, watch: Watch
    ) -> Iterator[dict[str, Any]]:
        subscription = {SUBSCRIPTION_ID_KEY: call.request.id}
        honoured: dict[str, Any] = {}
        if "tools" in watch.lists:
            honoured["toolsListChanged"] = True
        if "prompts" in watch.lists:
            honoured["promptsListChanged"] = True
        if wanted.task_ids is not None:
            honoured["taskIds"] = watch.task_ids
        yield notification_message(
            "notifications/subscriptions/acknowledged",
            {"notifications": honoured, "_meta": subscription},
        )
        for change in itertools.chain(watch.snapshot(), watch.changes()):
            if isinstance(change, TaskChanged):
                task = detailed_task(change.view)
                yield notification_message("notifications/tasks", {**task, "_meta": subscription})
            elif isinstance(change, ListChanged):
                yield notification_message(
                    _LIST_NOTIFICATIONS[change.kind], {"_meta": subscription}
                )
        yield result_message(call.request.id, {"resultType": "complete", "_meta": subscription})
