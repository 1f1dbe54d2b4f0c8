"""Every AWS call the deployed functions make, and whether it may be sent twice: one table.

A call that times out may have landed: DynamoDB wrote, Lambda ran the function, Step Functions
started the workflow; only the answer was lost. The SDK's retries resend it (botocore's
standard mode retries a read timeout like a throttle). So each call's timeouts and retries are
chosen from what a second copy would do, here, and nowhere else:

- `REPEATABLE`: a second copy changes nothing a first did not (a read; a write idempotent by
  name, token or key; a conditional write, whose second copy meets its own condition). Short
  timeouts, a few retries with jittered backoff: all of one call's attempts fit in the API
  function's 29 s, and what still fails is answered "busy" (`aws.errors.transient_as_busy`).
- `ONCE`: a second copy runs the work again (Invoke RequestResponse, StartSyncExecution). Sent
  once, never retried, and allowed to take as long as the caller can wait: its read timeout is
  set per call from the deadline in force (`tools.deadline.seconds_left`: an inline call's
  deadline, a task leg's end), `read_timeout_s` being the ceiling when none is.

`CALLS` holds one row per operation (and per variant where a parameter changes what the call
is: Lambda's `InvocationType`), saying why its policy fits and what the code does when the
answer to a call that may have landed is lost. `aws.clients` builds one client per service and
policy from this table and sends each call through its row's client; `docs/limits.md` shows
the same table (`markdown()`; tests keep the two equal and check the built clients against
it). A call missing here cannot be made through our clients.

Imported on the first AWS call, never on the inline path: nothing here is needed before then.
"""

from __future__ import annotations

import re
from typing import Any, Final, Literal, NamedTuple


class CallPolicy(NamedTuple):
    """How a client sends calls: timeouts, botocore retry mode, attempts in all (1: never
    resent)."""

    name: str
    connect_timeout_s: float
    read_timeout_s: float
    max_attempts: int
    until_deadline: bool = False
    """The read timeout is the time the caller has left (`read_timeout_s` caps it)."""
    retry_mode: Literal["standard", "legacy", "adaptive"] = "standard"


REPEATABLE: Final = CallPolicy("repeatable", 2.0, 5.0, 3)
ONCE: Final = CallPolicy("once, until the deadline", 2.0, 900.0, 1, until_deadline=True)
"""900 s: the longest a synchronous Invoke may run (Lambda's own limit; Express: 300 s)."""
POLICIES: Final = (REPEATABLE, ONCE)


class Call(NamedTuple):
    """One row: an operation, its policy, why, and what a lost answer leads to."""

    service: str
    operation: str
    policy: CallPolicy
    why: str
    answer_lost: str
    variant: str | None = None
    """The value of the service's variant parameter (`VARIANT_PARAMETER`) this row is for."""


VARIANT_PARAMETER: Final = {("lambda", "Invoke"): ("InvocationType", "RequestResponse")}
"""(service, operation) -> the parameter that picks the row, and its value when not given."""

_READ = "a read"
_NONCE_READ_BACK = (
    "each conditional write sets `lastWrite` to a nonce of its own, and a refusal returns the "
    "item (ALL_OLD): the resent copy, refused, finds its nonce there and reports the write "
    "made (`aws.dynamodb`, `aws.sessions`)"
)
_READ_AGAIN = "nothing changed: read again"

CALLS: Final = (
    Call("dynamodb", "GetItem", REPEATABLE, _READ + " (consistent)", _READ_AGAIN),
    Call(
        "dynamodb",
        "BatchGetItem",
        REPEATABLE,
        _READ + " (consistent); unprocessed keys are asked again",
        _READ_AGAIN,
    ),
    Call("dynamodb", "Query", REPEATABLE, _READ + " (an index)", _READ_AGAIN),
    Call(
        "dynamodb",
        "PutItem",
        REPEATABLE,
        "conditional creates (a task: `attribute_not_exists`; a 2025-11-25 call, a question "
        "hold: their guards): a second copy meets its own condition",
        "a refusal returns the item (ALL_OLD): a task's create finds the very item it wrote; "
        "a session write finds its own nonce (`lastWrite`, as below): either way it landed "
        "and is reported made (`aws.dynamodb`, `aws.sessions`)",
    ),
    Call(
        "dynamodb",
        "UpdateItem",
        REPEATABLE,
        "guarded moves (conditional); the list-change counter's ADD, whose second copy only "
        "announces the same change twice",
        _NONCE_READ_BACK + "; a counter bumped twice is harmless",
    ),
    Call(
        "lambda",
        "Invoke",
        REPEATABLE,
        "the worker's first leg, queued (Event): a second copy is a second event, which "
        "the leg's claim turns into a no-op; a durable task's start, named "
        "(DurableExecutionName, the task id): a second copy answers the same execution",
        "the event may be queued: the retry queues another, claimed once; a durable start's "
        "retry finds its execution (DurableExecutionAlreadyStartedException: started)",
        variant="Event",
    ),
    Call(
        "lambda",
        "Invoke",
        ONCE,
        "a declared Lambda target, run while the caller waits (RequestResponse): a second "
        "copy runs the function again",
        "unknowable (the function may have run, may be running): the call reports that the "
        "target did not answer in time, and is never resent",
        variant="RequestResponse",
    ),
    Call(
        "lambda",
        "SendDurableExecutionCallbackSuccess",
        REPEATABLE,
        "once per callback id: the first completion wins, a second copy changes nothing",
        "the retry answers that the callback is gone (ResourceNotFoundException and kin): on a "
        "resent copy that is read as delivered, since the first copy may have completed it "
        "(`aws.durable`); the answers are on the task item first",
    ),
    Call(
        "lambda",
        "StopDurableExecution",
        REPEATABLE,
        "stopping a stopped execution changes nothing",
        "the retry finds the execution stopped, changing nothing",
    ),
    Call(
        "lambda",
        "ListDurableExecutionsByFunction",
        REPEATABLE,
        _READ + " (a durable task's execution, by its name)",
        _READ_AGAIN,
    ),
    Call(
        "stepfunctions",
        "StartExecution",
        REPEATABLE,
        "idempotent by name (the task id): a second copy answers the same execution",
        "the retry answers the same execution, or ExecutionAlreadyExists, taken as started",
    ),
    Call(
        "stepfunctions",
        "StartSyncExecution",
        ONCE,
        "a declared Express workflow, run while the caller waits: a second copy runs it "
        "again (Express executions are not idempotent)",
        "unknowable: reported as not answered in time, never resent",
    ),
    Call(
        "stepfunctions",
        "StopExecution",
        REPEATABLE,
        "stopping a stopped execution changes nothing",
        "the retry answers ExecutionNotRunning, ignored",
    ),
    Call("stepfunctions", "DescribeExecution", REPEATABLE, _READ, _READ_AGAIN),
    Call(
        "stepfunctions",
        "SendTaskSuccess",
        REPEATABLE,
        "once per task token: the first use wins, a second copy changes nothing",
        "the retry answers TaskTimedOut or InvalidToken: on a resent copy (botocore's "
        "RetryAttempts) that is read as delivered, not as a stale token, since the first "
        "copy may have spent the token (`aws.stepfunctions`); every caller made what it "
        "sends durable on the task item first",
    ),
    Call(
        "stepfunctions",
        "SendTaskFailure",
        REPEATABLE,
        "once per task token, as SendTaskSuccess",
        "as SendTaskSuccess; a cancel that reads it stale stops the execution instead",
    ),
    Call(
        "stepfunctions",
        "SendTaskHeartbeat",
        REPEATABLE,
        "asks whether a workflow's question still waits: it changes nothing but the waiting "
        "state's heartbeat clock, which a second copy resets again",
        "the retry answers the same (a dead token: TaskTimedOut or TaskDoesNotExist)",
    ),
    Call("secretsmanager", "GetSecretValue", REPEATABLE, _READ, _READ_AGAIN),
    Call(
        "s3",
        "PutObject",
        REPEATABLE,
        "a result under its task's key: a second copy writes the same bytes",
        "the retry writes the same object",
    ),
    Call("s3", "GetObject", REPEATABLE, _READ, _READ_AGAIN),
    Call("s3", "HeadObject", REPEATABLE, _READ, _READ_AGAIN),
)


def method_name(operation: str) -> str:
    """The client method of an operation (`GetItem` -> `get_item`), as botocore names it for
    the operations in this table."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", operation).lower()


_BY_METHOD: Final = {(call.service, method_name(call.operation)): call.operation for call in CALLS}
_ROWS: Final[dict[tuple[str, str, str | None], Call]] = {
    (call.service, call.operation, call.variant): call for call in CALLS
}


def operation_of(service: str, method: str) -> str | None:
    """The table's operation behind a client method name, None if the table has none."""
    return _BY_METHOD.get((service, method))


def policies_of(service: str, operation: str) -> set[CallPolicy]:
    return {call.policy for call in CALLS if (call.service, call.operation) == (service, operation)}


def row_for(service: str, operation: str, params: dict[str, Any]) -> Call:
    """The row a call with `params` falls under (KeyError: a call the table lacks)."""
    variant = None
    chooser = VARIANT_PARAMETER.get((service, operation))
    if chooser is not None:
        parameter, default = chooser
        variant = str(params.get(parameter, default))
    return _ROWS[(service, operation, variant)]


def markdown() -> str:
    """The table as docs/limits.md shows it."""
    lines = [
        "| call | connect / read timeout | retries | why | if the answer is lost |",
        "| --- | --- | --- | --- | --- |",
    ]
    for call in CALLS:
        name = f"{call.service} `{call.operation}`" + (f" ({call.variant})" if call.variant else "")
        policy = call.policy
        read = (
            f"the deadline (at most {policy.read_timeout_s:g} s)"
            if policy.until_deadline
            else f"{policy.read_timeout_s:g} s"
        )
        retries = (
            "never (1 attempt)"
            if policy.max_attempts == 1
            else f"{policy.retry_mode}, {policy.max_attempts} attempts"
        )
        timeouts = f"{policy.connect_timeout_s:g} s / {read}"
        lines.append(f"| {name} | {timeouts} | {retries} | {call.why} | {call.answer_lost} |")
    return "\n".join(lines) + "\n"
