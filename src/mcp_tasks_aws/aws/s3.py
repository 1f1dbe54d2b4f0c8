"""The S3 result store: task results too large for the task item, one object per task.

Objects live under a prefix that says how long the bucket keeps them, and the template gives
each prefix a lifecycle rule of that many days (`RETENTION_DAYS`): a result is written under
the shortest one that still outlives its task, so it is neither gone while its task is still
readable nor kept for a month after a one-hour task. A task kept for good (no TTL, a
deliberate local choice) writes under `results/keep/`, which no rule expires; so does one
that outlives every rule, which only a lifted TTL cap allows (MCP_TASKS_MAX_TTL_MS).

When S3 expires an object: its creation time plus the rule's days, rounded up to a midnight
(UTC). The rounding is what lets an N-day task (whose `expires_at` is rounded up to the
second) keep the N-day folder, but it gives nothing when creation plus N days falls on a
midnight itself; and S3 dates the creation by its own clock, to the second. So a folder is
taken only if the earliest instant S3 may expire the object (`earliest_expiry`) is not
before the task's end. Just after a UTC midnight that can rule the longest folder out too:
then the write waits (at most `S3_CLOCK_S` plus a second) instead of keeping the result for
good.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Final

from mcp_tasks_aws.aws.errors import client_error_code, transient_as_busy
from mcp_tasks_aws.tasks.exceptions import ResultGone

if TYPE_CHECKING:
    from mypy_boto3_s3.client import S3Client

RETENTION_DAYS: Final = (1, 7, 30)
"""The lifecycle rules of the result bucket (template.yaml), in days from the object's creation."""
KEEP: Final = "keep/"
_DAY_S: Final = 86_400
EXPIRY_ROUNDING_S: Final = 1
"""How far past the end its TTL asks for a task's `expires_at` may lie: `tasks.model.expiry`
rounds the end up to the whole second."""
S3_CLOCK_S: Final = 1
"""How much earlier than this function's clock S3 may date an object it stores: it keeps
the creation time to the second (clocks on both sides are synced far closer than that)."""


def earliest_expiry(days: int, written_at_s: float) -> int:
    """The earliest instant (epoch s) S3 may expire an object written at `written_at_s` under
    a `days`-day rule: its creation plus the days, up to a midnight (UTC; one it falls on
    counts)."""
    created_s = written_at_s - S3_CLOCK_S
    return math.ceil((created_s + days * _DAY_S) / _DAY_S) * _DAY_S


def retention_folder(expires_at: int | None, now_s: float) -> str:
    """The folder whose lifecycle outlives a task expiring at `expires_at` (epoch s).

    The lifetime left is measured without the rounding of `expires_at`: a task kept N days
    whose result is written at once (a fraction of a second after its creation) gets the N-day
    folder, not the next one up, nor `keep/` after the longest; S3's rounding to a midnight
    covers that second, unless it does not (`earliest_expiry`): then the next folder up.
    """
    if expires_at is None:
        return KEEP
    lifetime_s = expires_at - EXPIRY_ROUNDING_S - now_s
    for days in RETENTION_DAYS:
        if days * _DAY_S >= lifetime_s and earliest_expiry(days, now_s) >= expires_at:
            return f"{days}d/"
    return KEEP  # longer than any rule (only when the TTL cap is lifted), or see `write_delay_s`


def write_delay_s(expires_at: int | None, now_s: float) -> float:
    """How long to wait before writing so that a folder outlives the task: 0, except when only
    the midnight rule keeps a task the longest folder would cover out of it (its result
    written within a second or two after a UTC midnight): then until S3 would date the object
    past that midnight."""
    longest = max(RETENTION_DAYS)
    if expires_at is None or retention_folder(expires_at, now_s) != KEEP:
        return 0.0
    if expires_at - EXPIRY_ROUNDING_S - now_s > longest * _DAY_S:
        return 0.0  # beyond every rule: kept for good, waiting would not change that
    # earliest_expiry moves to the next midnight once the creation it assumes is past this one.
    midnight = earliest_expiry(longest, now_s) - longest * _DAY_S
    return max(0.0, midnight + S3_CLOCK_S - now_s) + 0.001


class S3ResultStore:
    def __init__(self, client: S3Client, bucket: str, prefix: str = "results/") -> None:
        self.client = client
        self.bucket = bucket
        self.prefix = prefix

    def put(self, task_id: str, body: bytes, expires_at: int | None) -> str:
        now_s = time.time()
        delay_s = write_delay_s(expires_at, now_s)
        if delay_s:
            time.sleep(delay_s)  # once a day at most, a second or two: see the module's doc
            now_s = time.time()
        key = f"{self.prefix}{retention_folder(expires_at, now_s)}{task_id}.json"
        with transient_as_busy():
            self.client.put_object(
                Bucket=self.bucket, Key=key, Body=body, ContentType="application/json"
            )
        return key

    def get(self, ref: str) -> bytes:
        try:
            with transient_as_busy():
                return self.client.get_object(Bucket=self.bucket, Key=ref)["Body"].read()
        except Exception as exc:
            if client_error_code(exc) in ("NoSuchKey", "404"):
                raise ResultGone(ref) from exc
            raise

    def size(self, ref: str) -> int:
        """The object's length from a HEAD (s3:GetObject allows it): a listen window decides
        whether a result fits before it reads one back."""
        try:
            with transient_as_busy():
                return int(self.client.head_object(Bucket=self.bucket, Key=ref)["ContentLength"])
        except Exception as exc:
            if client_error_code(exc) in ("NoSuchKey", "404", "NotFound"):
                raise ResultGone(ref) from exc
            raise
