"""Numeric progress in a task's `statusMessage`, and the throttle of inline progress.

A task has no progress field: `ctx.report(message, progress=3, total=10)` puts the numbers at
the front of its `statusMessage`, in a form any person can read and this module can parse
back (the CLI draws a bar from it):

    "3/10 · migrating schema"      progress out of a total
    "42% · migrating schema"       a total of 100 reads as a percentage
    "1536 · rows copied"           no total: a count that only grows
    "migrating schema"             no number: just the message

Inline calls send `notifications/progress` instead, when the request carries a
`progressToken`; :class:`ProgressThrottle` decides which reports go out.

This module imports nothing but the standard library: the Lambda functions and the CLI both
use it.
"""

from __future__ import annotations

import math
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

SEPARATOR = " · "
INLINE_INTERVAL_S = 0.1
"""Inline progress notifications go out at most this often (the first and the last always)."""
MAX_INLINE_NOTIFICATIONS = 1000
"""And at most this many per request: a Lambda response carries them all at once."""

_FLOAT_MAX = sys.float_info.max
_NUMBER = r"\d+(?:\.\d+)?"
_STATUS = re.compile(
    rf"^(?:(?P<pct>{_NUMBER})%|(?P<num>{_NUMBER})(?:/(?P<total>{_NUMBER}))?)"
    rf"(?:{re.escape(SEPARATOR)}(?P<message>.*))?$",
    re.DOTALL,
)


@dataclass(frozen=True)
class Progress:
    """A report: how far (`progress` out of `total`, if known) and what is happening."""

    progress: float | None
    total: float | None
    message: str

    @property
    def fraction(self) -> float | None:
        """progress/total within [0, 1], when both are known."""
        if self.progress is None or not self.total:
            return None
        return min(1.0, max(0.0, self.progress / self.total))


def _number(value: float) -> str:
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.2f}".rstrip("0").rstrip(".")


def check_numbers(progress: float | None, total: float | None) -> None:
    """ValueError unless progress and total are finite, non-negative numbers (total > 0)."""
    for name, value in (("progress", progress), ("total", total)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{name} must be a number, not {type(value).__name__}")
        # An integer past a float's range (JSON numbers have no bound) is refused here, as a
        # ValueError: converting it later would raise OverflowError instead.
        if value < 0 or not (-_FLOAT_MAX <= value <= _FLOAT_MAX) or not math.isfinite(value):
            fits = isinstance(value, float) or abs(value) <= _FLOAT_MAX
            shown = value if fits else "an integer too large for a float"
            raise ValueError(f"{name} must be a finite number >= 0, not {shown}")
    if total is not None and total <= 0:
        raise ValueError(f"total must be > 0, not {total}")
    if total is not None and progress is None:
        raise ValueError("total needs progress")


def format_status(message: str, progress: float | None = None, total: float | None = None) -> str:
    """The statusMessage for a report (numbers first, so truncation never hides them)."""
    check_numbers(progress, total)
    if progress is None:
        return message
    if total == 100:
        numbers = f"{_number(progress)}%"
    elif total is not None:
        numbers = f"{_number(progress)}/{_number(total)}"
    else:
        numbers = _number(progress)
    return f"{numbers}{SEPARATOR}{message}" if message else numbers


def parse_status(text: str | None) -> Progress:
    """A statusMessage read back: the numbers `format_status` put there, and the message."""
    if not text:
        return Progress(None, None, "")
    found = _STATUS.match(text)
    if found is None:
        return Progress(None, None, text)
    message = found.group("message") or ""
    if found.group("pct") is not None:
        return Progress(float(found.group("pct")), 100.0, message)
    total = found.group("total")
    if total is None and found.group("message") is None:
        return Progress(None, None, text)  # a bare number is a message, not a count
    return Progress(float(found.group("num")), float(total) if total else None, message)


class ProgressThrottle:
    """Which inline reports become notifications: increasing values only, at most one per
    `interval_s` (the first and the one reaching `total` always), at most `limit` in all."""

    def __init__(
        self,
        interval_s: float = INLINE_INTERVAL_S,
        limit: int = MAX_INLINE_NOTIFICATIONS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interval_s = interval_s
        self.limit = limit
        self._clock = clock
        self._last_value: float | None = None
        self._last_time: float | None = None
        self.sent = 0

    def admit(self, progress: float, total: float | None) -> bool:
        """Whether this report goes out (and, if so, it counts as sent)."""
        if self.sent >= self.limit:
            return False
        if self._last_value is not None and progress <= self._last_value:
            return False  # the spec wants every notification to increase
        now = self._clock()
        final = total is not None and progress >= total
        due = self._last_time is None or now - self._last_time >= self.interval_s
        if not (final or due):
            return False
        self._last_value, self._last_time = progress, now
        self.sent += 1
        return True
