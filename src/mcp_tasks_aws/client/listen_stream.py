"""Waiting by listening: `subscriptions/listen` windows filtered to one task, and when not to.

This module owns the client's side of the listen stream for tasks: how a window is sent, how
the `notifications/tasks` it carries reach the wait that asked for them, and whether a session
can listen at all. What a notification or a window's end means to a wait is in
`listen_wait`; the rest of the wait loop is in `waiter`.

**How a window is sent: through the SDK session, not a raw POST.** The SDK's own
`Client.listen()` / `mcp.client.subscriptions.listen` builds its filter from four fixed
keywords (tools, prompts, resources, resource URIs) and only surfaces list-change events, so it
can neither ask for `taskIds` nor deliver `notifications/tasks`. Two public SDK hooks can:

- `ClientSession.send_request` sends any request model. `mcp_types.SubscriptionFilter` allows
  extra keys ("extensions merge additional keys, e.g. `taskIds`"), so the SDK's own
  `SubscriptionsListenRequest` carries `{"taskIds": [id]}`. The session stamps it like every
  other request (`params._meta` with protocolVersion and clientCapabilities, which include
  this extension; `Mcp-Method` and `MCP-Protocol-Version` headers), and its transport sends
  it with the client's own HTTP client, auth and headers, whatever the `Client` was built from
  (a URL, `connect()`'s bearer-token client, a custom transport). The transport reads the
  `text/event-stream` answer, routes the notifications, and returns the final
  `{"resultType": "complete"}` as the request's result; it turns a JSON-RPC error body (404
  with -32601 for an unknown method), an HTTP error, a malformed event or a stream that ends
  without a response into an `MCPError`, and the request's timeout into one too.
- `ClientExtension.notifications()` binds a vendor notification method: the session validates
  `notifications/tasks` (not core vocabulary) into `TaskNotificationParams` and hands each to
  `TaskListener`, which routes it by task id to the waits subscribed to that task.

Issuing the POST ourselves would have needed the SDK's HTTP client, which `Client("http://…")`
keeps private, and would have bypassed the session's stamping and auth; the SDK path has none
of those problems. Its one cost: the session dispatches a notification on its own task, so a
notification can reach the binding a moment after the window's response. The wait never
depends on that order (see `listen_wait`: one `tasks/get` per window, and late notifications
are handled in the next window, older ones than what was seen being ignored).

**When not to listen** (`TaskListener.available`): the connection is not 2026-07-28 (listen
does not exist before it); the server's capabilities do not list the Tasks extension;
or a listen on this session answered -32601 (method not found): `TaskListener` remembers that
per session, so later waits on the same client poll without asking again.
"""

from __future__ import annotations

import logging
import math
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final, Generic, TypeVar

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.extension import NotificationBinding
from mcp.client.session import ClientSession
from mcp_types import (
    SubscriptionFilter,
    SubscriptionsListenRequest,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_tasks_aws.client.wire import TASKS_EXTENSION, TaskSnapshot
from mcp_tasks_aws.protocol.names import SUBSCRIPTION_ID_KEY as SUBSCRIPTION_ID_KEY

__all__ = [
    "SUBSCRIPTION_ID_KEY",
    "TASK_NOTIFICATION",
    "TaskListener",
    "TaskNotificationParams",
    "listen_request",
]

logger = logging.getLogger(__name__)

TASK_NOTIFICATION: Final = "notifications/tasks"

T = TypeVar("T")


class TaskNotificationParams(TaskSnapshot):
    """A `notifications/tasks` payload: the task as `tasks/get` returns it, less `resultType`."""

    result_type: str | None = None

    @property
    def subscription_id(self) -> Any:
        """The id of the listen request that delivered it."""
        return (self.meta or {}).get(SUBSCRIPTION_ID_KEY)


def listen_request(task_ids: list[str]) -> SubscriptionsListenRequest:
    """A `subscriptions/listen` request for these tasks' status changes only."""
    notifications = SubscriptionFilter.model_validate({"taskIds": task_ids})
    return SubscriptionsListenRequest(
        params=SubscriptionsListenRequestParams(notifications=notifications)
    )


class Inbox(Generic[T]):
    """One subscription's queue: the listener's notifications, plus what its owner puts there."""

    def __init__(self) -> None:
        send, receive = anyio.create_memory_object_stream[T](math.inf)
        self.send: MemoryObjectSendStream[T] = send
        self.receive: MemoryObjectReceiveStream[T] = receive

    def put(self, item: T) -> None:
        self.send.send_nowait(item)  # unbounded: never blocks

    def close(self) -> None:
        self.send.close()
        self.receive.close()


class TaskListener:
    """Routes `notifications/tasks` to waits by task id; knows which sessions can listen.

    One per `TasksExtension` (its `binding()` is the extension's notification binding), shared
    by every wait of the clients built with that extension.
    """

    def __init__(self) -> None:
        self._inboxes: dict[str, list[Inbox[Any]]] = {}
        self._unsupported: weakref.WeakSet[Any] = weakref.WeakSet()

    def binding(self) -> NotificationBinding[TaskNotificationParams]:
        return NotificationBinding(
            method=TASK_NOTIFICATION, params_type=TaskNotificationParams, handler=self.deliver
        )

    async def deliver(self, params: TaskNotificationParams) -> None:
        """Hand a notification to every wait subscribed to its task (others are dropped)."""
        inboxes = self._inboxes.get(params.task_id)
        if not inboxes:
            logger.debug("notification for task %s, which no wait follows", params.task_id)
            return
        for inbox in inboxes:
            inbox.put(params)

    @contextmanager
    def subscribe(self, task_id: str) -> Iterator[Inbox[Any]]:
        """An inbox receiving this task's notifications while the block runs."""
        inbox: Inbox[Any] = Inbox()
        self._inboxes.setdefault(task_id, []).append(inbox)
        try:
            yield inbox
        finally:
            inboxes = self._inboxes.get(task_id, [])
            if inbox in inboxes:
                inboxes.remove(inbox)
            if not inboxes:
                self._inboxes.pop(task_id, None)
            inbox.close()

    def available(self, session: ClientSession) -> bool:
        """Whether waits on `session` should listen (see the module's docstring)."""
        if session in self._unsupported:
            return False
        if session.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return False
        capabilities = session.server_capabilities
        extensions = capabilities.extensions if capabilities is not None else None
        return bool(extensions) and TASKS_EXTENSION in (extensions or {})

    def mark_unsupported(self, session: ClientSession) -> None:
        """The server answered -32601 to a listen: waits on this session poll from now on."""
        self._unsupported.add(session)

    async def open_window(
        self, session: ClientSession, task_id: str, *, timeout: float | None
    ) -> SubscriptionsListenResult:
        """One listen window on `task_id`; returns when the server closes it gracefully.

        Its notifications reach the subscribed inboxes meanwhile (through `deliver`).

        Raises:
            MCPError: The server answered an error (-32601: no listen), the stream failed or
                ended without a response, or `timeout` elapsed.
        """
        return await session.send_request(
            listen_request([task_id]), SubscriptionsListenResult, timeout
        )
