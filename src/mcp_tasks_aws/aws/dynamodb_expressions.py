"""A guarded move in DynamoDB's words: a `transitions.Guard` as a condition expression and
`transitions.Changes` as an update expression, over the item layout of `aws.dynamodb_items`.

What the rules are lives in `tasks.transitions`; the expressions here must mean what its pure
functions `allows` and `applied` say (the store contract suite runs both stores).
"""

from __future__ import annotations

from typing import Any, Final

from mcp_tasks_aws.aws.dynamodb_items import (
    LAST_WRITE,
    UNSTARTED_SHARD,
    number,
    requests_value,
    string,
)
from mcp_tasks_aws.protocol.names import TERMINAL_STATUSES
from mcp_tasks_aws.tasks.model import encode_json
from mcp_tasks_aws.tasks.transitions import (
    AddAsked,
    Changes,
    Drop,
    DropEntry,
    Guard,
    NextLeg,
    Put,
    PutEntry,
)

# Record field -> item attribute, for the fields a move may write.
_ATTRIBUTE: Final = {
    "status": "status",
    "status_message": "statusMessage",
    "task_token": "taskToken",
    "result": "result",
    "result_ref": "resultRef",
    "error": "error",
    "answers": "answers",
    "input_requests": "inputRequests",
    "tool_error": "toolError",
    "held_by": "heldBy",
}
_JSON_FIELDS: Final = frozenset({"result", "error"})

MAX_EXPRESSION_BYTES: Final = 4096
"""DynamoDB's longest expression string (each of a request's condition and update). The keys
of a round are what make the expressions grow; `tools.journal` bounds them so that every move
fits (tests/aws/test_expression_bounds.py), and `checked` says so loudly if one ever does not,
where DynamoDB would refuse it with a ValidationException that reads like an item too large."""


def checked(expression: str, move: str, kind: str) -> str:
    """`expression`, or ValueError naming the move if it is longer than DynamoDB takes."""
    size = len(expression.encode())
    if size > MAX_EXPRESSION_BYTES:
        raise ValueError(
            f"the {kind} expression of a {move} write takes {size} bytes, over DynamoDB's "
            f"{MAX_EXPRESSION_BYTES}: a bound on the keys of a round is missing"
        )
    return expression


class Placeholders:
    """Placeholders for one request: `#n` names and `:v` values, numbered as they are used."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.values: dict[str, Any] = {}

    def name(self, attribute: str) -> str:
        for placeholder, known in self.names.items():
            if known == attribute:
                return placeholder
        placeholder = f"#n{len(self.names)}"
        self.names[placeholder] = attribute
        return placeholder

    def value(self, value: dict[str, Any]) -> str:
        placeholder = f":v{len(self.values)}"
        self.values[placeholder] = value
        return placeholder

    def path(self, *attributes: str) -> str:
        return ".".join(self.name(a) for a in attributes)


def condition(guard: Guard, expr: Placeholders) -> str:
    """The condition expression of a guard (see `transitions.allows` for its meaning)."""
    statuses = ", ".join(expr.value(string(s)) for s in sorted(guard.statuses))
    parts = [f"{expr.name('status')} IN ({statuses})"]
    if guard.owner is not None:
        parts.append(f"{expr.name('owner')} = {expr.value(string(guard.owner))}")
    if guard.leg is not None:
        # Leg fencing: a duplicate or stale leg (an older number) can record nothing.
        parts.append(f"{expr.name('leg')} = {expr.value(number(guard.leg))}")
    if guard.held_by == "direct":
        # Only the direct leg holds the task: no execution attached (absent means execution).
        parts.append(f"{expr.name('heldBy')} = {expr.value(string('direct'))}")
    elif guard.held_by is not None:
        raise ValueError(f"no condition for held_by={guard.held_by!r}")
    if guard.version is not None:
        # Version fencing: nothing a client sees changed since the writer read the record.
        parts.append(f"{expr.name('version')} = {expr.value(number(guard.version))}")
    if guard.holding is not None:
        # Token fencing: the task still holds the token the writer read (or none).
        token = expr.name("taskToken")
        if guard.holding.token is None:
            parts.append(f"attribute_not_exists({token})")
        else:
            parts.append(f"{token} = {expr.value(string(guard.holding.token))}")
    if guard.alive_at_s is not None:
        # Native TTL deletes late: an expired item still exists but must not change.
        expires = expr.name("expiresAt")
        alive = expr.value(number(guard.alive_at_s))
        parts.append(f"(attribute_not_exists({expires}) OR {expires} > {alive})")
    for wanted in guard.outstanding:
        # First answer wins: a key answered already has left inputRequests. A comparison with
        # a path that does not exist is false, so the IN alone also says the key is there:
        # every key costs few characters, and a round's keys stay under the 4 KB limit.
        if wanted.methods is not None:
            methods = ", ".join(expr.value(string(m)) for m in sorted(wanted.methods))
            parts.append(f"{expr.path('inputRequests', wanted.key, 'method')} IN ({methods})")
        else:
            parts.append(f"attribute_exists({expr.path('inputRequests', wanted.key)})")
    return " AND ".join(parts)


def _stored(field: str, value: Any) -> dict[str, Any]:
    if field == "input_requests":
        return requests_value(value)
    if field in _JSON_FIELDS:
        return string(encode_json(value))
    if field == "tool_error":
        return {"BOOL": bool(value)}
    return string(str(value))


def unstarted_after(changes: Changes) -> bool | None:
    """Whether the task is in `UnstartedIndex` after `changes` (None: as before).

    In it: a task no leg claimed yet (leg 0), or one its direct leg parked without a token (it
    asked; no execution holds it until one attaches). Out: once a leg claims it (or the
    sweeper adopts a workflow's task: the same move of the leg), parks it with a token, an
    execution attaches, or it ends.
    """
    puts = {op.field: op.value for op in changes.ops if isinstance(op, Put)}
    if puts.get("status") in TERMINAL_STATUSES or "task_token" in puts or "held_by" in puts:
        return False
    if puts.get("status") == "input_required":  # a park without a token: a direct leg's
        return True
    if any(isinstance(op, NextLeg) for op in changes.ops):
        return False  # a claim, or an adoption
    return None


def update(
    changes: Changes, expr: Placeholders, shard: str = "0", write_id: str | None = None
) -> str:
    """The update expression of a move's changes (see `transitions.applied`); `shard` is the
    task's `unstartedShard` (see `aws.dynamodb_items`), set again by a direct leg's park;
    `write_id`, if given, becomes the item's `lastWrite`."""
    sets = []
    if write_id is not None:
        sets.append(f"{expr.name(LAST_WRITE)} = {expr.value(string(write_id))}")
    if changes.shown:  # a move a client sees: a listen window reports the version moving
        sets += [
            f"{expr.name('lastUpdatedAt')} = {expr.value(number(changes.now_ms))}",
            f"{expr.name('version')} = {expr.name('version')} + {expr.value(number(1))}",
        ]
    removes: list[str] = []
    adds: list[str] = []
    for op in changes.ops:
        if isinstance(op, Put):
            sets.append(
                f"{expr.name(_ATTRIBUTE[op.field])} = {expr.value(_stored(op.field, op.value))}"
            )
        elif isinstance(op, Drop):
            removes.append(expr.name(_ATTRIBUTE[op.field]))
        elif isinstance(op, PutEntry):
            path = expr.path(_ATTRIBUTE[op.field], op.key)
            sets.append(f"{path} = {expr.value(string(encode_json(op.value)))}")
        elif isinstance(op, DropEntry):
            removes.append(expr.path(_ATTRIBUTE[op.field], op.key))
        elif isinstance(op, AddAsked):
            if op.keys:
                adds.append(f"{expr.name('askedKeys')} {expr.value({'SS': sorted(op.keys)})}")
        elif isinstance(op, NextLeg):
            sets.append(f"{expr.name('leg')} = {expr.name('leg')} + {expr.value(number(op.steps))}")
    unstarted = unstarted_after(changes)
    if unstarted is False:  # out of the sparse UnstartedIndex
        removes.append(expr.name(UNSTARTED_SHARD))
    elif unstarted:
        sets.append(f"{expr.name(UNSTARTED_SHARD)} = {expr.value(string(shard))}")
    clauses = [f"SET {', '.join(sets)}"]
    if removes:
        clauses.append(f"REMOVE {', '.join(removes)}")
    if adds:
        clauses.append(f"ADD {', '.join(adds)}")
    return " ".join(clauses)
