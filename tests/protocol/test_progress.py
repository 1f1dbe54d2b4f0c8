"""Progress: the statusMessage format and its parser, the inline throttle, `ctx.report`."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_tasks_aws import ToolContext
from mcp_tasks_aws.protocol.models import ClientCapabilities
from mcp_tasks_aws.protocol.progress import Progress, ProgressThrottle, format_status, parse_status
from support.clock import Clock


@pytest.mark.parametrize(
    ("message", "progress", "total", "status"),
    [
        ("migrating schema", 3, 10, "3/10 · migrating schema"),
        ("migrating schema", 42, 100, "42% · migrating schema"),
        ("migrating schema", 12.5, 100, "12.5% · migrating schema"),
        ("rows copied", 1536, None, "1536 · rows copied"),
        ("", 2, 8, "2/8"),
        ("", 0.333333, 1, "0.33/1"),
        ("just words", None, None, "just words"),
    ],
)
def test_status_format_and_parse_round_trip(
    message: str, progress: float | None, total: float | None, status: str
) -> None:
    assert format_status(message, progress, total) == status
    parsed = parse_status(status)
    assert parsed.message == message
    if progress is None:
        assert (parsed.progress, parsed.total) == (None, None)
    else:
        assert parsed.progress == pytest.approx(progress, abs=0.01)
        assert parsed.total == total


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        (None, Progress(None, None, "")),
        ("", Progress(None, None, "")),
        ("12s left", Progress(None, None, "12s left")),
        ("42", Progress(None, None, "42")),  # a bare number is a message
        ("3/10", Progress(3, 10, "")),
        ("3/10 ·", Progress(None, None, "3/10 ·")),
        ("report: 3s left", Progress(None, None, "report: 3s left")),
        ("7 · a · b", Progress(7, None, "a · b")),
    ],
)
def test_parse_reads_only_what_format_writes(text: str | None, parsed: Progress) -> None:
    assert parse_status(text) == parsed


def test_fraction_is_clamped_and_needs_a_total() -> None:
    assert Progress(3, 10, "").fraction == pytest.approx(0.3)
    assert Progress(12, 10, "").fraction == 1.0
    assert Progress(3, None, "").fraction is None


@pytest.mark.parametrize(
    ("progress", "total", "why"),
    [
        (-1, None, "finite number >= 0"),
        (float("nan"), None, "finite number >= 0"),
        (float("inf"), 10, "finite number >= 0"),
        (1, 0, "total must be > 0"),
        (True, None, "must be a number"),
        ("3", None, "must be a number"),
        (None, 10, "total needs progress"),
        # JSON numbers have no bound (a workflow's report carries them): a ValueError, never
        # an OverflowError
        pytest.param(10**400, None, "integer too large for a float", id="huge-progress"),
        pytest.param(1, 10**400, "integer too large for a float", id="huge-total"),
    ],
)
def test_bad_numbers_are_refused(progress: Any, total: Any, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        format_status("x", progress, total)


# -- the inline throttle -------------------------------------------------------------------------


def test_throttle_sends_the_first_the_due_and_the_final_report() -> None:
    clock = Clock(0.0)
    throttle = ProgressThrottle(interval_s=0.1, clock=clock)
    sent = []
    for at, value in [(0.0, 0), (0.05, 10), (0.1, 20), (0.12, 30), (0.13, 100)]:
        clock.now = at
        if throttle.admit(value, 100):
            sent.append(value)
    assert sent == [0, 20, 100]


def test_throttle_drops_values_that_do_not_increase_and_stops_at_its_limit() -> None:
    clock = Clock(0.0)
    throttle = ProgressThrottle(interval_s=0, limit=3, clock=clock)
    admitted = [throttle.admit(value, None) for value in (5, 5, 4, 6, 7, 8)]
    assert admitted == [True, False, False, True, True, False]
    assert throttle.sent == 3


# -- ctx.report ------------------------------------------------------------------------------------


def _context(**kwargs: Any) -> ToolContext:
    return ToolContext(capabilities=ClientCapabilities.model_validate({}), principal="p", **kwargs)


def test_in_a_task_report_writes_the_formatted_status() -> None:
    statuses: list[str] = []
    ctx = _context(report=statuses.append, task_id="t")
    ctx.report("migrating schema", progress=3, total=10)
    ctx.report("warming caches")
    assert statuses == ["3/10 · migrating schema", "warming caches"]


def test_inline_report_with_numbers_reaches_the_progress_sender() -> None:
    sent: list[tuple[float, float | None, str | None]] = []
    ctx = _context(progress=lambda p, t, m: sent.append((p, t, m)))
    ctx.report("copying", progress=1, total=4)
    ctx.report("no numbers: not a progress notification")
    ctx.report(progress=2)
    assert sent == [(1, 4, "copying"), (2, None, None)]


def test_report_without_a_listener_is_a_no_op_but_still_checks_its_numbers() -> None:
    ctx = _context()
    ctx.report("fine", progress=1, total=2)
    with pytest.raises(ValueError, match="total must be > 0"):
        ctx.report("bad", progress=1, total=0)
