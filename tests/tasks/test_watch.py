"""When a watch window ends: on its time limit, at the end of every watched task, and, when the
answer is buffered, once a change the client must hear promptly was sent (never on progress).

Each test drives the in-memory domain one store write per poll, with a clock that moves one
poll step per sleep, so every window is deterministic.
"""

from __future__ import annotations

from collections.abc import Callable

from mcp_tasks_aws.tasks import transitions as t
from mcp_tasks_aws.tasks.watch import PollWindow, TaskChanged, Watch
from support.domain import ALICE, Domain, elicit_request

POLL_MS = 100


def scripted(
    domain: Domain, task_id: str, writes: list[Callable[[], None]], *, keep_open: bool
) -> Watch:
    """A watch on `task_id` whose n-th sleep makes the n-th write (then nothing)."""
    now = [0.0]
    pending = iter(writes)

    def sleep(seconds: float) -> None:
        now[0] += seconds
        write = next(pending, None)
        if write is not None:
            write()

    return Watch(
        tasks=domain.service,
        feed=None,
        owner=ALICE,
        task_ids=[task_id],
        lists=[],
        window=PollWindow(2_000, POLL_MS, clock=lambda: now[0], sleep=sleep),
        keep_open=keep_open,
    )


def statuses(watch: Watch) -> list[tuple[str, str | None]]:
    shown = []
    for change in watch.changes():
        assert isinstance(change, TaskChanged)
        record = change.view.record
        shown.append((record.visible_status, record.status_message))
    return shown


def started(domain: Domain) -> str:
    """A task whose direct leg (leg 1) has claimed it and runs."""
    task_id = domain.create("reporting")
    domain.store.apply(task_id, *t.claim(domain.clock()))
    return task_id


def writes_for(domain: Domain, task_id: str) -> list[Callable[[], None]]:
    """Progress, progress, a question: then the task waits."""
    return [
        lambda: domain.store.apply(task_id, *t.report(1, "1/3", domain.clock())),
        lambda: domain.store.apply(task_id, *t.report(1, "2/3", domain.clock())),
        lambda: domain.store.apply(
            task_id, *t.park(1, {"ask": elicit_request()}, "token", {}, domain.clock())
        ),
    ]


def test_a_buffered_window_sends_progress_and_ends_on_the_question() -> None:
    domain = Domain(direct=True)
    task_id = started(domain)
    watch = scripted(domain, task_id, writes_for(domain, task_id), keep_open=False)
    # Both progress writes are sent without ending the window; the question ends it.
    assert statuses(watch) == [
        ("working", "1/3"),
        ("working", "2/3"),
        ("input_required", "2/3"),
    ]


def test_a_streamed_window_stays_open_after_the_question() -> None:
    domain = Domain(direct=True)
    task_id = started(domain)
    writes = writes_for(domain, task_id)
    writes.append(lambda: domain.store.apply(task_id, *t.complete(2, domain.clock(), result={})))
    watch = scripted(domain, task_id, writes, keep_open=True)
    # The question does not end it: the next leg's completion comes on the same stream,
    # and then nothing more can change.
    shown = statuses(watch)
    assert [status for status, _ in shown] == [
        "working",
        "working",
        "input_required",
        "completed",
    ]


def test_a_streamed_window_with_nothing_new_ends_at_its_time_limit() -> None:
    domain = Domain(direct=True)
    task_id = started(domain)
    watch = scripted(domain, task_id, [], keep_open=True)
    assert statuses(watch) == []


def test_the_poll_window_never_overruns() -> None:
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    steps = list(PollWindow(250, 100, clock=lambda: now[0], sleep=sleep).polls())
    assert len(steps) == 3
    assert [round(s, 3) for s in slept] == [0.1, 0.1, 0.05]
