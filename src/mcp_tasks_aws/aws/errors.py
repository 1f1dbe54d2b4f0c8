"""Reading AWS errors without importing botocore up front: codes, and which faults are transient.

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


TRANSIENT_CODES: Final = frozenset(
    {
        "InternalServerError",  # DynamoDB
        "InternalFailure",  # any service (the AWS common error)
        "ServiceUnavailable",
        "ServiceException",  # Lambda
        "InternalError",  # S3
    }
)
"""Codes of server-side faults that a later call may not meet (what 5xx answers carry)."""


def is_transient(exc: BaseException) -> bool:
    """Whether `exc` is a fault a retry a moment later may not meet: throttling, a 5xx, a
    connection that failed or timed out (after the SDK's own retries)."""
    from botocore.exceptions import ClientError, HTTPClientError
    from botocore.exceptions import ConnectionError as BotocoreConnectionError

    if isinstance(exc, HTTPClientError | BotocoreConnectionError):  # timeouts, resets
        return True
    if not isinstance(exc, ClientError):
        return False
    code = client_error_code(exc)
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
    return code in THROTTLING_CODES or code in TRANSIENT_CODES or int(status or 0) >= 500


@contextmanager
def transient_as_busy() -> Iterator[None]:
    """Turn a transient fault that outlasted the SDK's retries into `ports.Throttled`.

    The clients retry throttling, 5xx answers and timeouts with bounded, jittered backoff
    first (botocore's standard mode, a few attempts within the function's time budget); what
    still fails is answered as "busy, retry later" (HTTP 503 with Retry-After) rather than as
    an internal error (500). A timeout may hide a write that landed: every write here is a
    guarded move, or a conditional create, so a retried request finds the move made (and
    changes nothing) or makes it; a create whose record landed unheard leaves a task nothing
    runs, which the sweeper ends (`tasks.sweep`).
    """
    try:
        yield
    except Exception as exc:
        if is_transient(exc):
            raise Throttled() from exc
        raise
