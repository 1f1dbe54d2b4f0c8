"""Reading AWS error codes without importing botocore up front.

A `ClientError` can only exist once a client was created (and botocore imported), so the
class is looked up when an exception is being handled, not when the adapters are imported:
the API function's inline path never imports botocore at all.
"""

from __future__ import annotations

from typing import Any


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
