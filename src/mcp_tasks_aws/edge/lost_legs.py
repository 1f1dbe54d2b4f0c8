"""Lambda's on-failure destination records, as the reconciler receives them.

The worker's asynchronous invokes (direct legs) are never retried; when one fails, Lambda
invokes the reconciler with a record of it (template.yaml, `EventInvokeConfig`):

    {"version": "1.0", "timestamp": "...",
     "requestContext": {"requestId": "...", "functionArn": "...", "approximateInvokeCount": 1,
                        "condition": "RetriesExhausted" | "EventAgeExceeded" | ...},
     "requestPayload": {"taskId": "..."},                 # the event the leg was given
     "responseContext": {"statusCode": 200, "functionError": "Unhandled", ...},
     "responsePayload": {"errorType": "...", "errorMessage": "..."}}

Only the task id and why the leg was lost are read; the error's text (which may quote the
tool's data) is never used.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

LostReason = Literal["timeout", "crash", "expired"]


class LostDirectLeg(NamedTuple):
    task_id: str
    reason: LostReason


def lost_direct_leg(event: dict[str, Any]) -> LostDirectLeg | None:
    """The lost direct leg a destination record reports, or None for any other event."""
    context = event.get("requestContext")
    payload = event.get("requestPayload")
    if not (isinstance(context, dict) and isinstance(payload, dict)):
        return None
    task_id = payload.get("taskId")
    if not isinstance(task_id, str) or not task_id:
        return None
    if context.get("condition") == "EventAgeExceeded":
        return LostDirectLeg(task_id, "expired")
    response = event.get("responsePayload")
    error = response if isinstance(response, dict) else {}
    timed_out = error.get("errorType") == "Sandbox.Timedout" or "Task timed out" in str(
        error.get("errorMessage", "")
    )
    return LostDirectLeg(task_id, "timeout" if timed_out else "crash")
