"""How long a buffered watch window holds (waits for a change, billing the function): not at all
on tasks that are terminal or parked for input, only while the youngest working task is polled
at its floor interval, and the whole window when a list is watched or the answer streams.

The window's clock moves one poll step per sleep; the domain's clock is the tasks' age.
"""

from __future__ import annotations

import pytest

from mcp_tasks_aws.tasks import transitions as t
from mcp_tasks_aws.tasks.model import floor_interval_age_ms, suggested_poll_interval
from mcp_tasks_aws.tasks.watch import PollWindow, Watch
from support.domain import ALICE, Domain, elicit_request

POLL_MS = 100
WINDOW_MS = 20_000


class CountingFeed:
    """A change feed whose versions never move."""

    def versions(self) -> dict[str, int]:
        return {}

    def bump(self, kind: str) -> None:
        raise AssertionError("not used")


def held_ms(
    domain: Domain, task_ids: list[str], *, keep_open: bool = False, lists: bool = False
) -> int:
    """How long a window on `task_ids` waited (its sleeps), nothing changing meanwhile."""
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    watch = Watch(
        tasks=domain.service,
        feed=CountingFeed() if lists else None,
        owner=ALICE,
        task_ids=task_ids,
        lists=["tools"] if lists else [],
        window=PollWindow(WINDOW_MS, POLL_MS, clock=lambda: now[0], sleep=sleep),
        keep_open=keep_open,
    )
    list(watch.changes())
    return round(now[0] * 1000)


def working(domain: Domain) -> str:
    task_id = domain.create("reporting")
    domain.store.apply(task_id, *t.claim(domain.clock()))
    return task_id


def parked(domain: Domain) -> str:
    task_id = working(domain)
    domain.store.apply(task_id, *t.park(1, {"ask": elicit_request()}, "token", {}, domain.clock()))
    return task_id


def test_a_buffered_window_on_a_task_parked_for_input_ends_after_its_snapshot() -> None:
    domain = Domain(direct=True)
    assert held_ms(domain, [parked(domain)]) == 0


def test_a_streamed_window_on_a_parked_task_still_holds() -> None:
    domain = Domain(direct=True)
    assert held_ms(domain, [parked(domain)], keep_open=True) == WINDOW_MS


def test_a_young_task_is_held_for_until_its_poll_interval_grows() -> None:
    domain = Domain(direct=True)
    task_id = working(domain)
    domain.clock.advance(4_000)  # 4 s old: polled at 500 ms until 10 s
    assert held_ms(domain, [task_id]) == 6_000


def test_an_older_task_gets_a_window_that_only_sends_its_snapshot() -> None:
    domain = Domain(direct=True)
    task_id = working(domain)
    domain.clock.advance(15_000)  # polled every second by now
    assert held_ms(domain, [task_id]) == 0
    assert held_ms(domain, [task_id], keep_open=True) == WINDOW_MS  # streamed: as before


def test_the_youngest_working_task_decides() -> None:
    domain = Domain(direct=True)
    old = working(domain)
    domain.clock.advance(15_000)
    young = working(domain)
    domain.clock.advance(1_000)
    assert held_ms(domain, [old, young, parked(domain)]) == 9_000


def test_a_window_watching_a_list_holds_for_its_whole_length() -> None:
    domain = Domain(direct=True)
    assert held_ms(domain, [parked(domain)], lists=True) == WINDOW_MS


@pytest.mark.parametrize(("floor", "ceiling"), [(500, 10_000), (1_000, 4_000), (500, 800)])
def test_the_floor_lasts_until_the_suggested_interval_first_grows(floor: int, ceiling: int) -> None:
    age = floor_interval_age_ms(floor, ceiling)
    assert age is not None
    assert suggested_poll_interval(age - 1, floor, ceiling) == floor
    assert suggested_poll_interval(age, floor, ceiling) > floor


def test_an_interval_that_never_grows_has_no_end_to_its_floor() -> None:
    assert floor_interval_age_ms(500, None) is None
    assert floor_interval_age_ms(1_000, 1_000) is None
