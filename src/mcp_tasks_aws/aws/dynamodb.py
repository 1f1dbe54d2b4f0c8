"""The DynamoDB task store: one item per task, guarded moves as conditional writes.

This adapter only translates: a record to an item and back, a `transitions.Guard` to a
condition expression, `transitions.Changes` to an update expression. What the rules are lives
in `tasks.transitions`; each primitive is one call. JSON payloads (arguments, results, answers,
request params) are stored as strings so no number ever turns into a Decimal. Item layout:

| attribute | type | meaning |
| --- | --- | --- |
| taskId | S | partition key |
| owner | S | the caller's principal; a foreign read answers like a missing one |
| status, statusMessage | S | task status, last status message |
| createdAt, lastUpdatedAt | N | epoch milliseconds (`OwnerIndex`: owner + createdAt) |
| ttlMs, expiresAt | N | retention; `expiresAt` (epoch seconds) is the table's TTL attribute |
| version, leg | N | bumped on every write a client sees; the leg that may write outcomes |
| answers | M of S | recorded answers and step results |
| inputRequests | M of M | outstanding requests: `{method: S, params: S}` per key |
| askedKeys | SS | every key the task asked (answers to other keys are never used) |
| taskToken | S | Step Functions token of the execution waiting for input |
| heldBy | S | `direct` (the direct leg runs the task) or `execution` (absent: execution) |
| pollIntervalMaxMs | N | the longest suggested poll interval as the task ages (absent: fixed) |
| result / resultRef / error | S | outcome (resultRef points into the result bucket) |
| toolError | BOOL | present (true) when the result is a tool error (`OwnerIndex` shows it) |
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from mcp_tasks_aws.aws.errors import client_error_code, client_error_item, throttling_as_busy
from mcp_tasks_aws.tasks.exceptions import TaskAlreadyExists, TaskTooLarge
from mcp_tasks_aws.tasks.model import (
    TaskHead,
    TaskRecord,
    TaskSummary,
    encode_json,
    now_ms,
    shown_status,
)
from mcp_tasks_aws.tasks.ports import Applied, Page
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

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

_CONDITION_FAILED: Final = "ConditionalCheckFailedException"
_TOO_LARGE: Final = "ValidationException"
ITEM_LIMIT_BYTES: Final = 400 * 1024
"""DynamoDB's largest item (names and values)."""
_ITEM_MARGIN_BYTES: Final = 8 * 1024
"""Room kept for what a later write adds (status message, timestamps) and for estimate error."""
OWNER_INDEX: Final = "OwnerIndex"

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


def _s(value: str) -> dict[str, Any]:
    return {"S": value}


def _n(value: int) -> dict[str, Any]:
    return {"N": str(value)}


def _requests(requests: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "M": {
            key: {
                "M": {
                    "method": _s(str(request.get("method", ""))),
                    "params": _s(encode_json(request.get("params", {}))),
                }
            }
            for key, request in requests.items()
        }
    }


def encode(record: TaskRecord) -> dict[str, Any]:
    item: dict[str, Any] = {
        "taskId": _s(record.task_id),
        "owner": _s(record.owner),
        "tool": _s(record.tool),
        "arguments": _s(encode_json(record.arguments)),
        "capabilities": _s(encode_json(record.capabilities)),
        "status": _s(record.status),
        "createdAt": _n(record.created_at),
        "lastUpdatedAt": _n(record.updated_at),
        "pollIntervalMs": _n(record.poll_interval_ms),
        "version": _n(record.version),
        "leg": _n(record.leg),
        "answers": {"M": {k: _s(encode_json(v)) for k, v in record.answers.items()}},
        "inputRequests": _requests(record.input_requests),
    }
    if record.ttl_ms is not None:
        item["ttlMs"] = _n(record.ttl_ms)
        item["expiresAt"] = _n(record.expires_at or 0)
    if record.poll_interval_max_ms is not None:
        item["pollIntervalMaxMs"] = _n(record.poll_interval_max_ms)
    if record.asked_keys:
        item["askedKeys"] = {"SS": sorted(record.asked_keys)}
    if record.held_by != "execution":  # absent reads as execution (items from before)
        item["heldBy"] = _s(record.held_by)
    optional = {
        "statusMessage": record.status_message,
        "taskToken": record.task_token,
        "resultRef": record.result_ref,
        "result": encode_json(record.result) if record.result is not None else None,
        "error": encode_json(record.error) if record.error is not None else None,
    }
    item.update({k: _s(v) for k, v in optional.items() if v is not None})
    if record.tool_error:
        item["toolError"] = {"BOOL": True}
    return item


def room_for_result(record: TaskRecord) -> int:
    """Bytes of result JSON the record's item can still take inline.

    A conservative estimate: the item as JSON (type tags and quotes included) is larger than
    what DynamoDB counts, so a result that fits here fits there.
    """
    used = len(json.dumps(encode(record), separators=(",", ":")).encode())
    return max(0, ITEM_LIMIT_BYTES - _ITEM_MARGIN_BYTES - used)


def _text(item: dict[str, Any], name: str) -> str | None:
    value = item.get(name)
    return value["S"] if value else None


def _flag(item: dict[str, Any], name: str) -> bool:
    return bool(item.get(name, {}).get("BOOL", False))


def _number(item: dict[str, Any], name: str) -> int | None:
    value = item.get(name)
    return int(value["N"]) if value and "N" in value else None


def _decode_requests(item: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        key: {"method": entry["M"]["method"]["S"], "params": json.loads(entry["M"]["params"]["S"])}
        for key, entry in item.get("inputRequests", {}).get("M", {}).items()
    }


def decode(item: dict[str, Any]) -> TaskRecord:
    def json_text(name: str) -> Any:
        raw = _text(item, name)
        return json.loads(raw) if raw is not None else None

    return TaskRecord(
        task_id=item["taskId"]["S"],
        owner=item["owner"]["S"],
        tool=item["tool"]["S"],
        arguments=json.loads(item["arguments"]["S"]),
        capabilities=json.loads(item["capabilities"]["S"]),
        status=item["status"]["S"],
        created_at=int(item["createdAt"]["N"]),
        updated_at=int(item["lastUpdatedAt"]["N"]),
        ttl_ms=_number(item, "ttlMs"),
        poll_interval_ms=int(item["pollIntervalMs"]["N"]),
        status_message=_text(item, "statusMessage"),
        version=int(item["version"]["N"]),
        leg=int(item["leg"]["N"]),
        answers={k: json.loads(v["S"]) for k, v in item.get("answers", {}).get("M", {}).items()},
        input_requests=_decode_requests(item),
        asked_keys=frozenset(item.get("askedKeys", {}).get("SS", [])),
        task_token=_text(item, "taskToken"),
        result=json_text("result"),
        result_ref=_text(item, "resultRef"),
        error=json_text("error"),
        tool_error=_flag(item, "toolError"),
        held_by="direct" if _text(item, "heldBy") == "direct" else "execution",
        poll_interval_max_ms=_number(item, "pollIntervalMaxMs"),
    )


def _shown(item: dict[str, Any]) -> Any:
    """The status a client sees, from an item that carries status and inputRequests."""
    return shown_status(item["status"]["S"], bool(item.get("inputRequests", {}).get("M")))


def decode_summary(item: dict[str, Any]) -> TaskSummary:
    """A summary from an `OwnerIndex` item (its projection carries exactly these attributes)."""
    return TaskSummary(
        task_id=item["taskId"]["S"],
        owner=item["owner"]["S"],
        status=_shown(item),
        status_message=_text(item, "statusMessage"),
        created_at=int(item["createdAt"]["N"]),
        updated_at=int(item["lastUpdatedAt"]["N"]),
        ttl_ms=_number(item, "ttlMs"),
        poll_interval_ms=int(item["pollIntervalMs"]["N"]),
        tool_error=_flag(item, "toolError"),
    )


class _Expression:
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


def condition(guard: Guard, expr: _Expression) -> str:
    """The condition expression of a guard (see `transitions.allows` for its meaning)."""
    statuses = ", ".join(expr.value(_s(s)) for s in sorted(guard.statuses))
    parts = [f"{expr.name('status')} IN ({statuses})"]
    if guard.owner is not None:
        parts.append(f"{expr.name('owner')} = {expr.value(_s(guard.owner))}")
    if guard.leg is not None:
        # Leg fencing: a duplicate or stale leg (an older number) can record nothing.
        parts.append(f"{expr.name('leg')} = {expr.value(_n(guard.leg))}")
    if guard.held_by == "direct":
        # Only the direct leg holds the task: no execution attached (absent means execution).
        parts.append(f"{expr.name('heldBy')} = {expr.value(_s('direct'))}")
    elif guard.held_by is not None:
        raise ValueError(f"no condition for held_by={guard.held_by!r}")
    if guard.alive_at_s is not None:
        # Native TTL deletes late: an expired item still exists but must not change.
        expires = expr.name("expiresAt")
        alive = expr.value(_n(guard.alive_at_s))
        parts.append(f"(attribute_not_exists({expires}) OR {expires} > {alive})")
    for wanted in guard.outstanding:
        # First answer wins: a key answered already has left inputRequests.
        request = expr.path("inputRequests", wanted.key)
        parts.append(f"attribute_exists({request})")
        if wanted.methods is not None:
            methods = ", ".join(expr.value(_s(m)) for m in sorted(wanted.methods))
            parts.append(f"{expr.path('inputRequests', wanted.key, 'method')} IN ({methods})")
    return " AND ".join(parts)


def _stored(field: str, value: Any) -> dict[str, Any]:
    if field == "input_requests":
        return _requests(value)
    if field in _JSON_FIELDS:
        return _s(encode_json(value))
    if field == "tool_error":
        return {"BOOL": bool(value)}
    return _s(str(value))


def update(changes: Changes, expr: _Expression) -> str:
    """The update expression of a move's changes (see `transitions.applied`)."""
    sets = []
    if changes.shown:  # a move a client sees: a listen window reports the version moving
        sets += [
            f"{expr.name('lastUpdatedAt')} = {expr.value(_n(changes.now_ms))}",
            f"{expr.name('version')} = {expr.name('version')} + {expr.value(_n(1))}",
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
            sets.append(f"{path} = {expr.value(_s(encode_json(op.value)))}")
        elif isinstance(op, DropEntry):
            removes.append(expr.path(_ATTRIBUTE[op.field], op.key))
        elif isinstance(op, AddAsked):
            if op.keys:
                adds.append(f"{expr.name('askedKeys')} {expr.value({'SS': sorted(op.keys)})}")
        elif isinstance(op, NextLeg):
            sets.append(f"{expr.name('leg')} = {expr.name('leg')} + {expr.value(_n(op.steps))}")
    clauses = [f"SET {', '.join(sets)}"]
    if removes:
        clauses.append(f"REMOVE {', '.join(removes)}")
    if adds:
        clauses.append(f"ADD {', '.join(adds)}")
    return " ".join(clauses)


class DynamoChangeFeed:
    """ChangeFeed on the task table: one item under a key no task id can take."""

    KEY = "!lists"  # task ids are 32 hex characters; this can never be one

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self.client = client
        self.table = table_name

    def versions(self) -> dict[str, int]:
        with throttling_as_busy():
            response = self.client.get_item(
                TableName=self.table, Key={"taskId": _s(self.KEY)}, ConsistentRead=True
            )
        item = response.get("Item") or {}
        return {kind: int(item[kind]["N"]) if kind in item else 0 for kind in ("tools", "prompts")}

    def bump(self, kind: str) -> None:
        if kind not in ("tools", "prompts"):
            raise ValueError(f"unknown list {kind!r}")
        with throttling_as_busy():
            self.client.update_item(
                TableName=self.table,
                Key={"taskId": _s(self.KEY)},
                UpdateExpression="ADD #kind :one",
                ExpressionAttributeNames={"#kind": kind},
                ExpressionAttributeValues={":one": _n(1)},
            )


class DynamoTaskStore:
    """TaskStore on one DynamoDB table keyed by `taskId`, with `OwnerIndex` for listings.

    `clock` (epoch milliseconds) decides which tasks a listing leaves out as expired.
    """

    def __init__(
        self, client: DynamoDBClient, table_name: str, clock: Callable[[], int] = now_ms
    ) -> None:
        self.client = client
        self.table = table_name
        self.clock = clock

    def _key(self, task_id: str) -> dict[str, Any]:
        return {"taskId": _s(task_id)}

    def get(self, task_id: str) -> TaskRecord | None:
        with throttling_as_busy():
            response = self.client.get_item(
                TableName=self.table, Key=self._key(task_id), ConsistentRead=True
            )
        item = response.get("Item")
        return decode(item) if item else None

    def _batch_get(
        self, task_ids: list[str], projection: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        if not task_ids:
            return []
        keys: dict[str, Any] = {
            "Keys": [self._key(task_id) for task_id in dict.fromkeys(task_ids)],
            "ConsistentRead": True,
            **(projection or {}),
        }
        request: dict[str, Any] = {self.table: keys}
        items: list[dict[str, Any]] = []
        for _ in range(5):  # unprocessed keys (throttling) are retried a few times
            with throttling_as_busy():
                response = self.client.batch_get_item(RequestItems=request)
            items += response.get("Responses", {}).get(self.table, [])
            unprocessed = (response.get("UnprocessedKeys") or {}).get(self.table)
            if not unprocessed:
                break
            request = {self.table: unprocessed}
        return items

    def get_many(self, task_ids: list[str]) -> dict[str, TaskRecord]:
        return {record.task_id: record for record in map(decode, self._batch_get(task_ids))}

    def peek_many(self, task_ids: list[str]) -> dict[str, TaskHead]:
        # Only what a watcher compares: a watched item may hold 400 KB of payload, read every
        # half second for up to 100 tasks. inputRequests tells whether a waiting task shows
        # as working (see model.shown_status).
        projection = {
            "ProjectionExpression": "#id, #owner, #status, #version, #expires, #requests",
            "ExpressionAttributeNames": {
                "#id": "taskId",
                "#owner": "owner",
                "#status": "status",
                "#version": "version",
                "#expires": "expiresAt",
                "#requests": "inputRequests",
            },
        }
        heads = {}
        for item in self._batch_get(task_ids, projection):
            heads[item["taskId"]["S"]] = TaskHead(
                item["taskId"]["S"],
                item["owner"]["S"],
                _shown(item),
                int(item["version"]["N"]),
                _number(item, "expiresAt"),
            )
        return heads

    def put_new(self, record: TaskRecord) -> None:
        try:
            with throttling_as_busy():
                self.client.put_item(
                    TableName=self.table,
                    Item=encode(record),
                    # Durable creation: the id is new, or nothing is written.
                    ConditionExpression="attribute_not_exists(taskId)",
                )
        except Exception as exc:
            code = client_error_code(exc)
            if code == _CONDITION_FAILED:
                raise TaskAlreadyExists(record.task_id) from exc
            if code == _TOO_LARGE:
                raise TaskTooLarge(record.task_id) from exc
            raise

    def apply(self, task_id: str, guard: Guard, changes: Changes) -> Applied | None:
        expr = _Expression()
        check = condition(guard, expr)
        change = update(changes, expr)
        try:
            with throttling_as_busy():
                response = self.client.update_item(
                    TableName=self.table,
                    Key=self._key(task_id),
                    UpdateExpression=change,
                    ConditionExpression=check,
                    ExpressionAttributeNames=expr.names,
                    ExpressionAttributeValues=expr.values,
                    ReturnValues="ALL_NEW",
                    # A refused move needs no second read to say why: the item comes back.
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
        except Exception as exc:
            code = client_error_code(exc)
            if code == _TOO_LARGE:
                # The expressions are built and tested here: what DynamoDB still refuses as
                # invalid is an item grown past its 400 KB.
                raise TaskTooLarge(task_id) from exc
            if code != _CONDITION_FAILED:
                raise
            current = client_error_item(exc)
            return Applied(decode(current), changed=False) if current else None
        return Applied(decode(response["Attributes"]), changed=True)

    def list_by_owner(self, owner: str, *, limit: int, after: str | None = None) -> Page:
        request: dict[str, Any] = {
            "TableName": self.table,
            "IndexName": OWNER_INDEX,
            "KeyConditionExpression": "#owner = :owner",
            "ExpressionAttributeNames": {"#owner": "owner"},
            "ExpressionAttributeValues": {":owner": _s(owner)},
            "ScanIndexForward": False,  # newest first
            "Limit": limit,
        }
        if after is not None:
            request["ExclusiveStartKey"] = _start_key(after, owner)
        with throttling_as_busy():
            response = self.client.query(**request)
        now = self.clock()
        tasks = [
            summary
            for summary in map(decode_summary, response.get("Items", []))
            if not summary.is_expired(now)
        ]
        last = response.get("LastEvaluatedKey")
        return Page(tasks, _position(last) if last else None)


def _position(key: dict[str, Any]) -> str:
    """An index position as an opaque string: creation time and id (the owner is implied)."""
    raw = json.dumps([key["createdAt"]["N"], key["taskId"]["S"]], separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode()


def _start_key(after: str, owner: str) -> dict[str, Any]:
    # Rebuilt with the caller as owner, so a position can never reach another owner's tasks.
    try:
        created, task_id = json.loads(base64.urlsafe_b64decode(after.encode()))
        if not (isinstance(created, str) and created.isdigit() and isinstance(task_id, str)):
            raise ValueError("not a position")
    except (ValueError, TypeError, binascii.Error) as exc:
        raise ValueError("not a position of this store") from exc
    return {"taskId": _s(task_id), "owner": _s(owner), "createdAt": _n(int(created))}
