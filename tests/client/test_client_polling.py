"""The polling cadence as pure code: floor, cap, jitter, the server's changing hint, growth."""

from __future__ import annotations

import random

import pytest

from mcp_tasks_aws.client.polling import PollPolicy

NO_JITTER = PollPolicy(floor=0.1, cap=5.0, default=1.0, growth=2.0, jitter=0.0)


def test_the_servers_hint_is_honoured() -> None:
    backoff = NO_JITTER.backoff()
    assert backoff.next_delay(200) == pytest.approx(0.2)
    assert backoff.next_delay(1500) == pytest.approx(1.5)


def test_a_changed_hint_takes_effect_on_the_next_poll() -> None:
    backoff = NO_JITTER.backoff()
    delays = [backoff.next_delay(ms) for ms in (200, 200, 1000, 3000, 500)]
    assert delays == pytest.approx([0.2, 0.2, 1.0, 3.0, 0.5])


def test_floor_applies_to_tiny_and_zero_hints() -> None:
    backoff = NO_JITTER.backoff()
    assert backoff.next_delay(0) == pytest.approx(0.1)
    assert backoff.next_delay(1) == pytest.approx(0.1)


def test_cap_applies_to_huge_hints() -> None:
    backoff = NO_JITTER.backoff()
    assert backoff.next_delay(3_600_000) == pytest.approx(5.0)


def test_without_a_hint_the_delay_grows_to_the_cap_then_resets_on_a_hint() -> None:
    backoff = NO_JITTER.backoff()
    delays = [backoff.next_delay(None) for _ in range(5)]
    assert delays == pytest.approx([1.0, 2.0, 4.0, 5.0, 5.0])
    assert backoff.next_delay(300) == pytest.approx(0.3)
    assert backoff.next_delay(None) == pytest.approx(1.0)  # growth starts over


def test_jitter_only_lengthens_and_stays_within_its_fraction() -> None:
    policy = PollPolicy(floor=0.1, cap=60.0, jitter=0.25)
    backoff = policy.backoff(random.Random(7))
    delays = [backoff.next_delay(1000) for _ in range(500)]
    assert all(1.0 <= d <= 1.25 for d in delays)
    assert max(delays) - min(delays) > 0.1  # it does spread
    assert len(set(delays)) > 400


def test_jitter_never_exceeds_the_cap() -> None:
    backoff = PollPolicy(floor=0.1, cap=2.0, jitter=1.0).backoff(random.Random(1))
    assert all(backoff.next_delay(1900) <= 2.0 for _ in range(200))


def test_jitter_is_reproducible_with_a_seeded_rng() -> None:
    policy = PollPolicy(jitter=0.5)
    first = policy.backoff(random.Random(42))
    second = policy.backoff(random.Random(42))
    assert [first.next_delay(800) for _ in range(5)] == [second.next_delay(800) for _ in range(5)]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"floor": 0},
        {"floor": 2, "cap": 1},
        {"default": 100, "cap": 10},
        {"growth": 0.5},
        {"jitter": 1.5},
    ],
)
def test_inconsistent_policies_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="PollPolicy"):
        PollPolicy(**kwargs)
