"""Driving one task to its end over an SDK `ClientSession`: the `tasks/*` calls and the wait loop.

This module owns what happens between a task handle and its final `CallToolResult`:

- `get_task`, `update_task`, `cancel_task`: one request each, sent with
  `ClientSession.send_request` (so the session stamps the 2026-07-28 envelope, the per-request
  capabilities with the extension's identifier, and the `Mcp-Method` / `Mcp-Name` headers);
- `wait_for_task`: follows the task until it ends, by listening (`subscriptions/listen`
  windows, see below) when it can, else by polling `tasks/get` at the cadence of
  `polling.Backoff`. Either way it reports status changes to a callback; answers
  `inputRequests` through the session's own sampling / elicitation / roots callbacks
  (`ClientSession.dispatch_input_request`, the same table the SDK's multi-round-trip driver
  uses), each key once per wait even though every poll and notification repeats the
  outstanding ones, and sends the answers with `tasks/update`; keeps following the task while
  an answer is being prepared (a human filling a form does not stop status updates); and maps
  the terminal state to a result or a typed error (see `errors`).

If the wait ends without a terminal state (the awaiting coroutine is cancelled, an input
request cannot be answered, polling fails) and `cancel_if_abandoned` is set, a `tasks/cancel`
is sent, shielded from the cancellation and bounded by `cancel_timeout`.

**Listening** (`wait_mode="listen"`, the default, with the `TaskListener` of a
`TasksExtension`): the wait follows the task through `subscriptions/listen` windows, each
with one `tasks/get` that closes the gap between two windows (see `listen_wait` for the
windows and why nothing falls between them, `listening` for how one is sent). A notified state
is handled here exactly as a polled one (`_Wait.observe`). A notification can be handled after
a newer `tasks/get` answer, so any state older (`lastUpdatedAt`) than one already seen is
ignored: the status never goes backwards.

The wait falls back to polling, for the rest of the wait, when: the wait mode is `"poll"`; no
listener was given; the listener says the session cannot listen (an older protocol version,
a server that does not advertise the Tasks extension, or one that answered -32601 before);
a listen answers -32601 (remembered for the session); or a window fails any other way (an
error answer, an HTTP error, a malformed or truncated stream, `listen_timeout`).
"""

from __future__ import annotations

import inspect
import logging
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, TypeAlias

import anyio
import anyio.abc
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    REQUEST_TIMEOUT,
    CallToolResult,
    ErrorData,
    InputResponse,
)
from pydantic import BaseModel

from mcp_tasks_aws.client.errors import (
    TaskCancelledError,
    TaskFailedError,
    TaskInputError,
    TaskNotFoundError,
)
from mcp_tasks_aws.client.listen_stream import TaskListener
from mcp_tasks_aws.client.listen_wait import ListenWindows
from mcp_tasks_aws.client.polling import PollPolicy
from mcp_tasks_aws.client.wire import (
    CancelTaskRequest,
    GetTaskRequest,
    TaskAck,
    TaskFields,
    TaskIdParams,
    TaskSnapshot,
    TaskStatus,
    UpdateTaskParams,
    UpdateTaskRequest,
    parse_input_request,
)
from mcp_tasks_aws.protocol.names import parse_timestamp

__all__ = [
    "StatusCallback",
    "TaskProgress",
    "WaitMode",
    "WaitOptions",
    "cancel_task",
    "get_task",
    "update_task",
    "wait_for_task",
]

logger = logging.getLogger(__name__)

TRANSIENT_CODES = frozenset({CONNECTION_CLOSED, REQUEST_TIMEOUT, INTERNAL_ERROR})
"""Poll failures worth retrying: the task lives on the server whatever happened to one poll."""


@dataclass(frozen=True, kw_only=True)
class TaskProgress:
    """A status change seen while waiting, as given to the `on_status` callback."""

    task_id: str
    tool_name: str | None
    status: TaskStatus
    status_message: str | None
    elapsed: float
    """Seconds since this wait began."""
    task: TaskFields
    """The whole task as last seen (a `CreateTaskResult` or a `TaskSnapshot`)."""


StatusCallback = Callable[[TaskProgress], Awaitable[None] | None]

WaitMode: TypeAlias = Literal["listen", "poll"]
"""`"listen"`: listen when the server can, else poll (the default); `"poll"`: always poll."""


@dataclass(frozen=True, kw_only=True)
class WaitOptions:
    """How to wait for a task."""

    policy: PollPolicy = field(default_factory=PollPolicy)
    on_status: StatusCallback | None = None
    """Called on each change of status or statusMessage (sync or async)."""
    cancel_if_abandoned: bool = True
    """Send `tasks/cancel` when the wait ends without a terminal state."""
    request_timeout: float | None = None
    """Timeout of each `tasks/*` request (None: the session's read timeout)."""
    cancel_timeout: float = 5.0
    """Bound on the `tasks/cancel` sent when abandoning."""
    max_transient_errors: int = 5
    """Consecutive transient poll failures tolerated before the wait fails."""
    rng: random.Random | None = None
    """Jitter source (tests pass a seeded one)."""
    wait_mode: WaitMode = "listen"
    """Listen when possible (falling back to polling), or always poll."""
    listener: TaskListener | None = None
    """Where notifications arrive (a `TasksExtension`'s); without one, the wait polls."""
    listen_timeout: float = 60.0
    """Bound on one listen window (the server's window, 20 s deployed, plus its delivery);
    a window still open after it counts as failed and the wait polls."""
    listen_check_after: float = 1.0
    """Seconds into a window at which its one `tasks/get` is sent (see `listen_wait`); a
    window that brought no news is followed by the polling delay."""


def _dump(value: InputResponse | BaseModel | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(value, BaseModel):
        return value.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dict(value)


async def get_task(
    session: ClientSession, task_id: str, *, timeout: float | None = None
) -> TaskSnapshot:
    """`tasks/get`; an unknown, expired or foreign task raises `TaskNotFoundError`."""
    try:
        return await session.send_request(
            GetTaskRequest(params=TaskIdParams(task_id=task_id)), TaskSnapshot, timeout
        )
    except MCPError as exc:
        if exc.code == INVALID_PARAMS:
            raise TaskNotFoundError(task_id, exc.error) from exc
        raise


async def update_task(
    session: ClientSession,
    task_id: str,
    responses: Mapping[str, InputResponse | BaseModel | Mapping[str, Any]],
    *,
    timeout: float | None = None,
) -> None:
    """`tasks/update` with answers keyed like the task's `inputRequests`."""
    params = UpdateTaskParams(
        task_id=task_id, input_responses={key: _dump(value) for key, value in responses.items()}
    )
    try:
        await session.send_request(UpdateTaskRequest(params=params), TaskAck, timeout)
    except MCPError as exc:
        if exc.code == INVALID_PARAMS:
            raise TaskNotFoundError(task_id, exc.error) from exc
        raise


async def cancel_task(
    session: ClientSession, task_id: str, *, timeout: float | None = None
) -> None:
    """`tasks/cancel`: a request; the task may still end otherwise (cancellation is cooperative)."""
    try:
        await session.send_request(
            CancelTaskRequest(params=TaskIdParams(task_id=task_id)), TaskAck, timeout
        )
    except MCPError as exc:
        if exc.code == INVALID_PARAMS:
            raise TaskNotFoundError(task_id, exc.error) from exc
        raise


def result_of(snapshot: TaskSnapshot) -> CallToolResult:
    """The final result of a terminal snapshot, or the typed error it ended with."""
    if snapshot.status == "failed":
        raise TaskFailedError(snapshot.task_id, snapshot.error_data(), snapshot)
    if snapshot.status == "cancelled":
        raise TaskCancelledError(snapshot.task_id, snapshot)
    return snapshot.call_tool_result()


def _parse_time(value: str) -> datetime | None:
    return parse_timestamp(value)


class _Wait:
    """The state of one `wait_for_task` call."""

    def __init__(
        self,
        session: ClientSession,
        task_id: str,
        options: WaitOptions,
        tool_name: str | None,
        answered: set[str],
    ) -> None:
        self.session = session
        self.task_id = task_id
        self.options = options
        self.tool_name = tool_name
        self.answered = answered
        self.backoff = options.policy.backoff(options.rng)
        self.started = anyio.current_time()
        self.last_seen: tuple[str, str | None] | None = None
        self.latest: datetime | None = None
        self.hint: int | None = None
        self.failure: BaseException | None = None
        self.wake = anyio.Event()

    async def report(self, task: TaskFields) -> None:
        seen = (task.status, task.status_message)
        if seen == self.last_seen or self.options.on_status is None:
            self.last_seen = seen
            return
        self.last_seen = seen
        progress = TaskProgress(
            task_id=self.task_id,
            tool_name=self.tool_name,
            status=task.status,
            status_message=task.status_message,
            elapsed=anyio.current_time() - self.started,
            task=task,
        )
        outcome = self.options.on_status(progress)
        if inspect.isawaitable(outcome):
            await outcome

    def stale(self, task: TaskFields) -> bool:
        """Whether `task` is older than a state already seen (a notification handled late)."""
        updated = _parse_time(task.last_updated_at)
        if updated is None:
            return False
        if updated.tzinfo is None:
            updated = updated.replace(tzinfo=UTC)
        if self.latest is not None and updated < self.latest and not task.is_terminal:
            return True
        self.latest = updated if self.latest is None else max(updated, self.latest)
        return False

    async def observe(self, snapshot: TaskSnapshot, tg: anyio.abc.TaskGroup) -> bool:
        """Handle one state of the task, polled or notified; True when it is terminal."""
        if self.stale(snapshot):
            return False
        self.hint = snapshot.poll_interval_ms
        await self.report(snapshot)
        if snapshot.is_terminal:
            return True
        if snapshot.status == "input_required" and snapshot.input_requests:
            fresh = {
                key: raw for key, raw in snapshot.input_requests.items() if key not in self.answered
            }
            if fresh:
                self.answered.update(fresh)
                tg.start_soon(self.answer, fresh, tg)
        return False

    async def poll(self) -> TaskSnapshot:
        failures = 0
        while True:
            try:
                return await get_task(
                    self.session, self.task_id, timeout=self.options.request_timeout
                )
            except TaskNotFoundError:
                raise
            except MCPError as exc:
                if exc.code not in TRANSIENT_CODES or failures >= self.options.max_transient_errors:
                    raise
                failures += 1
                logger.warning("tasks/get for %s failed (%s); retrying", self.task_id, exc)
                await anyio.sleep(self.backoff.next_delay(None))

    async def sleep(self, seconds: float) -> None:
        """Sleep until the next poll, or until an answer was sent (the state changed then)."""
        with anyio.move_on_after(seconds):
            await self.wake.wait()
        self.wake = anyio.Event()

    async def run(self, initial: TaskFields | None) -> TaskSnapshot | None:
        """The terminal snapshot, or None with `self.failure` set.

        Failures are caught inside the task group and re-raised by the caller, so they reach
        it as themselves rather than wrapped in an `ExceptionGroup`; cancellation from outside
        still propagates as cancellation.
        """
        snapshot: TaskSnapshot | None = None
        async with anyio.create_task_group() as tg:
            try:
                snapshot = await self.loop(tg, initial)
            except Exception as exc:
                if self.failure is None:
                    self.failure = exc
            tg.cancel_scope.cancel()
        return snapshot if self.failure is None else None

    async def loop(self, tg: anyio.abc.TaskGroup, initial: TaskFields | None) -> TaskSnapshot:
        delay = 0.0
        if initial is not None:
            self.stale(initial)  # its lastUpdatedAt is the oldest state worth reporting
            self.hint = initial.poll_interval_ms
            await self.report(initial)
            if not initial.is_terminal:  # a terminal seed carries no payload: fetch it now
                delay = self.backoff.next_delay(initial.poll_interval_ms)
        listener = self.listener()
        if listener is not None and (initial is None or not initial.is_terminal):
            if initial is None:  # re-attaching: show where the task is before the first window
                snapshot = await self.poll()
                if await self.observe(snapshot, tg):
                    return snapshot
            terminal = await self.windows(listener, tg).follow()
            if terminal is not None:
                return terminal
            delay = 0.0  # polling from here on: start with a fresh look
        while True:
            if delay:
                await self.sleep(delay)
            snapshot = await self.poll()
            if await self.observe(snapshot, tg):
                return snapshot
            delay = self.backoff.next_delay(snapshot.poll_interval_ms)

    # -- listening ----------------------------------------------------------------------------

    def listener(self) -> TaskListener | None:
        """The listener to wait with, or None to poll."""
        listener = self.options.listener
        if self.options.wait_mode != "listen" or listener is None:
            return None
        return listener if listener.available(self.session) else None

    def windows(self, listener: TaskListener, tg: anyio.abc.TaskGroup) -> ListenWindows:
        """This wait's listen windows, handing what they see to `observe`."""

        async def observe(snapshot: TaskSnapshot) -> bool:
            return await self.observe(snapshot, tg)

        async def pause() -> None:
            await self.sleep(self.backoff.next_delay(self.hint))

        return ListenWindows(
            session=self.session,
            task_id=self.task_id,
            listener=listener,
            observe=observe,
            check=self.poll,
            pause=pause,
            listen_timeout=self.options.listen_timeout,
            check_after=self.options.listen_check_after,
        )

    # -- answering input requests -------------------------------------------------------------

    async def answer(self, batch: dict[str, dict[str, Any]], outer: anyio.abc.TaskGroup) -> None:
        responses: dict[str, dict[str, Any]] = {}

        async def one(key: str, raw: dict[str, Any], group: anyio.abc.TaskGroup) -> None:
            try:
                responses[key] = await self.answer_one(key, raw)
            except Exception as exc:
                if self.failure is None:
                    self.failure = exc
                group.cancel_scope.cancel()

        async with anyio.create_task_group() as group:
            for key, raw in batch.items():
                group.start_soon(one, key, raw, group)
        if self.failure is None:
            try:
                await update_task(
                    self.session, self.task_id, responses, timeout=self.options.request_timeout
                )
            except Exception as exc:
                self.failure = exc
            else:
                self.wake.set()
                return
        outer.cancel_scope.cancel()

    async def answer_one(self, key: str, raw: dict[str, Any]) -> dict[str, Any]:
        method = raw.get("method") if isinstance(raw.get("method"), str) else None
        request = parse_input_request(raw)
        if request is None:
            raise TaskInputError(
                self.task_id,
                key,
                f"task {self.task_id} asked for input this client does not understand "
                f"(key {key!r}, method {method!r})",
                method=method,
            )
        params = request.params
        ctx = ClientRequestContext(
            session=self.session,
            request_id=key,
            meta=params.meta if params is not None else None,
        )
        response = await self.session.dispatch_input_request(ctx, request)
        if isinstance(response, ErrorData):
            raise TaskInputError(
                self.task_id,
                key,
                f"task {self.task_id} asked for input ({request.method}) that was not given: "
                f"{response.message}",
                method=request.method,
                error=response,
            )
        return _dump(response)

    async def abandon(self) -> None:
        with anyio.CancelScope(shield=True), anyio.move_on_after(self.options.cancel_timeout):
            try:
                await cancel_task(self.session, self.task_id, timeout=self.options.cancel_timeout)
            except Exception as exc:
                logger.warning("could not cancel abandoned task %s: %s", self.task_id, exc)


async def wait_for_task(
    session: ClientSession,
    task_id: str,
    *,
    options: WaitOptions | None = None,
    tool_name: str | None = None,
    initial: TaskFields | None = None,
    answered: set[str] | None = None,
) -> CallToolResult:
    """Wait for a task's end and return its `CallToolResult`.

    Listens when `options.wait_mode` is `"listen"`, `options.listener` is set (a
    `TasksExtension`'s, whose notification binding feeds it) and the session can listen;
    polls otherwise (see the module's docstring for the fallbacks).

    Args:
        session: An entered 2026-07-28 session whose capabilities declare the extension.
        task_id: The task to wait for.
        options: Listening or polling, cadence, callbacks and the abandon policy.
        tool_name: For `TaskProgress` only.
        initial: The task as already known (the `CreateTaskResult`), reported first.
        answered: `inputRequests` keys already answered; updated in place.

    Raises:
        TaskFailedError: The task ended `failed`.
        TaskCancelledError: The task ended `cancelled`.
        TaskInputError: An input request could not be answered.
        TaskNotFoundError: The server does not know the task.
        MCPError: Polling failed for good.
    """
    known = answered if answered is not None else set()
    wait = _Wait(session, task_id, options or WaitOptions(), tool_name, known)
    try:
        snapshot = await wait.run(initial)
        if snapshot is None:
            assert wait.failure is not None
            raise wait.failure
    except TaskNotFoundError:
        raise
    except BaseException:
        if wait.options.cancel_if_abandoned:
            await wait.abandon()
        raise
    return result_of(snapshot)
