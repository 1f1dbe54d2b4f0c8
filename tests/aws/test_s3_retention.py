"""Which lifecycle folder a large result is written under (aws/s3.py, `retention_folder`).

A task's `expires_at` is its end rounded up to the second (`tasks.model.expiry`), and a result
is usually written a moment after the task was created: a task kept N days must still get the
N-day folder, never the next one up, and never `keep/` (no rule expires it) while its TTL is
within the server's cap. The folders match the template's lifecycle rules
(tests/infra/test_template.py pins `RETENTION_DAYS` to them).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from mcp_tasks_aws.aws import s3
from mcp_tasks_aws.aws.s3 import (
    EXPIRY_ROUNDING_S,
    RETENTION_DAYS,
    S3ResultStore,
    retention_folder,
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
