"""Which lifecycle folder a large result is written under (aws/s3.py, `retention_folder`).

A task's `expires_at` is its end rounded up to the second (`tasks.model.expiry`), and a result
is usually written a moment after the task was created: a task kept N days must still get the
N-day folder, never the next one up, and never `keep/` (no rule expires it) while its TTL is
within the server's cap. The folders match the template's lifecycle rules
(tests/infra/test_template.py pins `RETENTION_DAYS` to them). And the object outlives its
task even where S3's rounding to a midnight gives nothing: creation + N days on a midnight.
"""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import pytest

from mcp_tasks_aws.aws import s3
from mcp_tasks_aws.aws.s3 import (
    EXPIRY_ROUNDING_S,
    RETENTION_DAYS,
    S3ResultStore,
    retention_folder,
    write_delay_s,
)
from mcp_tasks_aws.config import Settings
from mcp_tasks_aws.tasks.model import expiry

DAY_MS = 86_400_000
# Creation instants on and off the whole second: the rounding of `expiry` is 0 to 999 ms.
CREATED_AT_MS = (1_700_000_000_000, 1_700_000_000_001, 1_700_000_000_500, 1_700_000_000_999)
# When the result is written, after creation: at once, within the second, later.
WRITTEN_AFTER_MS = (0, 1, 300, 999, 1_000, 60_000, 3_600_000)
MAX_TTL_MS = Settings().max_ttl_ms or 0


def folder_days(folder: str) -> int:
    return int(folder.removesuffix("d/"))


@pytest.mark.parametrize("days", RETENTION_DAYS)
@pytest.mark.parametrize("created_at_ms", CREATED_AT_MS)
@pytest.mark.parametrize("written_after_ms", WRITTEN_AFTER_MS)
def test_a_task_kept_n_days_writes_under_the_n_day_folder(
    days: int, created_at_ms: int, written_after_ms: int
) -> None:
    # Before the fix: the rounded-up second made a 1-day task 7d/, 7 days 30d/, 30 days keep/.
    expires_at = expiry(created_at_ms, days * DAY_MS)
    now_s = (created_at_ms + written_after_ms) / 1000
    assert retention_folder(expires_at, now_s) == f"{days}d/"


def ttls_up_to_the_cap() -> list[int]:
    """TTLs around every rule's boundary and up to the longest the server allows."""
    ttls = {60_000, 3_600_000, MAX_TTL_MS}
    for days in RETENTION_DAYS:
        for delta_ms in (-1_000, -1, 0, 1, 999, 1_000, 1_001, 3_600_000):
            ttls.add(days * DAY_MS + delta_ms)
    return sorted(ttl for ttl in ttls if 0 < ttl <= MAX_TTL_MS)


@pytest.mark.parametrize("ttl_ms", ttls_up_to_the_cap())
def test_a_result_outlives_its_task_by_at_most_one_folder_step(ttl_ms: int) -> None:
    for created_at_ms in CREATED_AT_MS:
        expires_at = expiry(created_at_ms, ttl_ms)
        assert expires_at is not None
        for written_after_ms in WRITTEN_AFTER_MS:
            now_s = (created_at_ms + written_after_ms) / 1000
            folder = retention_folder(expires_at, now_s)
            assert folder != "keep/", (ttl_ms, created_at_ms, written_after_ms)
            days = folder_days(folder)
            left_s = expires_at - now_s
            # Kept as long as the task is readable, but for the second `expiry` rounds up
            # (S3 expires objects at the first midnight after the rule's days: later still).
            assert days * 86_400 + EXPIRY_ROUNDING_S >= left_s
            # And the next shorter folder would not do: no more than one step too long.
            shorter = [d for d in RETENTION_DAYS if d < days]
            if shorter:
                assert max(shorter) * 86_400 + EXPIRY_ROUNDING_S < left_s


def test_the_longest_folder_covers_the_longest_ttl_the_server_allows() -> None:
    assert MAX_TTL_MS > 0
    assert max(RETENTION_DAYS) * DAY_MS >= MAX_TTL_MS


@pytest.mark.parametrize(
    ("expires_in_s", "folder"),
    [
        (None, "keep/"),  # no TTL: kept for good
        (max(RETENTION_DAYS) * 86_400 + EXPIRY_ROUNDING_S, f"{max(RETENTION_DAYS)}d/"),
        (max(RETENTION_DAYS) * 86_400 + EXPIRY_ROUNDING_S + 1, "keep/"),  # cap lifted
        (400 * 86_400, "keep/"),
    ],
)
def test_only_a_task_beyond_every_rule_is_kept_for_good(
    expires_in_s: int | None, folder: str
) -> None:
    now_s = 1_700_000_000.25
    expires_at = None if expires_in_s is None else int(now_s) + expires_in_s
    assert retention_folder(expires_at, now_s) == folder


class RecordingS3:
    def __init__(self) -> None:
        self.keys: list[str] = []

    def put_object(self, **call: Any) -> None:
        self.keys.append(call["Key"])


def test_the_store_writes_a_thirty_day_result_where_a_rule_expires_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    created_at_ms = 1_700_000_000_400
    monkeypatch.setattr(s3, "time", SimpleNamespace(time=lambda: created_at_ms / 1000 + 0.05))
    client = RecordingS3()
    store = S3ResultStore(client, "bucket")  # type: ignore[arg-type]
    key = store.put("t" * 32, b"{}", expiry(created_at_ms, 30 * DAY_MS))
    assert key == f"results/30d/{'t' * 32}.json"
    assert client.keys == [key]


# -- the midnight boundary (issue 26, item 17) ---------------------------------------------------

MIDNIGHT_S = 19_676 * 86_400  # 2023-11-15T00:00:00Z


def s3_expires_at(days: int, written_at_s: float) -> int:
    """When S3 may expire an object written at `written_at_s` under a `days`-day rule, at the
    earliest: it dates the creation to the second and rounds creation + days up to a
    midnight, which a time falling on one already is (AWS: "rounded up to the next day
    midnight UTC")."""
    created_s = math.floor(written_at_s)
    due = created_s + days * 86_400
    return -(-due // 86_400) * 86_400


def instants_around_midnight() -> list[float]:
    return [MIDNIGHT_S + tenth / 10 for tenth in range(-30, 31)]


@pytest.mark.parametrize("ttl_ms", ttls_up_to_the_cap())
def test_the_object_outlives_its_task_around_a_midnight(ttl_ms: int) -> None:
    # Before the fix: a task created in the first second after a midnight, kept N days and
    # written within that second, got the N-day folder, which S3 may expire a second before
    # the task's end (creation + N days is itself a midnight: nothing to round up).
    for written_s in instants_around_midnight():
        for created_before_ms in (0, 1, 100, 999):
            created_ms = int(written_s * 1000) - created_before_ms
            expires_at = expiry(created_ms, ttl_ms)
            assert expires_at is not None
            delay_s = write_delay_s(expires_at, written_s)
            assert 0 <= delay_s <= 2.5, (ttl_ms, written_s)
            at_s = written_s + delay_s
            folder = retention_folder(expires_at, at_s)
            assert folder != "keep/", (ttl_ms, written_s, created_before_ms)
            due = s3_expires_at(folder_days(folder), at_s)
            assert due >= expires_at, (ttl_ms, written_s, created_before_ms, folder)


@pytest.mark.parametrize("days", RETENTION_DAYS)
def test_a_task_created_just_after_midnight_moves_up_or_waits(days: int) -> None:
    created_ms = MIDNIGHT_S * 1000 + 300
    written_s = MIDNIGHT_S + 0.4
    expires_at = expiry(created_ms, days * DAY_MS)
    assert expires_at == MIDNIGHT_S + days * 86_400 + 1
    longer = [d for d in RETENTION_DAYS if d > days]
    if longer:
        assert retention_folder(expires_at, written_s) == f"{min(longer)}d/"
        assert write_delay_s(expires_at, written_s) == 0
    else:  # the longest folder: wait until S3 dates the object past the midnight
        assert retention_folder(expires_at, written_s) == "keep/"
        delay_s = write_delay_s(expires_at, written_s)
        assert 0 < delay_s <= 2.5
        assert retention_folder(expires_at, written_s + delay_s) == f"{days}d/"


def test_the_store_waits_out_the_midnight_rather_than_keep_a_result_for_good(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = SimpleNamespace(now=MIDNIGHT_S + 0.4, slept=[])

    def sleep(seconds: float) -> None:
        clock.slept.append(seconds)
        clock.now += seconds

    monkeypatch.setattr(s3, "time", SimpleNamespace(time=lambda: clock.now, sleep=sleep))
    client = RecordingS3()
    expires_at = expiry(MIDNIGHT_S * 1000 + 300, 30 * DAY_MS)
    assert expires_at is not None
    key = S3ResultStore(client, "bucket").put("t" * 32, b"{}", expires_at)  # type: ignore[arg-type]
    assert key == f"results/30d/{'t' * 32}.json"
    assert len(clock.slept) == 1
    assert s3_expires_at(30, clock.now) >= expires_at
