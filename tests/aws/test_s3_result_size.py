"""The result bucket tells a result's size without reading it (a HEAD, which the API
function's s3:GetObject allows): a listen window decides with it whether a result fits."""

from __future__ import annotations

import boto3
import pytest

from mcp_tasks_aws.aws.s3 import S3ResultStore
from mcp_tasks_aws.local.aws import REGION, LocalAws
from mcp_tasks_aws.tasks.exceptions import ResultGone
from support.tasks import now_ms


@pytest.fixture
def results(local_aws: LocalAws) -> S3ResultStore:
    return S3ResultStore(boto3.client("s3", region_name=REGION), local_aws.bucket_name)


def test_the_size_of_a_stored_result_is_its_length_in_bytes(results: S3ResultStore) -> None:
    body = b'{"content":[{"type":"text","text":"' + b"x" * 12_345 + b'"}]}'
    ref = results.put("a" * 32, body, now_ms() // 1000 + 3600)
    assert results.size(ref) == len(body)


def test_the_size_of_a_result_that_is_gone_says_so(results: S3ResultStore) -> None:
    with pytest.raises(ResultGone):
        results.size("results/1d/" + "b" * 32 + ".json")
