"""What a target answered, as the CallToolResult a client reads.

- A value (a function's payload, an execution's output, a JSON response): JSON text, and
  `structuredContent` when the tool declares an `outputSchema` (checked against it: a value
  that does not match is a tool error saying so, never a result that lies about its shape).
- A Lambda function error: `isError`, with the function's error type and message (never its
  stack trace); a failed execution's cause likewise (`cause_message`).
- A non-2xx HTTP answer: `isError`, with the status and the body cut to `BODY_CHARS`.
- Any of these larger than a result may be: `isError` saying so (`targets.tools` passes every
  one through `tools.result_cap.capped`).
"""

from __future__ import annotations

import json
import logging
from typing import Any, Final

from mcp_tasks_aws.tools.specs import text_result

logger = logging.getLogger(__name__)

BODY_CHARS: Final = 1000
ERROR_CHARS: Final = 2000
CAUSE_CHARS: Final = 300
"""Characters of a failed execution's cause a client reads (its first line)."""


def value_result(tool: str, value: Any, output_schema: dict[str, Any] | None) -> dict[str, Any]:
    """The result of a target that answered `value` (parsed JSON, or text)."""
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if output_schema is None:
        return result
    problem = _mismatch(value, output_schema)
    if problem is not None:
        return text_result(
            f"Tool {tool}: its target answered a value that does not match the declared "
            f"outputSchema ({problem})",
            is_error=True,
        )
    result["structuredContent"] = value
    return result


def _mismatch(value: Any, schema: dict[str, Any]) -> str | None:
    if not isinstance(value, dict):
        return f"expected an object, got {type(value).__name__}"
    from jsonschema import Draft202012Validator

    error = next(iter(Draft202012Validator(schema).iter_errors(value)), None)
    if error is None:
        return None
    where = ".".join(str(p) for p in error.absolute_path) or "the result"
    return f"at {where}: {error.validator} failed"


def lambda_error(payload: bytes | str | None) -> tuple[str | None, str | None]:
    """The error type and message of a Lambda function error (`{errorType, errorMessage,
    stackTrace, requestId}`, as Invoke answers it and as a failed `lambda:invoke` state's
    cause carries it); (None, None) when `payload` is not one. The stack trace and the
    request id are never part of what a client reads."""
    try:
        error = json.loads(payload or b"{}")
    except ValueError:
        return None, None
    if not isinstance(error, dict) or not {"errorType", "errorMessage"} & set(error):
        return None, None
    kind = error.get("errorType")
    message = str(error.get("errorMessage") or "").strip()
    return (str(kind) if kind else None), (message or None)


def function_error_result(function: str, payload: bytes) -> dict[str, Any]:
    """A function that raised: its error type and message, as Lambda reports them."""
    kind, message = lambda_error(payload)
    text = f"Lambda function {function} failed: {kind or 'Error'}"
    text += f": {message}" if message else ""
    return text_result(text[:ERROR_CHARS], is_error=True)


def cause_message(cause: str | None) -> str | None:
    """What a client may read of a failed execution's `cause`: the message of a Lambda
    function error (never its stack trace or request id), else the cause's text; either one
    line, cut to `CAUSE_CHARS`. The whole cause is for the log, not for the client."""
    if not cause:
        return None
    _, message = lambda_error(cause)
    text = message if message is not None else cause.strip()
    line = text.splitlines()[0].strip() if text else ""
    if not line:
        return None
    return line[:CAUSE_CHARS] + ("…" if len(line) > CAUSE_CHARS else "")


def http_error_result(method: str, url: str, status: int, body: bytes) -> dict[str, Any]:
    """A non-2xx answer: the status and the start of the body (the query string left out)."""
    shown = url.split("?", 1)[0]
    text = body.decode("utf-8", "replace")
    cut = text[:BODY_CHARS] + ("…" if len(text) > BODY_CHARS else "")
    message = f"HTTP {status} from {method} {shown}" + (f": {cut}" if cut.strip() else "")
    return text_result(message, is_error=True)


def parsed(payload: bytes, content_type: str | None = None) -> Any:
    """A payload as JSON when it is JSON (or said to be), else as text."""
    text = payload.decode("utf-8", "replace")
    if content_type is not None and "json" not in content_type.lower():
        return text
    try:
        return json.loads(text) if text.strip() else None
    except ValueError:
        return text


def body_too_large_result(
    tool: str, method: str, url: str, status: int, limit: int
) -> dict[str, Any]:
    """A 2xx body longer than could be read (`targets.http.MAX_BODY_BYTES`)."""
    shown = url.split("?", 1)[0]
    return text_result(
        f"Tool {tool}: HTTP {status} from {method} {shown}: the body is larger than "
        f"{limit / 1e6:.1f} MB, more than a result may hold (it was not read further)",
        is_error=True,
    )
