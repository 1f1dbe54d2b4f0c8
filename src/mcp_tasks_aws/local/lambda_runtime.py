"""What the Lambda runtime does around a handler, emulated for the embedded stack: the function's
timeout (from `template.yaml`) is enforced, as Lambda does, so that a handler that would time
out when deployed times out locally too.

Lambda stops a function at its timeout; a Python thread cannot be stopped from outside, so
the emulation raises :class:`FunctionTimedOut` inside the handler's thread (at its next
bytecode) and answers the invoker at once, with what Lambda answers: a `Sandbox.Timedout`
function error.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from typing import Any


class FunctionTimedOut(BaseException):
    """Raised inside a handler that ran past its function's timeout (local only)."""


def interrupt_thread(ident: int, exc_type: type[BaseException] = FunctionTimedOut) -> None:
    """Raise `exc_type` in the thread `ident` at its next bytecode."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(exc_type))


def timeout_error(timeout_s: float) -> dict[str, Any]:
    """The error payload Lambda returns for an invocation that timed out."""
    return {
        "errorType": "Sandbox.Timedout",
        "errorMessage": f"Task timed out after {timeout_s:.2f} seconds",
    }


class HandlerCall:
    """One handler invocation that can be interrupted from another thread."""

    def __init__(self, handler: Callable[[Any, Any], Any], event: Any, context: Any) -> None:
        self.handler = handler
        self.event = event
        self.context = context
        self._ident: int | None = None
        self._lock = threading.Lock()
        self._finished = False

    def __call__(self) -> Any:
        with self._lock:
            self._ident = threading.get_ident()
        try:
            return self.handler(self.event, self.context)
        except FunctionTimedOut:
            return None  # the invoker has answered already
        finally:
            with self._lock:
                self._finished = True

    def interrupt(self) -> None:
        """Stop the handler (if it is still running), as Lambda stops a timed-out function."""
        with self._lock:
            if self._ident is not None and not self._finished:
                interrupt_thread(self._ident)


def call_with_timeout(
    handler: Callable[[Any, Any], Any], event: Any, context: Any, timeout_s: float
) -> Any:
    """Run the handler in its own thread; raise FunctionTimedOut if it is not done in time."""
    call = HandlerCall(handler, event, context)
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = call()
        except BaseException as exc:  # handed to the invoker's thread
            outcome["error"] = exc

    thread = threading.Thread(target=run, name=f"lambda-{getattr(context, 'function_name', '')}")
    thread.daemon = True
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        call.interrupt()
        raise FunctionTimedOut(timeout_s)
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("result")
