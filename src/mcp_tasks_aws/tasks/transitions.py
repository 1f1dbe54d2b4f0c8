"""The rules of a task's life, as data: every move a task can make, who may make it, from where.

This is the one place to read to answer "what happens when X races Y". A store applies a move
as one atomic step: it checks the move's :class:`Guard` against the stored record and, only if
it holds, writes the move's :class:`Changes`. DynamoDB does that with a condition expression
(`aws.dynamodb`), the in-memory twin with a lock (`tasks.memory`); both must agree with the pure
functions :func:`allows` and :func:`applied` at the bottom of this module.

    move      from          to               fenced by    writes
    --------  ------------  ---------------  -----------  -----------------------------------
    answer    waiting       (unchanged)      owner, keys  answers; answered keys leave
                                                          inputRequests
    refuse    waiting       failed           owner, key   error (the client answered a question
                                                          with an error, 2025-11-25)
    cancel    active        cancelled        owner        statusMessage
    report    active        working          leg          statusMessage
    park      active        input_required   leg          inputRequests, taskToken, leg + 1,
                                                          askedKeys, step results
    complete  active        completed        leg          result (or its S3 ref), whether it is
                                                          a tool error; the last progress
                                                          message is cleared
    fail      active        failed           leg          error
    lose      active        failed           (none)       error (the reconciler)

    active = working or input_required; waiting = input_required.

Consequences worth knowing by heart:
- **Terminal is final.** No move starts from completed, failed or cancelled, so whichever of
  cancel, complete, fail or lose lands first wins and every later one is refused.
- **Cancel is the durable marker.** `cancelled` is terminal: a leg still running loses its next
  write (report, park, complete) and learns it was cancelled.
- **Legs are fenced.** A leg may write only while the record's `leg` is the one it read; `park`
  moves the leg on, so a duplicate or stale leg (a retried invoke, a timed-out one still
  running) can record nothing.
- **First answer wins.** `answer` needs every key it answers to be outstanding; an answered key
  leaves `inputRequests`, so a second or late answer for it is refused, and an answer to a key
  that was never asked is never stored. `refuse` (a 2025-11-25 client answering a question with
  a JSON-RPC error) needs its key outstanding too, so it and an answer to the same key cannot
  both land; like `cancel`, it keeps the requests and the token so the execution is released.
- **Owner and expiry.** Moves a client makes (answer, cancel) hold only for the task's owner and
  while it has not expired; anyone else's move is refused exactly like a missing task's.
- **Shown status.** `input_required` with nothing outstanding reads as `working`: the last answer
  arrived and the next leg is starting (:func:`shown_status`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple

from mcp_tasks_aws.protocol.names import ACTIVE_STATUSES, TaskStatus

if TYPE_CHECKING:
    from mcp_tasks_aws.tasks.model import TaskRecord

# The records below are NamedTuples: immutable, and several times cheaper to define than frozen
# dataclasses, which matters because every cold start defines them.

ACTIVE: Final = ACTIVE_STATUSES
WAITING: Final = frozenset({"input_required"})

Fence = Literal["owner", "leg"] | None


class Move(NamedTuple):
    """One allowed move: the statuses it may start from, the status it ends in, who may make it."""

    sources: frozenset[str]
    target: TaskStatus | None
    fenced_by: Fence


MOVES: Final[Mapping[str, Move]] = {
    "answer": Move(WAITING, None, "owner"),
    "refuse": Move(WAITING, "failed", "owner"),
    "cancel": Move(ACTIVE, "cancelled", "owner"),
    "report": Move(ACTIVE, "working", "leg"),
    "park": Move(ACTIVE, "input_required", "leg"),
    "complete": Move(ACTIVE, "completed", "leg"),
    "fail": Move(ACTIVE, "failed", "leg"),
    "lose": Move(ACTIVE, "failed", None),
}


def shown_status(status: TaskStatus, outstanding: bool) -> TaskStatus:
    """The status a client sees: waiting with nothing outstanding means the next leg is starting."""
    return "working" if status == "input_required" and not outstanding else status


# -- guards ------------------------------------------------------------------------------------


class Outstanding(NamedTuple):
    """A key the move answers: it must be outstanding, asked by one of `methods` (any if None)."""

    key: str
    methods: frozenset[str] | None = None


class Guard(NamedTuple):
    """What must hold of the stored record, all at once, for a move to be written."""

    statuses: frozenset[str]
    owner: str | None = None
    leg: int | None = None
    alive_at_s: int | None = None
    """The task has not expired at this epoch second (unlimited tasks never expire)."""
    outstanding: tuple[Outstanding, ...] = ()


# -- changes -----------------------------------------------------------------------------------
#
# A move writes a few field-level operations; every move also stamps `updated_at` and bumps
# `version`. Field names are the record's (`tasks.model.TaskRecord`); the DynamoDB adapter maps
# them to attribute names.

Field = Literal[
    "status", "status_message", "task_token", "result", "result_ref", "error", "tool_error"
]
MapField = Literal["answers", "input_requests"]


class Put(NamedTuple):
    """Set a field."""

    field: Field | Literal["input_requests"]
    value: Any


class Drop(NamedTuple):
    """Remove an optional field."""

    field: Field


class PutEntry(NamedTuple):
    """Set one entry of a map field."""

    field: MapField
    key: str
    value: Any


class DropEntry(NamedTuple):
    """Remove one entry of a map field (absent entries are fine)."""

    field: MapField
    key: str


class AddAsked(NamedTuple):
    """Add keys to `asked_keys`, the keys whose answers a replayed leg may use."""

    keys: frozenset[str]


class NextLeg(NamedTuple):
    """Move `leg` on by one."""

    steps: int = 1


Op = Put | Drop | PutEntry | DropEntry | AddAsked | NextLeg


class Changes(NamedTuple):
    """What a move writes, at `now_ms`."""

    move: str
    now_ms: int
    ops: tuple[Op, ...] = ()


# -- the moves, built --------------------------------------------------------------------------


def _guard(move: str, **parts: Any) -> Guard:
    return Guard(statuses=MOVES[move].sources, **parts)


def _to(move: str) -> tuple[Op, ...]:
    target = MOVES[move].target
    return () if target is None else (Put("status", target),)


def answer(
    owner: str, answers: Mapping[str, tuple[Any, frozenset[str] | None]], now_ms: int
) -> tuple[Guard, Changes]:
    """Record answers (`key -> (answer, methods it may answer)`) for outstanding requests."""
    guard = _guard(
        "answer",
        owner=owner,
        alive_at_s=now_ms // 1000,
        outstanding=tuple(Outstanding(key, methods) for key, (_, methods) in answers.items()),
    )
    ops: list[Op] = []
    for key, (value, _) in answers.items():
        ops += [PutEntry("answers", key, value), DropEntry("input_requests", key)]
    return guard, Changes("answer", now_ms, tuple(ops))


def refuse(
    owner: str, key: str, method: str, error: dict[str, Any], now_ms: int
) -> tuple[Guard, Changes]:
    """The client answered the outstanding `key` (a `method` request) with a JSON-RPC error:
    the task fails with `error`. Requests and token stay, so the execution can be released."""
    guard = _guard(
        "refuse",
        owner=owner,
        alive_at_s=now_ms // 1000,
        outstanding=(Outstanding(key, frozenset({method})),),
    )
    ops = (
        *_to("refuse"),
        Put("error", error),
        Put("status_message", str(error.get("message", ""))),
    )
    return guard, Changes("refuse", now_ms, ops)


CANCELLED_MESSAGE: Final = "Cancelled at the client's request"


def cancel(owner: str, now_ms: int) -> tuple[Guard, Changes]:
    """The durable cancel marker. Requests and token stay, so the execution can be released."""
    guard = _guard("cancel", owner=owner, alive_at_s=now_ms // 1000)
    return guard, Changes(
        "cancel", now_ms, (*_to("cancel"), Put("status_message", CANCELLED_MESSAGE))
    )


def report(leg: int, message: str, now_ms: int) -> tuple[Guard, Changes]:
    """A running leg's status message."""
    ops = (*_to("report"), Put("status_message", message))
    return _guard("report", leg=leg), Changes("report", now_ms, ops)


def park(
    leg: int,
    requests: Mapping[str, dict[str, Any]],
    task_token: str,
    steps: Mapping[str, Any],
    now_ms: int,
) -> tuple[Guard, Changes]:
    """The leg needs input: store the requests and the token that resumes the execution.

    A key asked now is asked for the first time, so an answer sent before it was asked is
    dropped; the results of steps (`ctx.step`) first run in this leg are kept for the replay.
    """
    ops: list[Op] = [
        *_to("park"),
        Put("input_requests", dict(requests)),
        Put("task_token", task_token),
        NextLeg(),
        AddAsked(frozenset({*requests, *steps})),
    ]
    ops += [DropEntry("answers", key) for key in requests]
    ops += [PutEntry("answers", key, value) for key, value in steps.items()]
    return _guard("park", leg=leg), Changes("park", now_ms, tuple(ops))


def _ending(move: str, now_ms: int, ops: tuple[Op, ...]) -> Changes:
    return Changes(move, now_ms, (*_to(move), Put("input_requests", {}), Drop("task_token"), *ops))


def complete(
    leg: int,
    now_ms: int,
    *,
    result: dict[str, Any] | None = None,
    result_ref: str | None = None,
    tool_error: bool | None = None,
) -> tuple[Guard, Changes]:
    """The tool returned: its result, inline or as a reference to where it was offloaded.

    Whether the result is a tool error (`isError: true`) is kept beside it, where a listing
    can see it without the result (2025-11-25 shows such a task as `failed`); it is read from
    `result`, or given with `result_ref`. A progress message the leg reported ("migrating
    schema") would be stale now: it goes.
    """
    outcome = Put("result_ref", result_ref) if result_ref is not None else Put("result", result)
    if tool_error is None:
        tool_error = result is not None and result.get("isError") is True
    ops: tuple[Op, ...] = (outcome, Drop("status_message"))
    if tool_error:
        ops += (Put("tool_error", True),)
    return _guard("complete", leg=leg), _ending("complete", now_ms, ops)


def fail(leg: int, error: dict[str, Any], now_ms: int) -> tuple[Guard, Changes]:
    """A protocol-level fault ended the leg: the task fails with this JSON-RPC error."""
    ops = (Put("error", error), Put("status_message", str(error.get("message", ""))))
    return _guard("fail", leg=leg), _ending("fail", now_ms, ops)


def lose(error: dict[str, Any], now_ms: int) -> tuple[Guard, Changes]:
    """The execution ended without ending the task (crash, timeout, abort)."""
    ops = (Put("error", error), Put("status_message", str(error.get("message", ""))))
    return _guard("lose"), _ending("lose", now_ms, ops)


# -- the semantics every store must honour -----------------------------------------------------


def allows(guard: Guard, record: TaskRecord) -> bool:
    """Whether `guard` holds for `record` (what a store's atomic check must decide)."""
    if record.status not in guard.statuses:
        return False
    if guard.owner is not None and record.owner != guard.owner:
        return False
    if guard.leg is not None and record.leg != guard.leg:
        return False
    expires = record.expires_at
    if guard.alive_at_s is not None and expires is not None and expires <= guard.alive_at_s:
        return False
    for wanted in guard.outstanding:
        request = record.input_requests.get(wanted.key)
        if request is None:
            return False
        if wanted.methods is not None and request.get("method") not in wanted.methods:
            return False
    return True


def applied(record: TaskRecord, changes: Changes) -> TaskRecord:
    """`record` after `changes` (what a store writes once the guard held)."""
    values: dict[str, Any] = {"updated_at": changes.now_ms, "version": record.version + 1}
    maps = {"answers": dict(record.answers), "input_requests": dict(record.input_requests)}
    for op in changes.ops:
        if isinstance(op, Put):
            if op.field == "input_requests":
                maps["input_requests"] = dict(op.value)
            else:
                values[op.field] = op.value
        elif isinstance(op, Drop):
            values[op.field] = None
        elif isinstance(op, PutEntry):
            maps[op.field][op.key] = op.value
        elif isinstance(op, DropEntry):
            maps[op.field].pop(op.key, None)
        elif isinstance(op, AddAsked):
            values["asked_keys"] = record.asked_keys | op.keys
        else:
            values["leg"] = record.leg + op.steps
    values.update(maps)
    return replace(record, **values)
