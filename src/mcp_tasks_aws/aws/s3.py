"""The S3 result store: task results too large for the task item, one object per task."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mypy_boto3_s3.client import S3Client


class S3ResultStore:
    def __init__(self, client: S3Client, bucket: str, prefix: str = "results/") -> None:
        self.client = client
        self.bucket = bucket
        self.prefix = prefix

    def put(self, task_id: str, body: bytes) -> str:
        key = f"{self.prefix}{task_id}.json"
        self.client.put_object(
            Bucket=self.bucket, Key=key, Body=body, ContentType="application/json"
        )
        return key

    def get(self, ref: str) -> bytes:
        return self.client.get_object(Bucket=self.bucket, Key=ref)["Body"].read()
