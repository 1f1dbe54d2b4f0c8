"""The virtual clock: one time for every function, service and client of a run.

The code under test already takes its time from outside (`clock` and `sleep` in the domain's
use cases, `clock`/`sleep` of the listen and handle windows): here all of them read this one.
It moves only forward and only in the driver: by the latency of each AWS attempt, to the wake
time of a sleep that is resumed, and when the run lets time pass. Timers (a waiting state's
timeout, an event's age, the sweeper's schedule) fire as it passes them, in time order.

`sleep` inside a process is a point of its own (`scheduler.Point("sleep")`): the process waits
there until the driver resumes it, and the clock is then moved to its wake time.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable

from simulation.scheduler import Point, Scheduler, current

EPOCH_MS = 1_767_225_600_000
"""2026-01-01T00:00:00Z: where every run's clock starts (a run never depends on today)."""
MONOTONIC_ORIGIN_S = 10_000.0


class VirtualClock:
    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        self.ms = EPOCH_MS
        self._timers: list[tuple[int, int, Callable[[], None]]] = []
        self._order = itertools.count()

    # -- what the code under test reads --------------------------------------------------------

    def now_ms(self) -> int:
        """Epoch milliseconds (the domain's clock)."""
        return self.ms

    def monotonic(self) -> float:
        """Seconds on a monotonic scale (the server's windows and deadlines)."""
        return MONOTONIC_ORIGIN_S + (self.ms - EPOCH_MS) / 1000

    def wall(self) -> float:
        """Epoch seconds."""
        return self.ms / 1000

    def sleep(self, seconds: float) -> None:
        """Wait `seconds` of virtual time: a point where other processes may go first."""
        until = self.ms + max(0, round(seconds * 1000))
        if current() is None:
            self.advance_to(until)
            return
        self.scheduler.pause(Point("sleep", "sleep", until_ms=until))

    # -- the driver's side -----------------------------------------------------------------------

    def at(self, when_ms: int, fire: Callable[[], None]) -> None:
        """Call `fire` (in the driver) once the clock reaches `when_ms`."""
        heapq.heappush(self._timers, (when_ms, next(self._order), fire))

    def next_timer(self) -> int | None:
        return self._timers[0][0] if self._timers else None

    def advance_to(self, when_ms: int) -> None:
        """Move to `when_ms` (never back), firing the timers passed on the way in time order."""
        while self._timers and self._timers[0][0] <= when_ms:
            due, _, fire = heapq.heappop(self._timers)
            self.ms = max(self.ms, due)
            fire()
        self.ms = max(self.ms, when_ms)

    def advance(self, ms: int) -> None:
        self.advance_to(self.ms + ms)
