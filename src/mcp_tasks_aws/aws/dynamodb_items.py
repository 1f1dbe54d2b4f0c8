"""The DynamoDB item of a task: a `TaskRecord` to an item and back, and the attribute values
the other DynamoDB modules write.

JSON payloads (arguments, results, answers, request params) are stored as strings so no number
ever turns into a Decimal. Item layout:

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
| run | S | what runs the task: a name of the run registry (`tasks.runs.registry`) |
| heldBy | S | `direct` (the direct leg holds the task) or `execution` (absent: execution) |
| pollIntervalMaxMs | N | the longest suggested poll interval as the task ages (absent: fixed) |
| result / resultRef / error | S | outcome (resultRef points into the result bucket) |
| toolError | BOOL | present (true) when the result is a tool error (`OwnerIndex` shows it) |
| executionArn | S | the declared workflow's execution doing the task's work (managed targets) |
| unstartedShard | S | only while nothing holds the task for good: `UnstartedIndex` |
| lastWrite | S | the last conditional write's nonce: how a resent copy knows it landed |

Items written before runs were named have no `run`: theirs is read by rule from what they
stored (`run_by_rule`): an `executionArn` is a declared workflow's, `heldBy` `direct` a direct
task's, anything else (absent, or `execution`) the legs run's: a direct task already handed
over to its execution runs exactly as that. A `run` or a `heldBy` this code does not know is an
error (`UnknownRun`), never read as another.

`UnstartedIndex` is sparse: `unstartedShard` (the task id's first hex digit, 16 shards) is
written with a new task (a declared workflow's too), removed when a leg claims it (or the
sweeper adopts a workflow's task whose execution it saw run), set again when its direct leg
parks it without a token (the execution it starts has not attached), and removed for good once
an execution holds it or it ends (`aws.dynamodb_expressions.unstarted_after`). The sweeper
(`tasks.sweep`) reads it to find stranded tasks, keyed by `lastUpdatedAt`, without a Scan.
"""

from __future__ import annotations

import json
from typing import Any, Final

from mcp_tasks_aws.protocol.names import ACTIVE_STATUSES, TaskStatus
from mcp_tasks_aws.tasks.exceptions import UnknownRun
from mcp_tasks_aws.tasks.model import HeldBy, TaskRecord, TaskSummary, encode_json, shown_status
from mcp_tasks_aws.tasks.runs.registry import is_run

LAST_WRITE: Final = "lastWrite"

UNSTARTED_SHARD: Final = "unstartedShard"
UNSTARTED_SHARDS: Final = "0123456789abcdef"
"""Task ids are lowercase hex: their first digit spreads `UnstartedIndex` over 16 partition
keys, so creating tasks fast never makes one index partition hot (each takes about 1,000
writes a second)."""


def string(value: str) -> dict[str, Any]:
    """An `S` attribute value."""
    return {"S": value}


def number(value: int) -> dict[str, Any]:
    """An `N` attribute value."""
    return {"N": str(value)}


def requests_value(requests: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The `inputRequests` attribute value of outstanding requests (key -> method and params)."""
    return {
        "M": {
            key: {
                "M": {
                    "method": string(str(request.get("method", ""))),
                    "params": string(encode_json(request.get("params", {}))),
                }
            }
            for key, request in requests.items()
        }
    }


def encode(record: TaskRecord) -> dict[str, Any]:
    item: dict[str, Any] = {
        "taskId": string(record.task_id),
        "owner": string(record.owner),
        "tool": string(record.tool),
        "arguments": string(encode_json(record.arguments)),
        "capabilities": string(encode_json(record.capabilities)),
        "status": string(record.status),
        "createdAt": number(record.created_at),
        "lastUpdatedAt": number(record.updated_at),
        "pollIntervalMs": number(record.poll_interval_ms),
        "run": string(record.run),
        "version": number(record.version),
        "leg": number(record.leg),
        "answers": {"M": {k: string(encode_json(v)) for k, v in record.answers.items()}},
        "inputRequests": requests_value(record.input_requests),
    }
    if record.ttl_ms is not None:
        item["ttlMs"] = number(record.ttl_ms)
        item["expiresAt"] = number(record.expires_at or 0)
    if record.poll_interval_max_ms is not None:
        item["pollIntervalMaxMs"] = number(record.poll_interval_max_ms)
    if record.asked_keys:
        item["askedKeys"] = {"SS": sorted(record.asked_keys)}
    # A declared workflow's task too: the sweeper must find it if its start never landed
    # (it leaves once the sweeper saw its execution run: `adopt` moves its leg on).
    if record.status in ACTIVE_STATUSES and record.leg == 0:
        item[UNSTARTED_SHARD] = string(record.task_id[:1])
    if record.held_by != "execution":  # absent reads as execution (items from before)
        item["heldBy"] = string(record.held_by)
    optional = {
        "statusMessage": record.status_message,
        "taskToken": record.task_token,
        "resultRef": record.result_ref,
        "result": encode_json(record.result) if record.result is not None else None,
        "error": encode_json(record.error) if record.error is not None else None,
        "executionArn": record.execution_arn,
    }
    item.update({k: string(v) for k, v in optional.items() if v is not None})
    if record.tool_error:
        item["toolError"] = {"BOOL": True}
    return item


def _text(item: dict[str, Any], name: str) -> str | None:
    value = item.get(name)
    return value["S"] if value else None


def _flag(item: dict[str, Any], name: str) -> bool:
    return bool(item.get(name, {}).get("BOOL", False))


def optional_number(item: dict[str, Any], name: str) -> int | None:
    """The `N` attribute `name` of `item`, or None when it is absent."""
    value = item.get(name)
    return int(value["N"]) if value and "N" in value else None


def _decode_requests(item: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        key: {"method": entry["M"]["method"]["S"], "params": json.loads(entry["M"]["params"]["S"])}
        for key, entry in item.get("inputRequests", {}).get("M", {}).items()
    }


def _held_by(item: dict[str, Any]) -> HeldBy:
    held = _text(item, "heldBy")
    if held is None or held == "execution":  # absent: written while an execution held it
        return "execution"
    if held == "direct":
        return "direct"
    raise UnknownRun(f"heldBy {held}", item["taskId"]["S"])


def run_by_rule(item: dict[str, Any]) -> str:
    """The run of an item: its `run`, or for an item written before runs were named, the
    one its other attributes imply (see the module docstring). UnknownRun for neither."""
    stored = _text(item, "run")
    if stored is not None:
        if not is_run(stored):
            raise UnknownRun(stored, item["taskId"]["S"])
        return stored
    if "executionArn" in item:
        return "workflow"
    return "direct" if _held_by(item) == "direct" else "legs"


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
        ttl_ms=optional_number(item, "ttlMs"),
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
        held_by=_held_by(item),
        poll_interval_max_ms=optional_number(item, "pollIntervalMaxMs"),
        execution_arn=_text(item, "executionArn"),
        run=run_by_rule(item),
    )


def shown_status_of(item: dict[str, Any]) -> TaskStatus:
    """The status a client sees, from an item that carries status and inputRequests."""
    return shown_status(item["status"]["S"], bool(item.get("inputRequests", {}).get("M")))


def decode_summary(item: dict[str, Any]) -> TaskSummary:
    """A summary from an `OwnerIndex` item (its projection carries exactly these attributes)."""
    return TaskSummary(
        task_id=item["taskId"]["S"],
        owner=item["owner"]["S"],
        status=shown_status_of(item),
        status_message=_text(item, "statusMessage"),
        created_at=int(item["createdAt"]["N"]),
        updated_at=int(item["lastUpdatedAt"]["N"]),
        ttl_ms=optional_number(item, "ttlMs"),
        poll_interval_ms=int(item["pollIntervalMs"]["N"]),
        tool_error=_flag(item, "toolError"),
    )
