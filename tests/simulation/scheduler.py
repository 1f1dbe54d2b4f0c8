"""Processes that take turns: every function invocation and client is a thread, and exactly
one thread runs at any moment, so a run is a function of the choices made, never of timing.

A *process* runs plain synchronous code (a Lambda handler's work, a client's request loop)
until it reaches a *point*: an AWS call about to be sent (one SDK attempt) or a sleep. There it
hands the turn back to the driver (the main thread), which later resumes it with a
`Directive`: what that attempt meets (a fault kind, or nothing), or a crash, which unwinds the
process right there, before the call is made: a crash point between two of its calls.

This is the cooperative scheduling FoundationDB's simulator gets from its actors and
TigerBeetle's VOPR from its single-threaded event loop, done with the threads Python code
already runs on: the baton is a pair of semaphores, so no two threads ever run at once, and
which process goes next is the driver's (the seed's) choice alone.

Code run by the driver itself (set-up, the checker's final reads) reaches `pause` outside any
process and goes straight on: nothing fails there.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

FaultKind = Literal["ok", "throttle", "5xx", "timeout_before", "timeout_after", "crash"]
FAULTS: tuple[FaultKind, ...] = (
    "ok",
    "throttle",
    "5xx",
    "timeout_before",
    "timeout_after",
    "crash",
)
"""What one AWS attempt may meet: `timeout_after` lands the call and loses its answer."""


class Crashed(BaseException):
    """Raised inside a process at a crash point (a BaseException: no `except Exception` in
    the code under test may swallow it, as none can catch a Lambda crash)."""

    def __init__(self, point: Point) -> None:
        super().__init__(f"crashed before {point.label}")
        self.point = point


class Killed(BaseException):
    """Raised inside a process the run ends (nothing may outlive a run; nothing catches it)."""


class Point(NamedTuple):
    """Where a process waits for its turn: `call` (one attempt of an AWS call) or `sleep`."""

    kind: Literal["call", "sleep"]
    label: str
    """The AWS operation (`dynamodb:UpdateItem`), or `sleep`."""
    site: str = ""
    """Where in the domain the call is made (module:function), for crash-point statistics."""
    until_ms: int = 0
    """For a sleep: the virtual time it wakes at."""


class Directive(NamedTuple):
    fault: FaultKind | Literal["kill"] = "ok"


OK = Directive()


@dataclass(eq=False)
class Process:
    """One invocation of a function, or one client operation, on a thread of its own."""

    pid: int
    name: str
    function: str
    """Which function (or client) it is: `api`, `worker`, `reconcile`, `sweep`, `ask`, `client`."""
    body: Callable[[], Any]
    on_exit: Callable[[Process], None] | None = None
    state: Literal["new", "blocked", "running", "done", "crashed", "failed"] = "new"
    point: Point | None = None
    result: Any = None
    error: BaseException | None = None
    directive: Directive = OK
    crashable: bool = True
    """Whether a crash can happen here now (a client crashes only inside the function it
    called: the API function's crash answers it 502)."""
    timed_out: bool = False
    """Ended by its function's timeout (Lambda's `Sandbox.Timedout`)."""
    waiting_since: int = 0
    """When it reached its point (the scheduler's count of points reached): first come,
    first served when nothing else decides."""
    deadline_ms: int | None = None
    """When its function's timeout ends the invocation it is in (None: not in one)."""
    invocation: int = 0
    """Which function invocation a client process is in (each request is one)."""
    go: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(0))
    thread: threading.Thread | None = None

    @property
    def over(self) -> bool:
        return self.state in ("done", "crashed", "failed")

    def __repr__(self) -> str:
        return f"<{self.name}#{self.pid} {self.state} at {self.point.label if self.point else '-'}>"


_local = threading.local()


def current() -> Process | None:
    """The process whose thread this is (None: the driver)."""
    return getattr(_local, "process", None)


class Scheduler:
    """Runs processes one at a time, each to its next point, in the order the driver asks."""

    def __init__(self) -> None:
        self._driver = threading.Semaphore(0)
        self._next_pid = 0
        self._points = 0
        self.processes: list[Process] = []
        self.before_resume: Callable[[Process, Directive], Directive] | None = None
        """Called by the driver before a process goes on (the clock moves there); returns the
        directive it meets."""

    def spawn(
        self,
        name: str,
        function: str,
        body: Callable[[], Any],
        on_exit: Callable[[Process], None] | None = None,
        *,
        crashable: bool = True,
    ) -> Process:
        """Start a process and run it to its first point (or its end)."""
        if current() is not None:
            raise RuntimeError("processes are started by the driver only")
        self._next_pid += 1
        process = Process(self._next_pid, name, function, body, on_exit, crashable=crashable)
        process.thread = threading.Thread(
            target=self._run, args=(process,), name=f"sim-{name}-{process.pid}", daemon=True
        )
        self.processes.append(process)
        process.thread.start()
        self._switch(process)
        return process

    def blocked(self) -> list[Process]:
        """The processes waiting at a point, oldest first."""
        return [p for p in self.processes if p.state == "blocked"]

    def resume(self, process: Process, directive: Directive = OK) -> None:
        """Let `process` go on from its point, meeting `directive`, to its next one."""
        if process.state != "blocked":
            raise RuntimeError(f"{process!r} is not waiting")
        if self.before_resume is not None:
            directive = self.before_resume(process, directive)
            if process.state != "blocked":
                return  # its function timed out while the clock moved to its point
        process.directive = directive
        self._switch(process)

    def kill_all(self) -> None:
        """End every process still waiting (a run's end: nothing may outlive it)."""
        for process in self.blocked():
            process.directive = Directive("kill")
            self._switch(process)

    def pause(self, point: Point) -> Directive:
        """In a process: wait at `point` for the driver's turn. Outside one: go on at once."""
        process = current()
        if process is None:
            return OK
        process.point, process.state = point, "blocked"
        self._points += 1
        process.waiting_since = self._points
        self._driver.release()
        process.go.acquire()
        process.state, process.point = "running", None
        directive = process.directive
        if directive.fault == "crash":
            raise Crashed(point)
        if directive.fault == "kill":
            raise Killed()
        return directive

    # -- the baton ------------------------------------------------------------------------------

    def _switch(self, process: Process) -> None:
        process.go.release()
        self._driver.acquire()
        if process.over:
            if process.thread is not None:
                process.thread.join()
            self.processes.remove(process)
            if process.on_exit is not None:
                process.on_exit(process)

    def _run(self, process: Process) -> None:
        process.go.acquire()
        _local.process = process
        process.state = "running"
        try:
            process.result = process.body()
            process.state = "done"
        except (Crashed, Killed) as crash:
            process.state, process.error = "crashed", crash
        except BaseException as exc:  # a function error: Lambda sees it as such
            process.state, process.error = "failed", exc
        finally:
            process.point = None
            self._driver.release()
