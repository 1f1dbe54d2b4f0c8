"""One request being served, what serving it returns, and the protocols the server is extended by.

`Call` is what every handler of the method table receives: the decoded request, the caller's
principal, its validated `_meta`, the era it came in, and what to stream back beside the
answer (notifications, response headers). `Served` is what `McpServer.serve` hands the
transport (it is defined beside the transport, which sits below the server). The plug-in
protocols (`TaskCreator`, `HandleCreator`, `TaskBackend`, `StreamOpener`, `Session`) are how
the task endpoint, the handles, the listener and the 2025-11-25 side join the table without
the server importing them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from mcp_tasks_aws.protocol import models as m
from mcp_tasks_aws.protocol.era import Era
from mcp_tasks_aws.protocol.jsonrpc import Request, encoded_size, notification_message
from mcp_tasks_aws.protocol.transport import Served
from mcp_tasks_aws.tools.registry import ToolSpec

__all__ = [
    "Call",
    "HandleCreator",
    "Handler",
    "Served",
    "Session",
    "StreamOpener",
    "TaskBackend",
    "TaskCreator",
]

QUEUED_NOTIFICATION_BYTES: Final = 1_000_000
"""The most the notifications queued with a buffered answer take (as `encoded_size` counts):
they travel in one Lambda response with the result (at most `MAX_RESULT_BYTES`), which must
stay under Lambda's 6 MB. Progress and log notifications are advice: past it they are left out
(a progressToken or a message of a megabyte, repeated in each, would take the response over)."""
LOG_LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]


class Session(Protocol):
    """A 2025-11-25 call's session context (`server.legacy.questions.Resumable`)."""

    @property
    def principal(self) -> str: ...

    @property
    def log_level(self) -> str | None: ...


@dataclass
class Call:
    """One request being served: who asked, what they declared, what to stream back."""

    request: Request
    principal: str
    meta: m.RequestMeta
    notifications: list[dict[str, Any]] = field(default_factory=list)
    era: Era = Era.MODERN
    session: Session | None = None
    """A legacy call's session context; None in 2026-07-28 (and for `initialize`)."""
    response_headers: dict[str, str] = field(default_factory=dict)
    """HTTP headers the answer must carry (the `Mcp-Session-Id` an `initialize` issues)."""
    deadline: float | None = None
    """`time.monotonic()` by which an inline run must end (from the function's time left)."""
    streaming: bool = False
    """Whether a streamed answer reaches the client as it is made (else whole, at its end)."""
    granted_scopes: frozenset[str] | None = None
    """The scopes the caller's verified token grants (None: no token vouches for any, and
    tools' scopes are not enforced); `InlineRunner.run_call` checks a tool's against them."""
    emit: Callable[[dict[str, Any]], None] | None = None
    """Where a notification goes the moment it is made, when the answer streams live
    (`server.live`); None: it waits in `notifications` and travels with the answer."""

    _queued_bytes: int = field(default=0, init=False, repr=False)

    def notify(self, message: dict[str, Any]) -> None:
        """Send `message` now if the answer streams live, else queue it with the answer, while
        the queued ones stay within `QUEUED_NOTIFICATION_BYTES` (beyond, it is left out)."""
        if self.emit is not None:
            self.emit(message)
            return
        size = encoded_size(message)
        if self._queued_bytes + size > QUEUED_NOTIFICATION_BYTES:
            return
        self._queued_bytes += size
        self.notifications.append(message)

    @property
    def capabilities(self) -> m.ClientCapabilities:
        return self.meta.client_capabilities

    def log(self, level: str, data: Any) -> None:
        """Queue a `notifications/message` if the request asked for logs at this level."""
        wanted = self.meta.log_level
        if wanted not in LOG_LEVELS or level not in LOG_LEVELS:
            return
        if LOG_LEVELS.index(level) >= LOG_LEVELS.index(wanted):
            self.notify(
                notification_message("notifications/message", {"level": level, "data": data})
            )

    def progress_sender(self) -> Callable[[float, float | None, str | None], None] | None:
        """What `ctx.report(..., progress=...)` calls inline: None without a progressToken."""
        token = self.meta.progress_token
        if token is None:
            return None
        from mcp_tasks_aws.protocol.progress import ProgressThrottle  # only requests that want it

        throttle = ProgressThrottle()

        def send(progress: float, total: float | None, message: str | None) -> None:
            if not throttle.admit(progress, total):
                return
            params: dict[str, Any] = {"progressToken": token, "progress": progress}
            if total is not None:
                params["total"] = total
            if message:
                params["message"] = message
            self.notify(notification_message("notifications/progress", params))

        return send


class TaskCreator(Protocol):
    """Makes a call a task, and says so in its era's shape."""

    def create(
        self,
        call: Call,
        spec: ToolSpec,
        params: m.CallToolParams,
        journal: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Durably create a task for this call and start it; return the CreateTaskResult.

        `journal` holds answers gathered inline before the task existed (a tool's prelude).
        """
        ...


class HandleCreator(TaskCreator, Protocol):
    """Makes a call of a client that does not speak tasks a task, answered with a handle: an
    ordinary CallToolResult naming the task (`server.handles`)."""

    def offered_to(self, call: Call, spec: ToolSpec) -> bool:
        """Whether this call of `spec` (by a client that did not opt in) gets a handle."""
        ...


class TaskBackend(TaskCreator, Protocol):
    """What the server needs from the durable-task domain (absent: no Tasks extension)."""

    def methods(self) -> dict[str, tuple[type[m.RequestParams], Callable[[Call, Any], Any]]]:
        """The `tasks/*` methods it serves."""
        ...


Handler = Callable[[Call, Any], Any]
"""A method: returns a result object, or an iterator of whole messages (a stream)."""


class StreamOpener(Protocol):
    """What serves `subscriptions/listen` (see `mcp_tasks_aws.server.listen`)."""

    @property
    def lists_supported(self) -> dict[str, bool]: ...

    def open(self, call: Call, params: m.ListenParams) -> Iterator[dict[str, Any]]: ...
