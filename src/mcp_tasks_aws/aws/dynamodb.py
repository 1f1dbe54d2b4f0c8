"""The DynamoDB task store: one item per task, conditional writes, consistent reads.

Each port primitive is one call (`settle_lost`, off the hot path, is a read then a write).
JSON payloads (arguments, results, answers, requests) are stored as strings so no number
ever turns into a Decimal. Item layout:

| attribute | type | meaning |
| --- | --- | --- |
| taskId | S | partition key |
| owner | S | the caller's principal; a foreign read answers like a missing one |
| status, statusMessage | S | task status, last status message |
| createdAt, lastUpdatedAt | N | epoch milliseconds |
| ttlMs, expiresAt | N | retention; `expiresAt` (epoch seconds) is the table's TTL attribute |
| version, leg | N | bumped on every write; the number of the leg that may write outcomes |
| answers, inputRequests | M of S | recorded answers; outstanding requests |
| askedKeys | SS | every key the task asked (answers to other keys are never used) |
| taskToken | S | Step Functions token of the execution waiting for input |
| cancelRequested | BOOL | the durable cancel marker |
| result / resultRef / error | S | outcome (resultRef points into the result bucket) |
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from mcp_tasks_aws.aws.errors import client_error_code, client_error_item
from mcp_tasks_aws.tasks.exceptions import (
    TaskAlreadyExists,
    TaskNoLongerActive,
    TaskNotFound,
    TaskNotWaiting,
)
from mcp_tasks_aws.tasks.model import ACTIVE, TaskRecord, encode_json

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

_CONDITION_FAILED = "ConditionalCheckFailedException"
# Only an active task changes (a terminal status is never left): one condition for all writes.
_ACTIVE_VALUES = {f":{status}": {"S": status} for status in sorted(ACTIVE)}
_ACTIVE = f"#status IN ({', '.join(_ACTIVE_VALUES)})"
_NOT_CANCELLED = "#cancel = :false"


def _s(value: str) -> dict[str, Any]:
    return {"S": value}


def _n(value: int) -> dict[str, Any]:
    return {"N": str(value)}


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
        "inputRequests": {"M": {k: _s(encode_json(v)) for k, v in record.input_requests.items()}},
        "cancelRequested": {"BOOL": record.cancel_requested},
    }
    if record.ttl_ms is not None:
        item["ttlMs"] = _n(record.ttl_ms)
        item["expiresAt"] = _n(record.expires_at or 0)
    if record.asked_keys:
        item["askedKeys"] = {"SS": sorted(record.asked_keys)}
    optional = {
        "statusMessage": record.status_message,
        "taskToken": record.task_token,
        "resultRef": record.result_ref,
        "result": encode_json(record.result) if record.result is not None else None,
        "error": encode_json(record.error) if record.error is not None else None,
    }
    item.update({k: _s(v) for k, v in optional.items() if v is not None})
    return item


def decode(item: dict[str, Any]) -> TaskRecord:
    def text(name: str) -> str | None:
        value = item.get(name)
        return value["S"] if value else None

    def number(name: str) -> int | None:
        value = item.get(name)
        return int(value["N"]) if value and "N" in value else None

    def json_map(name: str) -> dict[str, Any]:
        return {k: json.loads(v["S"]) for k, v in item.get(name, {}).get("M", {}).items()}

    def json_text(name: str) -> Any:
        raw = text(name)
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
        ttl_ms=number("ttlMs"),
        poll_interval_ms=int(item["pollIntervalMs"]["N"]),
        status_message=text("statusMessage"),
        version=int(item["version"]["N"]),
        leg=int(item["leg"]["N"]),
        answers=json_map("answers"),
        input_requests=json_map("inputRequests"),
        asked_keys=frozenset(item.get("askedKeys", {}).get("SS", [])),
        task_token=text("taskToken"),
        cancel_requested=bool(item.get("cancelRequested", {}).get("BOOL", False)),
        result=json_text("result"),
        result_ref=text("resultRef"),
        error=json_text("error"),
    )


def _failed_condition(exc: Exception) -> dict[str, Any] | None:
    """The item as it was when a condition failed (ALL_OLD), or re-raise other errors."""
    if client_error_code(exc) != _CONDITION_FAILED:
        raise exc
    return client_error_item(exc)


class DynamoChangeFeed:
    """ChangeFeed on the task table: one item under a key no task id can take."""

    KEY = "!lists"  # task ids are 32 hex characters; this can never be one

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self.client = client
        self.table = table_name

    def versions(self) -> dict[str, int]:
        response = self.client.get_item(
            TableName=self.table, Key={"taskId": _s(self.KEY)}, ConsistentRead=True
        )
        item = response.get("Item") or {}
        return {kind: int(item[kind]["N"]) if kind in item else 0 for kind in ("tools", "prompts")}

    def bump(self, kind: str) -> None:
        if kind not in ("tools", "prompts"):
            raise ValueError(f"unknown list {kind!r}")
        self.client.update_item(
            TableName=self.table,
            Key={"taskId": _s(self.KEY)},
            UpdateExpression="ADD #kind :one",
            ExpressionAttributeNames={"#kind": kind},
            ExpressionAttributeValues={":one": _n(1)},
        )


class DynamoTaskStore:
    """TaskStore on one DynamoDB table keyed by `taskId`."""

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self.client = client
        self.table = table_name

    def _key(self, task_id: str) -> dict[str, Any]:
        return {"taskId": _s(task_id)}

    def put_new(self, record: TaskRecord) -> None:
        try:
            self.client.put_item(
                TableName=self.table,
                Item=encode(record),
                # Durable creation: the id is new, or nothing is written.
                ConditionExpression="attribute_not_exists(taskId)",
            )
        except Exception as exc:
            _failed_condition(exc)
            raise TaskAlreadyExists(record.task_id) from exc

    def get(self, task_id: str) -> TaskRecord | None:
        response = self.client.get_item(
            TableName=self.table, Key=self._key(task_id), ConsistentRead=True
        )
        item = response.get("Item")
        return decode(item) if item else None

    def get_many(self, task_ids: list[str]) -> dict[str, TaskRecord]:
        if not task_ids:
            return {}
        request: dict[str, Any] = {
            self.table: {
                "Keys": [self._key(task_id) for task_id in dict.fromkeys(task_ids)],
                "ConsistentRead": True,
            }
        }
        records: dict[str, TaskRecord] = {}
        for _ in range(5):  # unprocessed keys (throttling) are retried a few times
            response = self.client.batch_get_item(RequestItems=request)
            for item in response.get("Responses", {}).get(self.table, []):
                record = decode(item)
                records[record.task_id] = record
            request = dict(response.get("UnprocessedKeys") or {})
            if not request:
                break
        return records

    def _owned_or_missing(self, item: dict[str, Any] | None, owner: str) -> TaskRecord:
        if not item or item["owner"]["S"] != owner:
            raise TaskNotFound()
        return decode(item)

    def record_answers(
        self, task_id: str, owner: str, answers: dict[str, Any], now_ms: int
    ) -> TaskRecord:
        names = {
            "#owner": "owner",
            "#status": "status",
            "#cancel": "cancelRequested",
            "#answers": "answers",
            "#requests": "inputRequests",
            "#updated": "lastUpdatedAt",
            "#version": "version",
        }
        values: dict[str, Any] = {
            ":owner": _s(owner),
            ":input_required": _s("input_required"),
            ":false": {"BOOL": False},
            ":now": _n(now_ms),
            ":one": _n(1),
        }
        sets = ["#updated = :now", "#version = #version + :one"]
        removes = []
        for index, (key, answer) in enumerate(answers.items()):
            names[f"#k{index}"] = key
            values[f":a{index}"] = _s(encode_json(answer))
            # The first answer for a key wins: a duplicate or late update changes nothing.
            sets.append(f"#answers.#k{index} = if_not_exists(#answers.#k{index}, :a{index})")
            removes.append(f"#requests.#k{index}")
        try:
            response = self.client.update_item(
                TableName=self.table,
                Key=self._key(task_id),
                UpdateExpression=f"SET {', '.join(sets)} REMOVE {', '.join(removes)}",
                ConditionExpression=(
                    f"#owner = :owner AND #status = :input_required AND {_NOT_CANCELLED}"
                ),
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except Exception as exc:
            raise TaskNotWaiting(self._owned_or_missing(_failed_condition(exc), owner)) from exc
        return decode(response["Attributes"])

    def request_cancel(self, task_id: str, owner: str, now_ms: int) -> TaskRecord:
        try:
            response = self.client.update_item(
                TableName=self.table,
                Key=self._key(task_id),
                UpdateExpression=(
                    "SET #status = :cancelled, #cancel = :true, #message = :message, "
                    "#updated = :now, #version = #version + :one"
                ),
                # Only an active task can be cancelled; a terminal one keeps its outcome.
                ConditionExpression=f"#owner = :owner AND {_ACTIVE}",
                ExpressionAttributeNames={
                    "#owner": "owner",
                    "#status": "status",
                    "#cancel": "cancelRequested",
                    "#message": "statusMessage",
                    "#updated": "lastUpdatedAt",
                    "#version": "version",
                },
                ExpressionAttributeValues={
                    ":owner": _s(owner),
                    ":cancelled": _s("cancelled"),
                    ":true": {"BOOL": True},
                    ":message": _s("Cancelled at the client's request"),
                    ":now": _n(now_ms),
                    ":one": _n(1),
                    **_ACTIVE_VALUES,
                },
                ReturnValues="ALL_OLD",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except Exception as exc:
            raise TaskNotWaiting(self._owned_or_missing(_failed_condition(exc), owner)) from exc
        return decode(response["Attributes"])

    def _leg_write(
        self,
        task_id: str,
        leg: int,
        update: str,
        names: dict[str, str],
        values: dict[str, Any],
    ) -> None:
        """A worker's write: only while its leg is current and the task active, not cancelled."""
        try:
            self.client.update_item(
                TableName=self.table,
                Key=self._key(task_id),
                UpdateExpression=update,
                ConditionExpression=f"#leg = :leg AND {_ACTIVE} AND {_NOT_CANCELLED}",
                ExpressionAttributeNames={
                    "#leg": "leg",
                    "#status": "status",
                    "#cancel": "cancelRequested",
                    "#updated": "lastUpdatedAt",
                    "#version": "version",
                    **names,
                },
                ExpressionAttributeValues={
                    ":leg": _n(leg),
                    ":false": {"BOOL": False},
                    ":one": _n(1),
                    **_ACTIVE_VALUES,
                    **values,
                },
            )
        except Exception as exc:
            _failed_condition(exc)
            raise TaskNoLongerActive(task_id) from exc

    def set_status_message(self, task_id: str, leg: int, message: str, now_ms: int) -> None:
        self._leg_write(
            task_id,
            leg,
            "SET #message = :message, #status = :working, #updated = :now, "
            "#version = #version + :one",
            {"#message": "statusMessage"},
            {":message": _s(message), ":now": _n(now_ms)},
        )

    def park(
        self,
        task_id: str,
        leg: int,
        input_requests: dict[str, dict[str, Any]],
        task_token: str,
        now_ms: int,
        steps: dict[str, Any] | None = None,
    ) -> None:
        steps = steps or {}
        names = {"#requests": "inputRequests", "#token": "taskToken", "#asked": "askedKeys"}
        values: dict[str, Any] = {
            ":requests": {"M": {k: _s(encode_json(v)) for k, v in input_requests.items()}},
            ":token": _s(task_token),
            ":keys": {"SS": sorted({*input_requests, *steps})},
            ":now": _n(now_ms),
        }
        sets = [
            "#status = :input_required",
            "#requests = :requests",
            "#token = :token",
            "#leg = #leg + :one",
            "#updated = :now",
            "#version = #version + :one",
        ]
        removes = []
        for index, key in enumerate(input_requests):
            names[f"#k{index}"] = key
            # A key is asked for the first time now: an answer given before it was asked
            # is not an answer to it.
            removes.append(f"#answers.#k{index}")
        for index, (key, value) in enumerate(steps.items()):
            names[f"#s{index}"] = key
            values[f":s{index}"] = _s(encode_json(value))
            sets.append(f"#answers.#s{index} = :s{index}")
        if removes or steps:
            names["#answers"] = "answers"
        update = f"SET {', '.join(sets)} ADD #asked :keys"
        if removes:
            update += f" REMOVE {', '.join(removes)}"
        self._leg_write(task_id, leg, update, names, values)

    def finish(
        self,
        task_id: str,
        leg: int,
        *,
        status: str,
        now_ms: int,
        result: dict[str, Any] | None = None,
        result_ref: str | None = None,
        error: dict[str, Any] | None = None,
        message: str | None = None,
    ) -> None:
        names = {"#requests": "inputRequests", "#token": "taskToken"}
        values: dict[str, Any] = {
            ":final": _s(status),
            ":none": {"M": {}},
            ":now": _n(now_ms),
        }
        sets = [
            "#status = :final",
            "#requests = :none",
            "#updated = :now",
            "#version = #version + :one",
        ]
        for attribute, value in (
            ("result", encode_json(result) if result is not None else None),
            ("resultRef", result_ref),
            ("error", encode_json(error) if error is not None else None),
            ("statusMessage", message),
        ):
            if value is not None:
                names[f"#{attribute}"] = attribute
                values[f":{attribute}"] = _s(value)
                sets.append(f"#{attribute} = :{attribute}")
        self._leg_write(task_id, leg, f"SET {', '.join(sets)} REMOVE #token", names, values)

    def settle_lost(self, task_id: str, error: dict[str, Any], now_ms: int) -> TaskRecord | None:
        for _ in range(3):
            record = self.get(task_id)
            if record is None or record.status not in ACTIVE:
                return None
            final = "cancelled" if record.cancel_requested else "failed"
            sets = (
                "#status = :final, #updated = :now, #version = #version + :one, #requests = :none"
            )
            values: dict[str, Any] = {
                ":final": _s(final),
                ":now": _n(now_ms),
                ":one": _n(1),
                ":none": {"M": {}},
                ":seen": _n(record.version),
            }
            names = {
                "#status": "status",
                "#updated": "lastUpdatedAt",
                "#version": "version",
                "#requests": "inputRequests",
            }
            if final == "failed":
                sets += ", #error = :error, #message = :message"
                names.update({"#error": "error", "#message": "statusMessage"})
                values.update({":error": _s(encode_json(error)), ":message": _s(error["message"])})
            try:
                self.client.update_item(
                    TableName=self.table,
                    Key=self._key(task_id),
                    UpdateExpression=f"SET {sets}",
                    # Optimistic concurrency: only if nothing changed since the read.
                    ConditionExpression="#version = :seen",
                    ExpressionAttributeNames=names,
                    ExpressionAttributeValues=values,
                )
            except Exception as exc:
                _failed_condition(exc)
                continue
            return record
        return None
