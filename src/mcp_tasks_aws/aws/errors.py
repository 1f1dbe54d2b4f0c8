"""Reading AWS error codes without importing botocore up front.

A `ClientError` can only exist once a client was created (and botocore imported), so the
class is looked up when an exception is being handled, not when the adapters are imported:
the API function's inline path never imports botocore at all.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

from mcp_tasks_aws.tasks.ports import Throttled

THROTTLING_CODES: Final = frozenset(
    {
        "ThrottlingException",  # DynamoDB, Step Functions
        "Throttling",
        "ProvisionedThroughputExceededException",  # DynamoDB
        "RequestLimitExceeded",  # DynamoDB account-level
        "TooManyRequestsException",  # Lambda
        "SlowDown",  # S3
    }
)


def client_error_code(exc: BaseException) -> str | None:
    """The AWS error code of a botocore ClientError; None for any other exception."""
    from botocore.exceptions import ClientError

    if isinstance(exc, ClientError):
        return str(exc.response.get("Error", {}).get("Code", ""))
    return None


def client_error_item(exc: BaseException) -> dict[str, Any] | None:
    """The item DynamoDB returned with a failed condition (ReturnValuesOnConditionCheckFailure)."""
    item = getattr(exc, "response", {}).get("Item")
    return item if isinstance(item, dict) else None


@contextmanager
def throttling_as_busy() -> Iterator[None]:
    """Turn a throttling error that outlasted the SDK's retries into `ports.Throttled`.

    The clients retry throttling with bounded, jittered backoff first (botocore's standard
    mode, a few attempts within the function's time budget); what still fails is answered
    as "busy, retry later" rather than as an internal error.
    """
    try:
        yield
    except Exception as exc:
        if client_error_code(exc) in THROTTLING_CODES:
            raise Throttled() from exc
        raise
