"""Inline runs whose notifications reach the client as they happen (a streaming front door).

Buffered (API Gateway's HTTP API in front of Lambda), an inline `tools/call` collects its
progress and log notifications and sends them with its result: the client sees them all at
once, at the end. When the answer streams (the embedded stack, the `STREAMING` front door),
:func:`serve_live` runs the method in a thread of its own and hands each notification to the
request's thread the moment the tool makes it (`Call.emit`):

- nothing has been sent when the run ends without a notification: the answer is exactly the
  buffered one (a JSON result, or the error with its HTTP status, -32602 as 400 and so on);
- once a notification is made, the answer becomes an SSE stream: that notification first,
  each later one as it comes, the response last. An error raised after that point ends the
  stream as its last message (`protocol.transport`), since the status line is gone already.
- a 2025-11-25 call's stream must start with its priming event (SEP-1699: the event id it
  resumes from if it asks, `server.legacy.questions`): given as `opening`, it is sent before
  the first notification, and once only (the stream of a call that then asks carries it too).

A stream that has started already (a resumed 2025-11-25 stream, whose priming event went
first) runs its call through :func:`relayed`: each notification is yielded as it is made, and
the call's outcome is returned to the stream, which decides what ends it.

The caller leaving is the other half. The stream's consumer (the ASGI app) stops it by
raising `ClientGone` in the thread that iterates it (at its next bytecode: the waits here
are short); the stream then stops the tool's run the same way (`DeadlineExceeded`, which the
inline runner answers as a tool that ran out of time, an answer nobody reads), so the
function stops holding instead of running the tool to its deadline for no one.
"""

from __future__ import annotations

import contextvars
import ctypes
import queue
import threading
import time
from collections.abc import Callable, Generator, Iterator
from typing import Any, Final, TypeVar

from mcp_tasks_aws.protocol.jsonrpc import result_message
from mcp_tasks_aws.protocol.transport import SseComment
from mcp_tasks_aws.server.call import Call
from mcp_tasks_aws.tools.deadline import DeadlineExceeded

LIVE_METHODS: Final = frozenset({"tools/call", "prompts/get"})
"""The methods that run a tool or prompt inline, whose notifications may come mid-run."""
FIRST_BYTE_S: Final = 15.0
"""How long a run may go without a notification before its answer starts anyway (with an SSE
comment, then the response when it comes): API Gateway's REST integration wants the first
byte of a streamed answer within its integration timeout (29 s)."""
Emit = Callable[[dict[str, Any]], None]
"""Hands one notification to the request's thread, which sends it (`Call.emit`)."""
_T = TypeVar("_T")
_WAIT_STEP_S: Final = 0.25
"""How long the request's thread blocks at once waiting for the run: short, so that an
interruption (`ClientGone`) is seen promptly."""


class ClientGone(BaseException):
    """Raised inside a stream's thread when the client closed the connection.

    A `BaseException`, like `DeadlineExceeded`: a tool's `except Exception` does not eat it.
    """


class Interruptible:
    """One thread's run of `target` that another thread may interrupt, safely.

    The exception is raised in the thread at its next bytecode (a blocking call ends first).
    Interrupting is done under a lock with the run's end, so it never lands in a thread that
    has moved on (or, once it ended, in a new thread that reuses its id), and an exception set
    but not yet delivered when the run ends is withdrawn.
    """

    def __init__(self, target: Callable[[], None], name: str) -> None:
        self._target = target
        self._lock = threading.Lock()
        self._running = False
        self._done = False
        self._fired = False
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        with self._lock:
            self._running = True
        try:
            self._target()
        except BaseException:  # noqa: S110 - interrupted: the target had nothing left to say
            pass
        finally:
            with self._lock:
                self._done = True
                if self._fired and self.thread.ident is not None:
                    _set_async_exc(self.thread.ident, None)

    def interrupt(self, exc_type: type[BaseException]) -> None:
        with self._lock:
            if self._running and not self._done and self.thread.ident is not None:
                self._fired = True
                _set_async_exc(self.thread.ident, exc_type)


def _set_async_exc(thread_id: int, exc_type: type[BaseException] | None) -> None:
    exc = ctypes.py_object(exc_type) if exc_type is not None else None
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), exc)


class _Ended:
    """The run's outcome: what the method returned, or what it raised."""

    def __init__(self, result: Any = None, error: BaseException | None = None) -> None:
        self.result = result
        self.error = error


def serve_live(
    call: Call, run: Callable[[Call], Any], opening: Callable[[], Any] | None = None
) -> Any:
    """`run(call)` with its notifications sent as they happen.

    Returns the method's result when it ended before making any notification (or raises its
    error), else an iterator of whole messages: `opening()` if given, the notifications, then
    the response (or the messages of the stream the method answered).
    """

    def work(emit: Emit) -> Any:
        call.emit = emit
        return run(call)

    made, worker = _started(work)
    try:
        first = _next(made, time.monotonic() + FIRST_BYTE_S)
    except BaseException:  # ClientGone before anything was sent: the run is for no one
        _stop(worker)
        raise
    if first is None:  # a long run with nothing to say yet: start the answer anyway
        return _stream(call, SseComment() if opening is None else None, made, worker, opening)
    if isinstance(first, _Ended):
        if first.error is not None:
            raise first.error
        return first.result
    return _stream(call, first, made, worker, opening)


def relayed(work: Callable[[Emit], _T]) -> Generator[dict[str, Any], None, _T]:
    """`work(emit)` in a thread of its own, each message it emits yielded as it is emitted, for
    a stream that has started already (a resumed 2025-11-25 stream); returns what `work`
    returned, or raises what it raised. A consumer that stops early (the client left) stops
    the run, as `serve_live`'s does."""
    made, worker = _started(work)
    try:
        while not isinstance(item := _next(made), _Ended):
            if item is not None:
                yield item
        if item.error is not None:
            raise item.error
        result: _T = item.result
        return result
    finally:
        _stop(worker)


def _started(
    work: Callable[[Emit], Any],
) -> tuple[queue.Queue[dict[str, Any] | _Ended], Interruptible]:
    """`work(emit)` started in a thread of its own, in the caller's context: what it emits, then
    its `_Ended`, arrive on the queue."""
    made: queue.Queue[dict[str, Any] | _Ended] = queue.Queue()
    context = contextvars.copy_context()

    def target() -> None:
        try:
            outcome = _Ended(result=context.run(work, made.put))
        except BaseException as exc:  # handed to the request's thread, which raises it
            outcome = _Ended(error=exc)
        made.put(outcome)

    worker = Interruptible(target, "inline-run")
    worker.start()
    return made, worker


def _next(
    made: queue.Queue[dict[str, Any] | _Ended], until: float | None = None
) -> dict[str, Any] | _Ended | None:
    """The run's next item; None once `until` (a `time.monotonic()`) passed without one."""
    while until is None or time.monotonic() < until:
        try:
            return made.get(timeout=_WAIT_STEP_S)
        except queue.Empty:
            continue
    return None


def _stream(
    call: Call,
    first: dict[str, Any] | SseComment | None,
    made: queue.Queue[dict[str, Any] | _Ended],
    worker: Interruptible,
    opening: Callable[[], Any] | None,
) -> Iterator[Any]:
    try:
        opened = opening() if opening is not None else None
        if opened is not None:
            yield opened
        item: dict[str, Any] | SseComment | _Ended | None = first
        while not isinstance(item, _Ended):
            if item is not None:
                yield item
            item = _next(made)
        if item.error is not None:
            raise item.error
        result = item.result
        if isinstance(result, dict):
            yield result_message(call.request.id, result)
            return
        # The method answered a stream (a 2025-11-25 call that asks: its priming event, its
        # questions): the rest of it, without the opening sent already.
        yield from (message for message in result if message != opened)
    finally:
        # The consumer stopped early (the client left, or the stream was closed): the run is
        # for no one now, so it ends here rather than at its deadline.
        _stop(worker)


def _stop(worker: Interruptible) -> None:
    worker.interrupt(DeadlineExceeded)
