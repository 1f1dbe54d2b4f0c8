"""The DynamoDB task store: one item per task, guarded moves as conditional writes.

This adapter only translates, one call per primitive: a record to an item and back
(`aws.dynamodb_items`, which also documents the item layout), and a move's guard and changes to
a condition and an update expression (`aws.dynamodb_expressions`). What the rules are lives in
`tasks.transitions`. Here: the table's calls (`DynamoTaskStore`), the change feed kept on the
same table (`DynamoChangeFeed`), listing positions, and how much result an item still holds
(`room_for_result`).

A conditional write whose answer was lost (a timeout) is resent by the SDK
(`aws.call_policies`), and the copy meets the condition its first copy's landing made false: a
claimed task looks claimed by someone else, a created one taken. So a refusal returns the
item (ALL_OLD), and: a create finds the very item it writes (task ids are new); a move, which
also sets `lastWrite` to a nonce of its own, finds its nonce. Either way it landed, and is
reported made, with the item as it left it. Another caller's identical move carries another
nonce: first one wins still holds.
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from mcp_tasks_aws.aws.dynamodb_expressions import Placeholders, checked, condition, update
from mcp_tasks_aws.aws.dynamodb_items import (
    LAST_WRITE,
    UNSTARTED_SHARD,
    UNSTARTED_SHARDS,
    decode,
    decode_summary,
    encode,
    number,
    optional_number,
    shown_status_of,
    string,
)
from mcp_tasks_aws.aws.errors import client_error_code, client_error_item, transient_as_busy
from mcp_tasks_aws.tasks.exceptions import TaskAlreadyExists, TaskTooLarge
from mcp_tasks_aws.tasks.model import TaskHead, TaskRecord, now_ms
from mcp_tasks_aws.tasks.ports import Applied, Page
from mcp_tasks_aws.tasks.transitions import Changes, Guard

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

_CONDITION_FAILED: Final = "ConditionalCheckFailedException"
_TOO_LARGE: Final = "ValidationException"
ITEM_LIMIT_BYTES: Final = 400 * 1024
"""DynamoDB's largest item (names and values)."""
_ITEM_MARGIN_BYTES: Final = 8 * 1024
"""Room kept for what a later write adds (status message, timestamps) and for estimate error."""
OWNER_INDEX: Final = "OwnerIndex"
UNSTARTED_INDEX: Final = "UnstartedIndex"


def room_for_result(record: TaskRecord) -> int:
    """Bytes of result JSON the record's item can still take inline.

    A conservative estimate: the item as JSON (type tags and quotes included) is larger than
    what DynamoDB counts, so a result that fits here fits there.
    """
    used = len(json.dumps(encode(record), separators=(",", ":")).encode())
    return max(0, ITEM_LIMIT_BYTES - _ITEM_MARGIN_BYTES - used)


class DynamoChangeFeed:
    """ChangeFeed on the task table: one item under a key no task id can take."""

    KEY = "!lists"  # task ids are 32 hex characters; this can never be one

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self.client = client
        self.table = table_name

    def versions(self) -> dict[str, int]:
        with transient_as_busy():
            response = self.client.get_item(
                TableName=self.table, Key={"taskId": string(self.KEY)}, ConsistentRead=True
            )
        item = response.get("Item") or {}
        return {kind: int(item[kind]["N"]) if kind in item else 0 for kind in ("tools", "prompts")}

    def bump(self, kind: str) -> None:
        if kind not in ("tools", "prompts"):
            raise ValueError(f"unknown list {kind!r}")
        with transient_as_busy():
            self.client.update_item(
                TableName=self.table,
                Key={"taskId": string(self.KEY)},
                UpdateExpression="ADD #kind :one",
                ExpressionAttributeNames={"#kind": kind},
                ExpressionAttributeValues={":one": number(1)},
            )


class DynamoTaskStore:
    """TaskStore on one DynamoDB table keyed by `taskId`, with `OwnerIndex` for listings and
    the sparse `UnstartedIndex` for the sweeper (see `aws.dynamodb_items`).

    `clock` (epoch milliseconds) decides which tasks a listing leaves out as expired.
    """

    def __init__(
        self, client: DynamoDBClient, table_name: str, clock: Callable[[], int] = now_ms
    ) -> None:
        self.client = client
        self.table = table_name
        self.clock = clock

    def _key(self, task_id: str) -> dict[str, Any]:
        return {"taskId": string(task_id)}

    def get(self, task_id: str) -> TaskRecord | None:
        with transient_as_busy():
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
            with transient_as_busy():
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
                shown_status_of(item),
                int(item["version"]["N"]),
                optional_number(item, "expiresAt"),
            )
        return heads

    def put_new(self, record: TaskRecord) -> None:
        item = encode(record)
        try:
            with transient_as_busy():
                self.client.put_item(
                    TableName=self.table,
                    Item=item,
                    # Durable creation: the id is new, or nothing is written.
                    ConditionExpression="attribute_not_exists(taskId)",
                    # A refusal shows what holds the id: this very write, if an earlier try
                    # of it (the SDK's, after a lost answer) landed.
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
        except Exception as exc:
            code = client_error_code(exc)
            if code == _CONDITION_FAILED:
                if _same_item(client_error_item(exc), item):
                    return  # our own write, landed unheard: one task, created
                raise TaskAlreadyExists(record.task_id) from exc
            if code == _TOO_LARGE:
                raise TaskTooLarge(record.task_id) from exc
            raise

    def apply(self, task_id: str, guard: Guard, changes: Changes) -> Applied | None:
        expr = Placeholders()
        nonce = secrets.token_hex(8)
        check = checked(condition(guard, expr), changes.move, "condition")
        change = checked(
            update(changes, expr, shard=task_id[:1], write_id=nonce), changes.move, "update"
        )
        try:
            with transient_as_busy():
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
            if not current:
                return None
            # A copy the SDK resent after its first landed unheard: the move is made, and
            # the item is as it left it (unless another write came between: then refused).
            return Applied(decode(current), changed=_carries_nonce(current, string(nonce)))
        return Applied(decode(response["Attributes"]), changed=True)

    def list_by_owner(self, owner: str, *, limit: int, after: str | None = None) -> Page:
        request: dict[str, Any] = {
            "TableName": self.table,
            "IndexName": OWNER_INDEX,
            "KeyConditionExpression": "#owner = :owner",
            "ExpressionAttributeNames": {"#owner": "owner"},
            "ExpressionAttributeValues": {":owner": string(owner)},
            "ScanIndexForward": False,  # newest first
            "Limit": limit,
        }
        if after is not None:
            request["ExclusiveStartKey"] = _start_key(after, owner)
        with transient_as_busy():
            response = self.client.query(**request)
        now = self.clock()
        tasks = [
            summary
            for summary in map(decode_summary, response.get("Items", []))
            if not summary.is_expired(now)
        ]
        last = response.get("LastEvaluatedKey")
        return Page(tasks, _position(last) if last else None)

    def unstarted(self, updated_before_ms: int, limit: int) -> list[str]:
        # One Query per shard, reading only index keys: the index holds just the tasks no leg
        # ran yet (a healthy one leaves it within seconds, or when its first leg ends), so a
        # sweep costs 16 small Queries however many tasks the table keeps.
        found: list[str] = []
        for shard in UNSTARTED_SHARDS:
            request: dict[str, Any] = {
                "TableName": self.table,
                "IndexName": UNSTARTED_INDEX,
                "KeyConditionExpression": "#shard = :shard AND #updated < :before",
                "ExpressionAttributeNames": {
                    "#shard": UNSTARTED_SHARD,
                    "#updated": "lastUpdatedAt",
                },
                "ExpressionAttributeValues": {
                    ":shard": string(shard),
                    ":before": number(updated_before_ms),
                },
                "Limit": limit - len(found),
            }
            while len(found) < limit:
                with transient_as_busy():
                    response = self.client.query(**request)
                found += [item["taskId"]["S"] for item in response.get("Items", [])]
                last = response.get("LastEvaluatedKey")
                if not last:
                    break
                request |= {"ExclusiveStartKey": last, "Limit": limit - len(found)}
            if len(found) >= limit:
                break
        return found[:limit]


def _same_item(found: dict[str, Any] | None, written: dict[str, Any]) -> bool:
    """Whether the item a refused create found is the one it writes (compared as records:
    DynamoDB may give a set back in another order, or a number in another spelling)."""
    return found is not None and decode(found) == decode(written)


def _carries_nonce(item: dict[str, Any] | None, nonce: dict[str, Any]) -> bool:
    """Whether a refused write's item was last written by the write holding `nonce`."""
    return item is not None and item.get(LAST_WRITE) == nonce


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
    return {"taskId": string(task_id), "owner": string(owner), "createdAt": number(int(created))}
