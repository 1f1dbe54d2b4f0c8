"""The Tasks extension for the official `mcp` SDK client: tasks made invisible to `call_tool`.

`TasksExtension` plugs into the SDK's client-extension surface (`mcp.client.extension`):

- its `identifier` (`io.modelcontextprotocol/tasks`) is advertised by the SDK in the client
  capabilities the session stamps on *every* request's `_meta`, which is how the spec wants the
  extension declared (per request, not once);
- its one `ResultClaim` claims `resultType: "task"` on `tools/call`, so the SDK parses a
  `CreateTaskResult` and hands it to `_resolve`, which waits for the task (see `waiter`) and
  returns the final `CallToolResult`. `Client.call_tool` therefore returns the same thing whether
  the server answered inline or with a task, after the SDK has already driven any
  multi-round-trip (`input_required`) exchange that came before the task existed.

Waiting listens when it can: the extension's one `NotificationBinding` (`notifications/tasks`)
feeds a `TaskListener`, and each wait sends `subscriptions/listen` windows filtered to its task
through the session (see `listening` and `waiter`), falling back to polling `tasks/get` when
the server cannot listen. `wait_mode="poll"` always polls.

Everything else comes from the SDK unchanged: the transport, the session, and the sampling /
elicitation / roots callbacks given to `Client(...)`, which also answer the task's
`inputRequests`.

Two narrow additions to that surface, both public SDK API:

- the `tasks/*` requests go through `ClientSession.send_request` with request models whose
  `name_param` is `taskId` (the SDK's hook for the `Mcp-Name` routing header);
- `Tasks.start` (see `handle`) needs the task handle instead of the final result; it sets a
  context variable for the duration of its `Client.call_tool`, and the claim resolver, which
  the SDK awaits in the caller's task, then stops with `TaskHandoff` carrying the
  `CreateTaskResult` instead of waiting. That keeps the SDK's own retry logic (multi-round-trip
  input, the `HEADER_MISMATCH` re-list) on the path that starts a task.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from mcp.client.extension import ClaimContext, ClientExtension, NotificationBinding, ResultClaim
from mcp_types import CallToolResult

from mcp_tasks_aws.client.listen_stream import TaskListener
from mcp_tasks_aws.client.polling import PollPolicy
from mcp_tasks_aws.client.waiter import StatusCallback, WaitMode, WaitOptions, wait_for_task
from mcp_tasks_aws.client.wire import TASKS_EXTENSION, CreateTaskResult

__all__ = ["TaskCreatedCallback", "TaskHandoff", "TasksExtension"]

TaskCreatedCallback = Callable[[CreateTaskResult, str], Awaitable[None] | None]
"""Called with the `CreateTaskResult` and the tool name as soon as a call becomes a task."""

_HANDOFF: ContextVar[bool] = ContextVar("mcp_tasks_aws_client_handoff", default=False)


class TaskHandoff(Exception):
    """Raised by the claim resolver inside `handoff()`: the call became this task."""

    def __init__(self, created: CreateTaskResult, tool_name: str) -> None:
        super().__init__(created.task_id)
        self.created = created
        self.tool_name = tool_name


@contextmanager
def handoff() -> Iterator[None]:
    """Within this block, a `tools/call` that becomes a task raises `TaskHandoff`."""
    token = _HANDOFF.set(True)
    try:
        yield
    finally:
        _HANDOFF.reset(token)


class TasksExtension(ClientExtension):
    """Client side of `io.modelcontextprotocol/tasks`; pass it to `Client(extensions=[...])`.

    Args:
        policy: Polling cadence bounds (floor, cap, jitter, growth without a hint).
        on_status: Called on each change of a task's status or statusMessage.
        on_task_created: Called once a call became a task (persist the id to resume later).
        cancel_if_abandoned: Send `tasks/cancel` when the awaiting `call_tool` is cancelled or
            otherwise stops waiting before the task ends (default True).
        request_timeout: Timeout of each `tasks/*` request; by default the call's
            `read_timeout_seconds`, else the client's.
        cancel_timeout: Bound on that abandoning `tasks/cancel`.
        wait_mode: `"listen"` (default): wait by listening (`subscriptions/listen` windows)
            when the server supports it, polling otherwise or when a window fails;
            `"poll"`: always poll `tasks/get`.
        listen_timeout: Bound on one listen window; one that takes longer fails and the wait
            polls (the server's windows last 20 s at most when deployed).
    """

    identifier = TASKS_EXTENSION

    def __init__(
        self,
        *,
        policy: PollPolicy | None = None,
        on_status: StatusCallback | None = None,
        on_task_created: TaskCreatedCallback | None = None,
        cancel_if_abandoned: bool = True,
        request_timeout: float | None = None,
        cancel_timeout: float = 5.0,
        wait_mode: WaitMode = "listen",
        listen_timeout: float = 60.0,
    ) -> None:
        if wait_mode not in ("listen", "poll"):
            raise ValueError(f"wait_mode must be 'listen' or 'poll', not {wait_mode!r}")
        self.policy = policy or PollPolicy()
        self.on_status = on_status
        self.on_task_created = on_task_created
        self.cancel_if_abandoned = cancel_if_abandoned
        self.request_timeout = request_timeout
        self.cancel_timeout = cancel_timeout
        self.wait_mode: WaitMode = wait_mode
        self.listen_timeout = listen_timeout
        self.listener = TaskListener()
        """Routes this extension's `notifications/tasks` to waits; remembers sessions that
        cannot listen."""

    def settings(self) -> dict[str, Any]:
        return {}  # the spec defines no settings: an empty object declares support

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return (
            ResultClaim[CreateTaskResult](
                result_type="task", model=CreateTaskResult, resolve=self._resolve
            ),
        )

    def notifications(self) -> Sequence[NotificationBinding[Any]]:
        return (self.listener.binding(),)

    def wait_options(self, **overrides: Any) -> WaitOptions:
        """This extension's defaults as `WaitOptions`, with `overrides` applied."""
        values: dict[str, Any] = {
            "policy": self.policy,
            "on_status": self.on_status,
            "cancel_if_abandoned": self.cancel_if_abandoned,
            "request_timeout": self.request_timeout,
            "cancel_timeout": self.cancel_timeout,
            "wait_mode": self.wait_mode,
            "listener": self.listener,
            "listen_timeout": self.listen_timeout,
        }
        values.update({key: value for key, value in overrides.items() if value is not None})
        return WaitOptions(**values)

    async def _resolve(self, created: CreateTaskResult, ctx: ClaimContext) -> CallToolResult:
        if self.on_task_created is not None:
            outcome = self.on_task_created(created, ctx.tool_name)
            if inspect.isawaitable(outcome):
                await outcome
        if _HANDOFF.get():
            raise TaskHandoff(created, ctx.tool_name)
        options = self.wait_options(request_timeout=ctx.read_timeout_seconds)
        return await wait_for_task(
            ctx.session,
            created.task_id,
            options=options,
            tool_name=ctx.tool_name,
            initial=created,
        )
