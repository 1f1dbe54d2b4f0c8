"""A clock the test holds: code under test reads it, the test sets or moves it."""

from __future__ import annotations


class Clock:
    """`clock()` is `clock.now`, in the unit the code under test reads (seconds, or epoch
    milliseconds: an int start stays an int). It starts at 1000 unless told otherwise: a time
    after zero, so code that takes 0 for "never" is not fooled."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, by: float) -> None:
        self.now += by
