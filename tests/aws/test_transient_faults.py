"""Which AWS faults answer "busy, retry later" (`ports.Throttled`, HTTP 503 with Retry-After):
throttling, 5xx answers and timeouts, after the SDK's retries; never a refusal that a retry
would meet again (a failed condition, a bad request)."""

from __future__ import annotations

import pytest
from botocore.exceptions import (
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)

from mcp_tasks_aws.aws.errors import transient_as_busy
from mcp_tasks_aws.tasks.ports import Throttled


def client_error(code: str, status: int) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": "x"}, "ResponseMetadata": {"HTTPStatusCode": status}},
        "AnyOperation",
    )


def _name(fault: Exception) -> str:
    response = getattr(fault, "response", None) or {}
    return f"{type(fault).__name__}:{response.get('Error', {}).get('Code', '')}"


@pytest.mark.parametrize(
    "fault",
    [
        client_error("ThrottlingException", 400),
        client_error("ProvisionedThroughputExceededException", 400),
        client_error("TooManyRequestsException", 429),
        client_error("InternalServerError", 500),
        client_error("ServiceUnavailable", 503),
        client_error("ServiceException", 500),  # Lambda
        client_error("SomethingNew", 502),  # any 5xx
        ReadTimeoutError(endpoint_url="https://dynamodb"),
        ConnectTimeoutError(endpoint_url="https://dynamodb"),
        EndpointConnectionError(endpoint_url="https://dynamodb"),
    ],
    ids=_name,
)
def test_transient_faults_are_busy(fault: Exception) -> None:
    with pytest.raises(Throttled) as raised, transient_as_busy():
        raise fault
    assert raised.value.__cause__ is fault


@pytest.mark.parametrize(
    "fault",
    [
        client_error("ConditionalCheckFailedException", 400),
        client_error("ValidationException", 400),
        client_error("ExecutionAlreadyExists", 400),
        ValueError("not AWS"),
    ],
)
def test_refusals_are_left_as_they_are(fault: Exception) -> None:
    with pytest.raises(type(fault)) as raised, transient_as_busy():
        raise fault
    assert raised.value is fault
