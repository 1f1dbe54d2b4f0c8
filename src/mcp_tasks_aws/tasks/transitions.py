"""The rules of a task's life, as data: every move a task can make, who may make it, from where.

This is the one place to read to answer "what happens when X races Y". A store applies a move
as one atomic step: it checks the move's :class:`Guard` against the stored record and, only if
it holds, writes the move's :class:`Changes`. DynamoDB does that with a condition expression
(`aws.dynamodb_expressions`), the in-memory twin with a lock (`tasks.memory`); both must agree
with the pure functions :func:`allows` and :func:`applied` at the bottom of this module.

    move         from            to               fenced by          writes
    -----------  --------------  ---------------  -----------------  ---------------------------
    answer       waiting         (unchanged)      owner, keys        answers; answered keys leave
                                                                     inputRequests
    refuse       waiting         failed           owner, key         error (the client answered a
                                                                     question with an error,
                                                                     2025-11-25)
    cancel       active          cancelled        owner              statusMessage
    claim        working         (unchanged)      leg 0, direct      leg + 1
    report       active          working          leg                statusMessage
    park         active          input_required   leg                inputRequests, taskToken
                                                                     (none from a direct leg),
                                                                     leg + 1, askedKeys, step
                                                                     results
    attach       waiting         (unchanged)      leg, keys, token   taskToken, heldBy execution
    complete     active          completed        leg                result (or its S3 ref),
                                                                     whether it is a tool error;
                                                                     the last progress message
                                                                     is cleared
    fail         active          failed           leg                error
    lose         active          failed           (none)             error (the reconciler: an
                                                                     execution ended)
    lose_direct  active          failed           direct             error (the reconciler: a
                                                                     direct leg's invoke failed)
    lose_stranded active         failed           leg, version,      error (the sweeper: nothing
                                                  direct if so read  runs the task, nor will:
                                                                     see `tasks.sweep`)
    adopt        active          (unchanged)      leg                leg + 1 (the sweeper saw a
                                                                     declared workflow's execution
                                                                     run it: no longer a
                                                                     candidate)

    active = working or input_required; waiting = input_required.
    direct = the task is held by its direct leg (`heldBy` direct), no execution holds it yet.

Who holds a task is not what runs it: the run (`TaskRecord.run`, `tasks.runs`) is chosen at
creation and never changes; the hold is what the moves below are fenced by. Two ways to run a
leg. A task is created `heldBy` direct (its first leg runs in an asynchronous Lambda invoke,
no state machine) or `heldBy` execution (a Step Functions execution runs every leg). The
direct leg `claim`s the task first (once: a duplicated event finds leg 0 gone), runs the tool
and ends it (`complete`, `fail`: no execution at all) or `park`s it without a token and starts
the execution; that execution's first leg `attach`es its token and holds the task from then
on. The reconciler settles what no one will end: `lose` after an execution ended, and
`lose_direct` after a direct invoke failed (a crash, a timeout, an event too old), which holds
only while no execution holds the task. The sweeper (`tasks.sweep`) settles what even the
reconciler never hears of: a task whose start failed and whose compensating `fail` failed too
(`lose_stranded`, fenced by the leg 0 and the version it read, so a leg that started or wrote
since wins).

A third way: a declared workflow's execution *is* the task (`tasks.workflow`, managed Standard
state machines). Its questions are `park` (with the waiting state's token, a fresh key per
question), its progress `report`, its end `complete` (its output) or `lose` (a failure); so a
workflow that ends after its task was cancelled changes nothing, as any other late outcome.
Its task starts at leg 0 like any other, so the sweeper finds it if its start never landed;
once the sweeper has seen its execution run, `adopt` moves the leg on (nothing a client
sees), and the task is no longer a candidate however long the workflow stays silent.

Consequences worth knowing by heart:
- **Terminal is final.** No move starts from completed, failed or cancelled, so whichever of
  cancel, complete, fail or lose lands first wins and every later one is refused.
- **Cancel is the durable marker.** `cancelled` is terminal: a leg still running loses its next
  write (report, park, complete) and learns it was cancelled.
- **Legs are fenced.** A leg may write only while the record's `leg` is the one it read; `claim`
  and `park` move the leg on, so a duplicate or stale leg (a retried or duplicated invoke, a
  timed-out one still running) can record nothing.
- **One holder at a time.** Until an execution `attach`es, the direct leg holds the task, and a
  failed direct invoke fails it (`lose_direct`); once attached, only the execution's end can
  (`lose`). `attach` needs the requests it read still outstanding: if the last answer came
  first, no token was there for `tasks/update` to resume, so the leg runs at once instead.
  `claim` and `attach` change nothing a client sees: no version bump (`Changes.shown`).
  `attach` also needs the task to hold the token it read (none, or another copy's): two
  copies of one leg (Step Functions retried an invoke whose answer was lost) cannot both
  take the task, and the one that replaces a token knows its own is the live one.
- **First answer wins.** `answer` needs every key it answers to be outstanding; an answered key
  leaves `inputRequests`, so a second or late answer for it is refused, and an answer to a key
  that was never asked is never stored. `refuse` (a 2025-11-25 client answering a question with
  a JSON-RPC error) needs its key outstanding too, so it and an answer to the same key cannot
  both land; like `cancel`, it keeps the requests and the token so the execution is released.
- **Owner and expiry.** Moves a client makes (answer, cancel) hold only for the task's owner and
  while it has not expired; anyone else's move is refused exactly like a missing task's.
- **Shown status.** `input_required` with nothing outstanding reads as `working`: the last answer
  arrived and the next leg is starting (`tasks.model.shown_status`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any, Final, Literal, NamedTuple

from mcp_tasks_aws.protocol.names import ACTIVE_STATUSES, TaskStatus
from mcp_tasks_aws.tasks.model import HeldBy, TaskRecord

# The records below are NamedTuples: immutable, and several times cheaper to define than frozen
# dataclasses, which matters because every cold start defines them.

ACTIVE: Final = ACTIVE_STATUSES
WAITING: Final = frozenset({"input_required"})

WORKING: Final = frozenset({"working"})

Fence = Literal["owner", "leg", "keys", "direct", "version", "token"]
FIRST_LEG: Final = 0


class Move(NamedTuple):
    """One allowed move: the statuses it may start from, the status it ends in, who may make it.

    `fenced_by` names the guard parts beyond the statuses: the task's `owner`, the `leg` that
    may write, `keys` still outstanding, `direct` (no execution holds the task yet), the
    `version` the writer read (nothing a client sees changed since), or the `token` it read.
    """

    sources: frozenset[str]
    target: TaskStatus | None
    fenced_by: tuple[Fence, ...]


MOVES: Final[Mapping[str, Move]] = {
    "answer": Move(WAITING, None, ("owner", "keys")),
    "refuse": Move(WAITING, "failed", ("owner", "keys")),
    "cancel": Move(ACTIVE, "cancelled", ("owner",)),
    "claim": Move(WORKING, None, ("leg", "direct")),
    "report": Move(ACTIVE, "working", ("leg",)),
    "park": Move(ACTIVE, "input_required", ("leg",)),
    "attach": Move(WAITING, None, ("leg", "keys", "token")),
    "complete": Move(ACTIVE, "completed", ("leg",)),
    "fail": Move(ACTIVE, "failed", ("leg",)),
    "lose": Move(ACTIVE, "failed", ()),
    "lose_direct": Move(ACTIVE, "failed", ("direct",)),
    "lose_stranded": Move(ACTIVE, "failed", ("leg", "version")),
    "adopt": Move(ACTIVE, None, ("leg",)),
}


# -- guards ------------------------------------------------------------------------------------


class Outstanding(NamedTuple):
    """A key the move answers: it must be outstanding, asked by one of `methods` (any if None)."""

    key: str
    methods: frozenset[str] | None = None


class Holding(NamedTuple):
    """The task token a record must hold for a move (None: it holds none)."""

    token: str | None


class Guard(NamedTuple):
    """What must hold of the stored record, all at once, for a move to be written."""

    statuses: frozenset[str]
    owner: str | None = None
    leg: int | None = None
    alive_at_s: int | None = None
    """The task has not expired at this epoch second (unlimited tasks never expire)."""
    outstanding: tuple[Outstanding, ...] = ()
    held_by: HeldBy | None = None
    version: int | None = None
    """The record's `version` is still this one (no move a client sees landed since)."""
    holding: Holding | None = None
    """The record holds this task token still (the one the writer read)."""


# -- changes -----------------------------------------------------------------------------------
#
# A move writes a few field-level operations; every move a client can see also stamps
# `updated_at` and bumps `version` (see `Changes.shown`). Field names are the record's
# (`tasks.model.TaskRecord`); the DynamoDB adapter maps them to attribute names.

Field = Literal[
    "status",
    "status_message",
    "task_token",
    "result",
    "result_ref",
    "error",
    "tool_error",
    "held_by",
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
    """What a move writes, at `now_ms`.

    `shown` moves change what a client sees: they stamp `updated_at` and bump `version` (a
    listen window reports any version change). `claim` and `attach` only change who runs the
    task, so they leave both alone.
    """

    move: str
    now_ms: int
    ops: tuple[Op, ...] = ()
    shown: bool = True


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
    ops = (*_to("refuse"), *_failure(error))
    return guard, Changes("refuse", now_ms, ops)


CANCELLED_MESSAGE: Final = "Cancelled at the client's request"


def cancel(owner: str, now_ms: int) -> tuple[Guard, Changes]:
    """The durable cancel marker. Requests and token stay, so the execution can be released."""
    guard = _guard("cancel", owner=owner, alive_at_s=now_ms // 1000)
    return guard, Changes(
        "cancel", now_ms, (*_to("cancel"), Put("status_message", CANCELLED_MESSAGE))
    )


def claim(now_ms: int) -> tuple[Guard, Changes]:
    """The direct leg starts: once, while nothing else holds the task (its leg moves on)."""
    guard = _guard("claim", leg=FIRST_LEG, held_by="direct")
    return guard, Changes("claim", now_ms, (NextLeg(),), shown=False)


def report(leg: int, message: str, now_ms: int) -> tuple[Guard, Changes]:
    """A running leg's status message."""
    ops = (*_to("report"), Put("status_message", message))
    return _guard("report", leg=leg), Changes("report", now_ms, ops)


def park(
    leg: int,
    requests: Mapping[str, dict[str, Any]],
    task_token: str | None,
    steps: Mapping[str, Any],
    now_ms: int,
) -> tuple[Guard, Changes]:
    """The leg needs input: store the requests and the token that resumes the execution.

    A direct leg has no token (no execution runs it): the execution it starts `attach`es one.
    A key asked now is asked for the first time, so an answer sent before it was asked is
    dropped; the results of steps (`ctx.step`) first run in this leg are kept for the replay.
    """
    ops: list[Op] = [
        *_to("park"),
        Put("input_requests", dict(requests)),
        *((Put("task_token", task_token),) if task_token is not None else ()),
        NextLeg(),
        AddAsked(frozenset({*requests, *steps})),
    ]
    ops += [DropEntry("answers", key) for key in requests]
    ops += [PutEntry("answers", key, value) for key, value in steps.items()]
    return _guard("park", leg=leg), Changes("park", now_ms, tuple(ops))


def attach(
    leg: int, keys: Iterable[str], task_token: str, now_ms: int, *, replacing: str | None = None
) -> tuple[Guard, Changes]:
    """An execution takes over a waiting task: its token is what `tasks/update` resumes.

    `keys` are the requests the leg read as outstanding; if any was answered since, the move
    is refused (the last answer may have found no token to resume, so the leg must run now).
    `replacing` is the token the leg read on the task (None: none); if another was written
    since (another copy of the leg attached or parked), the move is refused too.
    """
    outstanding = tuple(Outstanding(key) for key in keys)
    if not outstanding:
        raise ValueError("attach needs the outstanding keys it read (a task with none runs)")
    guard = _guard("attach", leg=leg, outstanding=outstanding, holding=Holding(replacing))
    ops = (Put("task_token", task_token), Put("held_by", "execution"))
    return guard, Changes("attach", now_ms, ops, shown=False)


def _failure(error: dict[str, Any]) -> tuple[Op, ...]:
    """The error a failed task shows, and its message as the status message."""
    return (Put("error", error), Put("status_message", str(error.get("message", ""))))


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
    ops = _failure(error)
    return _guard("fail", leg=leg), _ending("fail", now_ms, ops)


def lose(error: dict[str, Any], now_ms: int) -> tuple[Guard, Changes]:
    """The execution ended without ending the task (crash, timeout, abort)."""
    ops = _failure(error)
    return _guard("lose"), _ending("lose", now_ms, ops)


def lose_direct(error: dict[str, Any], now_ms: int) -> tuple[Guard, Changes]:
    """A direct leg's invoke failed (crash, timeout, event too old) before an execution held
    the task. Once one holds it, only that execution's end settles the task (`lose`)."""
    ops = _failure(error)
    return _guard("lose_direct", held_by="direct"), _ending("lose_direct", now_ms, ops)


def lose_stranded(seen: TaskRecord, error: dict[str, Any], now_ms: int) -> tuple[Guard, Changes]:
    """Nothing runs the task and nothing will: its start failed, and so did the write that
    should have failed it (the sweeper, `tasks.sweep`, decided so from `seen`).

    Fenced by the leg and the version `seen` has, and, for a task its direct leg held, by that
    hold: a leg that claims it meanwhile (`claim` moves the leg on), an execution that
    attaches, or any write a client sees wins, and the sweep leaves the task alone.
    """
    held = "direct" if seen.held_by == "direct" else None
    guard = _guard("lose_stranded", leg=seen.leg, version=seen.version, held_by=held)
    return guard, _ending("lose_stranded", now_ms, _failure(error))


def adopt(seen: TaskRecord, now_ms: int) -> tuple[Guard, Changes]:
    """A declared workflow's execution runs the task (the sweeper asked it): the leg moves
    on, out of the sweeper's candidates, changing nothing a client sees. Fenced by the leg
    `seen` has: a park since has taken it out already."""
    guard = _guard("adopt", leg=seen.leg)
    return guard, Changes("adopt", now_ms, (NextLeg(),), shown=False)


# -- the semantics every store must honour -----------------------------------------------------


def allows(guard: Guard, record: TaskRecord) -> bool:
    """Whether `guard` holds for `record` (what a store's atomic check must decide)."""
    if record.status not in guard.statuses:
        return False
    if guard.owner is not None and record.owner != guard.owner:
        return False
    if guard.leg is not None and record.leg != guard.leg:
        return False
    if guard.held_by is not None and record.held_by != guard.held_by:
        return False
    if guard.version is not None and record.version != guard.version:
        return False
    if guard.holding is not None and record.task_token != guard.holding.token:
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
    values: dict[str, Any] = {}
    if changes.shown:
        values.update(updated_at=changes.now_ms, version=record.version + 1)
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
