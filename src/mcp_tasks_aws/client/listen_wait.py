"""Waiting by listening: one task followed through `subscriptions/listen` windows.

This module owns the listening half of a wait: when windows are opened, the one `tasks/get`
each window gets, and when a window's end means listen again, the task has ended, or poll
instead. `listening` sends the windows and routes their notifications; `waiter` owns the rest
of the wait (what a state of the task means, answering input requests, falling back to
polling, the outcome), and hands `ListenWindows` the steps it needs as callbacks.

The server delivers a task's status changes in bounded windows: one ends once something was
delivered, once the task is terminal, or after its length (20 s deployed), and the client
listens again. Each window's notifications are handled as polled snapshots would be (`observe`);
a terminal one ends the wait.

A window reports changes relative to the state it found when it opened, so a change between
two windows (or between the task's creation and the first window) is not notified. To close
that gap the wait does **one `tasks/get` per window** (none when the window brought the
terminal state): `check_after` seconds into the window, or when the window ends if that is
sooner. A `tasks/get` issued after the server opened the window sees every change made before
that, and the window notifies every change made after, so nothing falls between them; if the
`tasks/get` was answered before the window opened (a slow start), a change in between is seen
by the next window's `tasks/get`: late by at most one window, never lost, and a terminal state
is never late at all, because a window on a terminal task closes at once. This was preferred
over "a `tasks/get` after each window" because that leaves the same gap every time (its answer
precedes the next window), which costs a whole window (20 s) whenever a task asks for input
just after a window ended or just after it was created. Notifications can reach the wait after
the window's response (the SDK dispatches them on their own task); they are handled in the
next window, and the wait ignores any snapshot older (`lastUpdatedAt`) than one already seen,
so the status never goes backwards.

A notification may come without the payload its status carries (a completed task without its
`result`, an `input_required` one without its `inputRequests`): the server bounds a window's
bytes and sends a plain `Task` when the payload does not fit. The wait then reads the task with
`tasks/get` and handles that instead.

A window that fails (an error answer, an HTTP error, a malformed or truncated stream,
`listen_timeout`) ends the listening: `follow` returns None and the wait polls from then on; a
-32601 answer is remembered for the session (`TaskListener.mark_unsupported`).

A window that brought no news (nothing the wait had not seen: a server's snapshot of an
unchanged task is not news) is followed by the polling delay (`pause`, the task's
`pollIntervalMs`, cut short when the wait answers the task's questions) before the next one.
A server whose windows end at once, or hold only while a task is young (this project's, behind
API Gateway, see `tasks.watch`), is then listened to at the polling pace, so listening costs
about what polling does; a change in the pause is in the next window's snapshot and its
`tasks/get`, no later than a poll would have seen it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from mcp_types import METHOD_NOT_FOUND

from mcp_tasks_aws.client.listen_stream import Inbox, TaskListener
from mcp_tasks_aws.client.wire import TaskSnapshot

__all__ = ["ListenWindows"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class _WindowEnd:
    """Put in the inbox when a listen window has ended; `error` when it failed."""

    error: Exception | None = None


@dataclass(frozen=True)
class _Checked:
    """The window's `tasks/get` answer, or why it failed, put in the inbox."""

    snapshot: TaskSnapshot | None = None
    error: Exception | None = None


@dataclass(frozen=True, kw_only=True)
class ListenWindows:
    """One wait's listen windows on one task; `follow` runs them one after the other."""

    session: ClientSession
    task_id: str
    listener: TaskListener
    observe: Callable[[TaskSnapshot], Awaitable[bool]]
    """The wait's handling of one state of the task, notified or fetched; True when terminal."""
    check: Callable[[], Awaitable[TaskSnapshot]]
    """The wait's `tasks/get` (with its retries), sent once per window."""
    pause: Callable[[], Awaitable[None]]
    """The wait's polling delay, slept after a quick window that delivered nothing."""
    listen_timeout: float
    """Bound on one window; a window still open after it counts as failed."""
    check_after: float
    """Seconds into a window at which its `tasks/get` is sent."""

    async def follow(self) -> TaskSnapshot | None:
        """Follow the task window after window: its terminal snapshot, or None to poll instead."""
        seen: set[tuple[str, str]] = set()  # the states handled so far (status, lastUpdatedAt)
        with self.listener.subscribe(self.task_id) as inbox:
            while True:
                outcome = await self._window(inbox, seen)
                if outcome is None or isinstance(outcome, TaskSnapshot):
                    return outcome
                if not outcome:  # nothing new: come back at the polling pace
                    await self.pause()

    async def _window(
        self, inbox: Inbox[Any], seen: set[tuple[str, str]]
    ) -> TaskSnapshot | bool | None:
        """One listen window and its `tasks/get`.

        Returns the terminal snapshot when the task ended; else whether the window brought
        news (a state not in `seen`, which it adds to); None when the window failed (the wait
        polls from then on).
        """

        def news(snapshot: TaskSnapshot) -> bool:
            state = (snapshot.status, snapshot.last_updated_at)
            fresh = state not in seen
            seen.add(state)
            return fresh

        ended = anyio.Event()
        window_over = checked = delivered = False
        outcome: TaskSnapshot | bool | None = None
        failure: Exception | None = None

        async def listen_once() -> None:
            error: Exception | None = None
            try:
                await self.listener.open_window(
                    self.session, self.task_id, timeout=self.listen_timeout
                )
            except Exception as exc:
                error = exc
            ended.set()
            inbox.put(_WindowEnd(error))

        async def check_once() -> None:
            with anyio.move_on_after(self.check_after):
                await ended.wait()
            try:
                inbox.put(_Checked(snapshot=await self.check()))
            except Exception as exc:
                inbox.put(_Checked(error=exc))

        async with anyio.create_task_group() as group:
            group.start_soon(listen_once)
            group.start_soon(check_once)
            while True:
                item = await inbox.receive.receive()
                if isinstance(item, _WindowEnd):
                    if item.error is not None:
                        self._window_failed(item.error)
                        break
                    window_over = True
                elif isinstance(item, _Checked):
                    if item.error is not None:
                        failure = item.error
                        break
                    assert item.snapshot is not None
                    checked = True
                    delivered = news(item.snapshot) or delivered
                    if await self.observe(item.snapshot):
                        outcome = item.snapshot
                        break
                else:  # a notifications/tasks payload
                    delivered = news(item) or delivered
                    if item.payload_missing:
                        # A plain Task (the window had no room for its result, its requests
                        # or its error): tasks/get has them.
                        try:
                            item = await self.check()
                        except Exception as exc:
                            failure = exc
                            break
                    if await self.observe(item):
                        outcome = item
                        break
                if window_over and checked:
                    outcome = delivered
                    break
            group.cancel_scope.cancel()
        if failure is not None:
            raise failure
        return outcome

    def _window_failed(self, error: Exception) -> None:
        if isinstance(error, MCPError) and error.code == METHOD_NOT_FOUND:
            self.listener.mark_unsupported(self.session)
            logger.info("the server does not serve subscriptions/listen; polling instead")
        else:
            logger.warning(
                "listening for task %s failed (%s); polling instead", self.task_id, error
            )
