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

A window's bytes are bounded too (`WindowBudget`): API Gateway gets it as one Lambda response
(6 MB at most), and 100 watched tasks with results read back from S3 would not fit, nor fit in
the function's memory. Tasks' payloads (`result`, `inputRequests`, `error`) may take
`WINDOW_PAYLOAD_BYTES` of it, counted as encoded in the response (`encoded_size`); a task whose
payload does not fit in what is left is sent as a plain `Task`, without it (the extension's
`TaskStatusNotificationParams` is `NotificationParams & Task`): the client reads the payload
with `tasks/get`. An offloaded result that cannot fit is not even read back (its size is asked
first). Plain notifications have the rest, up to `WINDOW_BYTES`; once even one of those would
not fit, the window ends there and the client listens again (the next window starts with each
task as it stands, so nothing is lost).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from typing import Any, Final

from mcp_tasks_aws.protocol import models as m
from mcp_tasks_aws.protocol.errors import InvalidParams, MissingClientCapability
from mcp_tasks_aws.protocol.jsonrpc import encoded_size, notification_message, result_message
from mcp_tasks_aws.protocol.names import SUBSCRIPTION_ID_KEY, TASKS_EXTENSION
from mcp_tasks_aws.server.call import Call
from mcp_tasks_aws.server.tasks import detailed_task
from mcp_tasks_aws.tasks.ports import ChangeFeed
from mcp_tasks_aws.tasks.service import TaskService, TaskView
from mcp_tasks_aws.tasks.watch import ListChanged, PollWindow, TaskChanged, Watch

MAX_TASK_IDS: Final = 100
WINDOW_BYTES: Final = 5_000_000
"""The most one window sends, in bytes as encoded in the function's response: under Lambda's
6 MB with room for the headers and the response's own fields."""
WINDOW_PAYLOAD_BYTES: Final = 4_500_000
"""Of `WINDOW_BYTES`, what tasks' payloads may take: enough for the largest task result
(`protocol.jsonrpc.MAX_RESULT_BYTES`), and the rest keeps room for a plain notification of every
watched task."""
PAYLOAD_FIELDS: Final = ("result", "inputRequests", "error")
"""What a `DetailedTask` adds to a `Task`: left out of a notification that does not fit."""
_EVENT_FRAMING: Final = 32
"""Bytes an SSE event adds around its message (`event: message`, `data: `, its blank line)."""


class WindowBudget:
    """What a listen window may still send: all its bytes, and those of tasks' payloads."""

    def __init__(self, window_bytes: int, payload_bytes: int) -> None:
        self.left = window_bytes
        self.payload_left = min(payload_bytes, window_bytes)

    def payload_room(self) -> int:
        """Bytes a notification with its payload may still take."""
        return max(0, min(self.left, self.payload_left))

    def take(self, message: dict[str, Any], *, payload: bool = False) -> bool:
        """Count `message` if it fits (in the payloads' share when `payload`); whether it did."""
        size = encoded_size(message) + _EVENT_FRAMING
        if size > (self.payload_room() if payload else self.left):
            return False
        self.left -= size
        if payload:
            self.payload_left -= size
        return True


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
        window_bytes: int = WINDOW_BYTES,
        payload_bytes: int = WINDOW_PAYLOAD_BYTES,
    ) -> None:
        self.window_bytes = window_bytes
        self.payload_bytes = payload_bytes
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
        budget = WindowBudget(self.window_bytes, self.payload_bytes)
        watch = Watch(
            tasks=self.tasks,
            feed=self.feed,
            owner=call.principal,
            task_ids=task_ids,
            lists=lists,
            window=PollWindow(self.window_ms, self.poll_ms, self.clock, self.sleep),
            keep_open=call.streaming,
            result_room=budget.payload_room,
        )
        return self._stream(call, wanted, watch, budget)

    def _stream(
        self, call: Call, wanted: m.SubscriptionFilter, watch: Watch, budget: WindowBudget
    ) -> Iterator[dict[str, Any]]:
        subscription = {SUBSCRIPTION_ID_KEY: call.request.id}
        honoured: dict[str, Any] = {}
        if "tools" in watch.lists:
            honoured["toolsListChanged"] = True
        if "prompts" in watch.lists:
            honoured["promptsListChanged"] = True
        if wanted.task_ids is not None:
            honoured["taskIds"] = watch.task_ids
        acknowledged = notification_message(
            "notifications/subscriptions/acknowledged",
            {"notifications": honoured, "_meta": subscription},
        )
        budget.take(acknowledged)  # sent whatever it takes (at most 100 ids)
        yield acknowledged
        for change in itertools.chain(watch.snapshot(), watch.changes()):
            if isinstance(change, TaskChanged):
                message = _task_notification(change.view, subscription, budget)
            else:
                assert isinstance(change, ListChanged)
                listed = notification_message(
                    _LIST_NOTIFICATIONS[change.kind], {"_meta": subscription}
                )
                message = listed if budget.take(listed) else None
            if message is None:
                break  # the window is full: it ends here, and the client listens again
            yield message
        yield result_message(call.request.id, {"resultType": "complete", "_meta": subscription})


def _task_notification(
    view: TaskView, subscription: dict[str, Any], budget: WindowBudget
) -> dict[str, Any] | None:
    """The `notifications/tasks` of a view: with its payload if that fits the window, else the
    plain `Task` (the client reads the payload with `tasks/get`); None when neither fits."""
    task = detailed_task(view)
    if any(field in task for field in PAYLOAD_FIELDS):
        whole = notification_message("notifications/tasks", {**task, "_meta": subscription})
        if budget.take(whole, payload=True):
            return whole
    # No payload, withheld (an offloaded result too large to read back now), or out of room.
    plain = {k: v for k, v in task.items() if k not in PAYLOAD_FIELDS}
    bare = notification_message("notifications/tasks", {**plain, "_meta": subscription})
    return bare if budget.take(bare) else None
