"""The S3 result store: task results too large for the task item, one object per task.

Objects live under a prefix that says how long the bucket keeps them, and the template gives
each prefix a lifecycle rule of that many days (`RETENTION_DAYS`): a result is written under
the shortest one that still outlives its task, so it is neither gone while its task is still
readable nor kept for a month after a one-hour task. A task kept for good (no TTL, a
deliberate local choice) writes under `results/keep/`, which no rule expires; so does one
that outlives every rule, which only a lifted TTL cap allows (MCP_TASKS_MAX_TTL_MS).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Final

from mcp_tasks_aws.aws.errors import client_error_code, transient_as_busy
from mcp_tasks_aws.tasks.exceptions import ResultGone

if TYPE_CHECKING:
    from mypy_boto3_s3.client import S3Client

RETENTION_DAYS: Final = (1, 7, 30)
"""The lifecycle rules of the result bucket (template.yaml), in days from the object's creation."""
_DAY_S: Final = 86_400
EXPIRY_ROUNDING_S: Final = 1
"""How far past the end its TTL asks for a task's `expires_at` may lie: `tasks.model.expiry`
rounds the end up to the whole second."""


def retention_folder(expires_at: int | None, now_s: float) -> str:
    """The folder whose lifecycle outlives a task expiring at `expires_at` (epoch s).

    The lifetime left is measured without the rounding of `expires_at`: a task kept N days
    whose result is written at once (a fraction of a second after its creation) gets the N-day
    folder, not the next one up, nor `keep/` after the longest. S3 expires an object at the
    first midnight (UTC) after its rule's days, so the object still outlives that second.
    """
    if expires_at is None:
        return "keep/"
    lifetime_s = expires_at - EXPIRY_ROUNDING_S - now_s
    for days in RETENTION_DAYS:
        if days * _DAY_S >= lifetime_s:
            return f"{days}d/"
    return "keep/"  # longer than any rule: only when the TTL cap is lifted


class S3ResultStore:
    def __init__(self, client: S3Client, bucket: str, prefix: str = "results/") -> None:
        self.client = client
        self.bucket = bucket
        self.prefix = prefix

    def put(self, task_id: str, body: bytes, expires_at: int | None) -> str:
        key = f"{self.prefix}{retention_folder(expires_at, time.time())}{task_id}.json"
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
