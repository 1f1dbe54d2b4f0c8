"""A time limit for inline runs: a tool still running at its deadline is stopped, and the
caller answers at the deadline.

Inline calls run inside the API function, which Lambda stops at its timeout; a tool still
running then would leave the client with a bare 5xx from API Gateway. So the inline path runs
the tool with :func:`run_within`, with a deadline a little before the function's, and at the
deadline :class:`DeadlineExceeded` reaches the caller, which turns it into a clear answer.

How the tool is stopped depends on the thread it is called from:
- the main thread (a Lambda handler): `SIGALRM` through `setitimer` raises it inside the
  tool, which also interrupts a blocking call such as `time.sleep`;
- any other thread (the embedded stack serves requests from worker threads, where no signal
  can be used): the tool runs in a thread of its own, and the caller stops waiting at the
  deadline, whatever the tool is doing (a `time.sleep`, a socket read, a busy loop). The tool's
  thread then gets `DeadlineExceeded` as an asynchronous exception, delivered at its next
  bytecode (after the blocking call it is in), so it does not run on unseen. A caller that is
  stopped before the deadline (the client of a streamed call left: `server.live`) stops the
  tool the same way, at once.

Either way an `async` tool also sees the deadline on its event loop (:func:`awaited_within`):
an `await asyncio.sleep(...)` past it is cancelled there. :func:`time_limit` is the same limit
as a context manager for a block on the current thread; off the main thread it interrupts only
at a bytecode, so a blocking call in the block finishes first (the inline path does not use it).

`DeadlineExceeded` is a `BaseException`, so a tool's `except Exception` does not swallow it.

**How long a blocking call may wait** (`call_deadline`, `seconds_left`): a call that must not
be resent (a declared target's Lambda invoke, an Express run: `aws.call_policies.ONCE`) waits
for its answer as long as its caller can, and no longer. `run_within` (and `time_limit`) set
that to the inline deadline plus `_CALL_GRACE_S` (the interruption at the deadline answers
first; the grace only lets a blocking read on another thread return, so its exception is
delivered); the worker sets it to a task leg's end (`handlers/worker.py`). Outside both there
is none.
"""

from __future__ import annotations

import contextvars
import signal
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from types import FrameType
from typing import Any, TypeVar

T = TypeVar("T")

_CALL_GRACE_S = 1.0
_CALL_DEADLINE: ContextVar[float | None] = ContextVar("mcp_tasks_call_deadline", default=None)
_RUN_DEADLINE: ContextVar[float | None] = ContextVar("mcp_tasks_run_deadline", default=None)


class DeadlineExceeded(BaseException):
    """An inline run reached its deadline."""


@contextmanager
def call_deadline(deadline: float | None) -> Iterator[None]:
    """Blocking calls made in the block may wait until `deadline` (`time.monotonic()`)."""
    token = _CALL_DEADLINE.set(deadline)
    try:
        yield
    finally:
        _CALL_DEADLINE.reset(token)


def seconds_left() -> float | None:
    """How long a blocking call made now may wait for its answer (None: no deadline set)."""
    deadline = _CALL_DEADLINE.get()
    return None if deadline is None else deadline - time.monotonic()


@contextmanager
def _deadlines(deadline: float) -> Iterator[None]:
    """The run's deadline (for `awaited_within`) and its blocking calls' (`seconds_left`)."""
    token = _RUN_DEADLINE.set(deadline)
    try:
        with call_deadline(deadline + _CALL_GRACE_S):
            yield
    finally:
        _RUN_DEADLINE.reset(token)


def _on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")


def run_within(deadline: float | None, work: Callable[[], T]) -> T:
    """`work()`, stopped at `deadline` (a `time.monotonic()` value; None: no limit), where
    `DeadlineExceeded` is raised to the caller (see the module docstring)."""
    if deadline is None:
        return work()
    if _on_main_thread():
        with time_limit(deadline):
            return work()
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise DeadlineExceeded()
    with _deadlines(deadline):
        return _in_own_thread(work, remaining)


@contextmanager
def time_limit(deadline: float | None) -> Iterator[None]:
    """Run the block until `deadline` (a `time.monotonic()` value); None means no limit."""
    if deadline is None:
        yield
        return
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise DeadlineExceeded()
    if _on_main_thread():
        with _alarm(remaining), _deadlines(deadline):
            yield
    else:
        with _async_exception(remaining), _deadlines(deadline):
            yield


async def awaited_within(awaitable: Awaitable[T]) -> T:
    """Await `awaitable` until the deadline `run_within` set (if any); `DeadlineExceeded` at it.

    Only `async` tools come here, so only they import asyncio."""
    import asyncio

    deadline = _RUN_DEADLINE.get()
    if deadline is None:
        return await awaitable
    limit = asyncio.timeout(max(0.0, deadline - time.monotonic()))
    try:
        async with limit:
            return await awaitable
    except TimeoutError:
        if limit.expired():
            raise DeadlineExceeded() from None
        raise  # the tool's own TimeoutError


def _raise_deadline(signum: int, frame: FrameType | None) -> None:
    raise DeadlineExceeded()


@contextmanager
def _alarm(seconds: float) -> Iterator[None]:
    previous = signal.signal(signal.SIGALRM, _raise_deadline)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _set_async_exc(ident: int, exc: type[BaseException] | None) -> None:
    """Raise `exc` in thread `ident` at its next bytecode (None withdraws a pending one)."""
    import ctypes  # only threads other than the main one (the embedded stack) come here

    # NULL (None) withdraws a pending exception; Py_None would be raised as one.
    pending = ctypes.py_object(exc) if exc is not None else None
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), pending)


@contextmanager
def _async_exception(seconds: float) -> Iterator[None]:
    target = threading.get_ident()
    lock = threading.Lock()
    state = {"done": False, "fired": False}

    def fire() -> None:
        # Under the lock, so a block that just ended is never interrupted afterwards.
        with lock:
            if not state["done"]:
                state["fired"] = True
                _set_async_exc(target, DeadlineExceeded)

    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        with lock:
            state["done"] = True
            if state["fired"]:
                _set_async_exc(target, None)  # withdraw it if it was not delivered yet


_JOIN_STEP_S = 0.1
"""How long the caller of a tool run in its own thread blocks at once waiting for it."""


def _in_own_thread(work: Callable[[], T], seconds: float) -> T:
    """`work()` in a thread of its own (in this context: the deadlines, the tool's
    contextvars), waited for at most `seconds`."""
    outcome: dict[str, Any] = {}
    context = contextvars.copy_context()
    lock = threading.Lock()
    state = {"done": False, "fired": False}

    def run() -> None:
        try:
            try:
                outcome["value"] = context.run(work)
            except BaseException as exc:  # handed to the caller (unless it answered already)
                outcome["error"] = exc
            finally:
                # Under the lock: the caller fires only at a run that has not ended, and a
                # run that ends withdraws what was fired but not yet delivered.
                with lock:
                    state["done"] = True
                    if state["fired"]:
                        _set_async_exc(threading.get_ident(), None)
        except DeadlineExceeded:
            pass  # delivered as the run ended: the caller has answered already

    def stop() -> bool:
        """Stop the tool at its next bytecode, unless its run has ended; whether it had not."""
        with lock:
            if state["done"]:
                return False
            state["fired"] = True
            _set_async_exc(thread.ident or 0, DeadlineExceeded)
            return True

    thread = threading.Thread(target=run, name="inline-tool", daemon=True)
    thread.start()
    until = time.monotonic() + seconds
    try:
        # In short steps: this thread may itself be interrupted (the client of a streamed
        # call left, `server.live`), and an asynchronous exception lands only between two
        # bytecodes, never inside one long join.
        while thread.is_alive() and (left := until - time.monotonic()) > 0:
            thread.join(min(left, _JOIN_STEP_S))
    except BaseException:
        stop()  # the caller is gone: the tool stops too, not at its deadline
        raise
    if stop():  # the caller answers now either way
        raise DeadlineExceeded()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]  # type: ignore[no-any-return]
