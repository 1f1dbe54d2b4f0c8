"""A time limit for inline runs: a tool still running at its deadline is interrupted.

Inline calls run inside the API function, which Lambda stops at its timeout; a tool still
running then would leave the client with a bare 5xx from API Gateway. So the inline path runs
the tool under :func:`time_limit`, with a deadline a little before the function's, and at the
deadline :class:`DeadlineExceeded` is raised inside the tool, wherever it is. The caller turns
it into a clear answer.

How it is raised depends on the thread:
- the main thread (a Lambda handler): `SIGALRM` through `setitimer`, which also interrupts a
  blocking call such as `time.sleep`;
- any other thread (the embedded stack serves requests from worker threads): an asynchronous
  exception set on that thread, delivered at its next bytecode (a blocking call finishes
  first).

`DeadlineExceeded` is a `BaseException`, so a tool's `except Exception` does not swallow it.

**How long a blocking call may wait** (`call_deadline`, `seconds_left`): a call that must not
be resent (a declared target's Lambda invoke, an Express run: `aws.call_policies.ONCE`) waits
for its answer as long as its caller can, and no longer. `time_limit` sets that to the inline
deadline plus `_CALL_GRACE_S` (the interruption at the deadline answers first; the grace only
lets a blocking read on another thread return, so its exception is delivered); the worker
sets it to a task leg's end (`handlers/worker.py`). Outside both there is none.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from types import FrameType

_CALL_GRACE_S = 1.0
_CALL_DEADLINE: ContextVar[float | None] = ContextVar("mcp_tasks_call_deadline", default=None)


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


class DeadlineExceeded(BaseException):
    """An inline run reached its deadline (raised inside the tool)."""


@contextmanager
def time_limit(deadline: float | None) -> Iterator[None]:
    """Run the block until `deadline` (a `time.monotonic()` value); None means no limit."""
    if deadline is None:
        yield
        return
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise DeadlineExceeded()
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
        with _alarm(remaining), call_deadline(deadline + _CALL_GRACE_S):
            yield
    else:
        with _async_exception(remaining), call_deadline(deadline + _CALL_GRACE_S):
            yield


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


@contextmanager
def _async_exception(seconds: float) -> Iterator[None]:
    import ctypes  # only threads other than the main one (the embedded stack) come here

    target = ctypes.c_ulong(threading.get_ident())
    lock = threading.Lock()
    state = {"done": False, "fired": False}

    def fire() -> None:
        # Under the lock, so a block that just ended is never interrupted afterwards.
        with lock:
            if not state["done"]:
                state["fired"] = True
                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    target, ctypes.py_object(DeadlineExceeded)
                )

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
                # Withdraw the exception if it was set but not yet delivered.
                ctypes.pythonapi.PyThreadState_SetAsyncExc(target, None)
