"""Legacy-session state on the task table (`LegacySessionStore` on DynamoDB).

Four small item kinds share the task table under keys no task id can take (task ids are 32 hex
characters), and expire with DynamoDB's TTL on `expiresAt` like tasks do. Neither carries an
`owner`, so an index on tasks' owner never lists them.

- `!session#<sid>`: `logLevel` S, `ended` BOOL, `expiresAt` N.
- `!call#<ref>`: `sid` S, `requestId` S (JSON), `method` S, `params` S (JSON),
  `requestState` S, `asked` M (key -> the question, JSON), `answers` M (key -> JSON),
  `failure` S (JSON), `round` N, `done` BOOL, `claimedUntil` N, `outcome` S (JSON: the
  message a call done ended with), `expiresAt` N.
- `!tasks#<sid>`: `taskIds` L (of S, oldest first), `expiresAt` N (the session's).
- `!ask#<taskId>#<key digest>`: `holder` S, `expiresAt` N (when the hold lapses): who was
  last sent a task's question (`hold_question`).

Each port primitive is one call: reads are consistent `GetItem`s, writes are conditional
`PutItem`/`UpdateItem`s whose conditions carry the invariants of `server.legacy.sessions` (a failed
condition is the answer, never a second read). Since TTL deletion is late, reads treat an
expired item as absent and writes are conditioned on `expiresAt` too. A call still throttled
after the SDK's retries raises `ports.Throttled`, as the task store's do.

A write whose answer was lost (a timeout) is resent by the SDK (`aws.call_policies`), and the
copy meets the condition its first copy's landing made false: refused, it would report the
write as not made. So each write also sets `lastWrite` to a nonce of its own, and a refusal
returns the item (ALL_OLD): if it carries this write's nonce, the write landed and only its
answer was lost. Another caller's identical write carries another nonce, so "first one wins"
still holds between callers.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from mcp_tasks_aws.aws.errors import client_error_code, client_error_item, transient_as_busy
from mcp_tasks_aws.server.legacy.sessions import (
    MAX_SESSION_TASKS,
    CallConflict,
    CallTooLarge,
    ParkedCall,
    SessionEnded,
    SessionState,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

_CONDITION_FAILED = "ConditionalCheckFailedException"
_TOO_LARGE = "ValidationException"
_LIVE = "#exp > :now"
_NOT_ENDED = "(attribute_not_exists(#ended) OR #ended = :false)"
_OPEN_CALL = f"attribute_exists(taskId) AND #done = :false AND {_LIVE}"


_NONCE = "lastWrite"


def _with_nonce(request: dict[str, Any], nonce: dict[str, Any]) -> dict[str, Any]:
    """`request` (a PutItem's or an UpdateItem's whose expression starts with SET) that also
    sets `lastWrite` to `nonce`."""
    if "Item" in request:
        return {**request, "Item": {**request["Item"], _NONCE: nonce}}
    expression = request["UpdateExpression"]
    if not expression.startswith("SET "):
        raise ValueError(f"not a SET update: {expression}")
    return {
        **request,
        "UpdateExpression": f"SET #lastWrite = :lastWrite, {expression.removeprefix('SET ')}",
        "ExpressionAttributeNames": {
            **request.get("ExpressionAttributeNames", {}),
            "#lastWrite": _NONCE,
        },
        "ExpressionAttributeValues": {
            **request.get("ExpressionAttributeValues", {}),
            ":lastWrite": nonce,
        },
    }


def _s(value: str) -> dict[str, Any]:
    return {"S": value}


def _n(value: int) -> dict[str, Any]:
    return {"N": str(value)}


def _json(value: Any) -> dict[str, Any]:
    return _s(json.dumps(value, separators=(",", ":")))


def session_key(sid: str) -> dict[str, Any]:
    return {"taskId": _s(f"!session#{sid}")}


def call_key(ref: str) -> dict[str, Any]:
    return {"taskId": _s(f"!call#{ref}")}


def tasks_key(sid: str) -> dict[str, Any]:
    return {"taskId": _s(f"!tasks#{sid}")}


def hold_key(task_id: str, key: str) -> dict[str, Any]:
    # Input keys are the tool's (up to 128 characters): a digest keeps the item key short.
    digest = hashlib.sha256(key.encode()).hexdigest()[:24]
    return {"taskId": _s(f"!ask#{task_id}#{digest}")}


def encode_call(call: ParkedCall) -> dict[str, Any]:
    item: dict[str, Any] = {
        **call_key(call.ref),
        "sid": _s(call.sid),
        "requestId": _json(call.request_id),
        "method": _s(call.method),
        "params": _json(call.params),
        "asked": {"M": {k: _json(v) for k, v in call.asked.items()}},
        "answers": {"M": {k: _json(v) for k, v in call.answers.items()}},
        "round": _n(call.round),
        "done": {"BOOL": call.done},
        "expiresAt": _n(call.expires_at),
    }
    if call.request_state is not None:
        item["requestState"] = _s(call.request_state)
    if call.failure is not None:
        item["failure"] = _json(call.failure)
    if call.claimed_until is not None:
        item["claimedUntil"] = _n(call.claimed_until)
    if call.outcome is not None:
        item["outcome"] = _json(call.outcome)
    return item


def decode_call(item: dict[str, Any]) -> ParkedCall:
    failure, outcome = item.get("failure"), item.get("outcome")
    return ParkedCall(
        ref=item["taskId"]["S"].removeprefix("!call#"),
        sid=item["sid"]["S"],
        request_id=json.loads(item["requestId"]["S"]),
        method=item["method"]["S"],
        params=json.loads(item["params"]["S"]) if "params" in item else {},
        request_state=item["requestState"]["S"] if "requestState" in item else None,
        asked={k: json.loads(v["S"]) for k, v in item.get("asked", {}).get("M", {}).items()},
        round=int(item["round"]["N"]),
        expires_at=int(item["expiresAt"]["N"]),
        answers={k: json.loads(v["S"]) for k, v in item.get("answers", {}).get("M", {}).items()},
        failure=json.loads(failure["S"]) if failure else None,
        done=bool(item.get("done", {}).get("BOOL", False)),
        claimed_until=int(item["claimedUntil"]["N"]) if "claimedUntil" in item else None,
        outcome=json.loads(outcome["S"]) if outcome else None,
    )


class DynamoLegacySessionStore:
    """`LegacySessionStore` on one DynamoDB table keyed by `taskId`."""

    def __init__(
        self, client: DynamoDBClient, table_name: str, clock: Callable[[], float] = time.time
    ) -> None:
        self.client = client
        self.table = table_name
        self.clock = clock

    def _now(self) -> dict[str, Any]:
        return _n(int(self.clock()))

    def state(self, sid: str) -> SessionState:
        with transient_as_busy():
            item = self.client.get_item(
                TableName=self.table, Key=session_key(sid), ConsistentRead=True
            ).get("Item")
        if not item or int(item["expiresAt"]["N"]) <= self.clock():
            return SessionState()
        level = item.get("logLevel")
        return SessionState(
            log_level=level["S"] if level else None,
            ended=bool(item.get("ended", {}).get("BOOL", False)),
        )

    def _write(self, operation: Callable[..., Any], **request: Any) -> bool:
        """One conditional write on the table; False when its condition failed (the answer,
        never a reason to read again) unless the item carries this write's nonce (its first
        copy landed unheard), CallTooLarge when the item would outgrow 400 KB, any other
        error raised."""
        nonce = _s(secrets.token_hex(8))
        try:
            with transient_as_busy():
                operation(
                    TableName=self.table,
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                    **_with_nonce(request, nonce),
                )
        except Exception as exc:
            code = client_error_code(exc)
            if code == _TOO_LARGE:
                # The expressions are fixed and tested here: what DynamoDB still refuses as
                # invalid is an item grown past its limit (a park or an answer too large).
                raise CallTooLarge() from exc
            if code != _CONDITION_FAILED:
                raise
            current = client_error_item(exc)
            return current is not None and current.get(_NONCE) == nonce
        return True

    def _update_session(
        self, sid: str, assignment: str, values: dict[str, Any], expires_at: int
    ) -> bool:
        """Write to a session not ended (an ended session stays ended); False if it has."""
        return self._write(
            self.client.update_item,
            Key=session_key(sid),
            UpdateExpression=f"SET {assignment}, #exp = :exp",
            ConditionExpression=_NOT_ENDED,
            ExpressionAttributeNames={"#ended": "ended", "#exp": "expiresAt"},
            ExpressionAttributeValues={
                **values,
                ":exp": _n(expires_at),
                ":false": {"BOOL": False},
            },
        )

    def set_log_level(self, sid: str, level: str, expires_at: int) -> None:
        if not self._update_session(sid, "logLevel = :level", {":level": _s(level)}, expires_at):
            raise SessionEnded(sid)

    def end(self, sid: str, expires_at: int) -> bool:
        return self._update_session(sid, "#ended = :true", {":true": {"BOOL": True}}, expires_at)

    def park(self, call: ParkedCall, previous_round: int | None = None) -> None:
        fresh = replace(call, answers={}, failure=None, done=False, claimed_until=None)
        if previous_round is None:
            condition = "attribute_not_exists(taskId)"
            names: dict[str, str] = {}
            values: dict[str, Any] = {}
        else:
            # Only the resume that found the call at `previous_round` moves it on.
            condition = f"{_OPEN_CALL} AND #round = :previous"
            names = {"#done": "done", "#exp": "expiresAt", "#round": "round"}
            values = {
                ":false": {"BOOL": False},
                ":now": self._now(),
                ":previous": _n(previous_round),
            }
        request: dict[str, Any] = {"Item": encode_call(fresh), "ConditionExpression": condition}
        if names:
            request["ExpressionAttributeNames"] = names
            request["ExpressionAttributeValues"] = values
        if not self._write(self.client.put_item, **request):
            raise CallConflict(call.ref)

    def parked(self, ref: str) -> ParkedCall | None:
        with transient_as_busy():
            item = self.client.get_item(
                TableName=self.table, Key=call_key(ref), ConsistentRead=True
            ).get("Item")
        if not item or int(item["expiresAt"]["N"]) <= self.clock():
            return None
        return decode_call(cast("dict[str, Any]", item))

    def answer(
        self, ref: str, key: str, answer: Any = None, failure: dict[str, Any] | None = None
    ) -> bool:
        # First answer wins; a question never asked, or a call done, refused or expired,
        # takes nothing.
        condition = (
            f"{_OPEN_CALL} AND attribute_exists(asked.#key) "
            "AND attribute_not_exists(answers.#key) AND attribute_not_exists(failure)"
        )
        if failure is None:
            update, value = "SET answers.#key = :value", _json(answer)
        else:
            update, value = "SET failure = :value", _json(failure)
        return self._write(
            self.client.update_item,
            Key=call_key(ref),
            UpdateExpression=update,
            ConditionExpression=condition,
            ExpressionAttributeNames={"#key": key, "#done": "done", "#exp": "expiresAt"},
            ExpressionAttributeValues={
                ":value": value,
                ":false": {"BOOL": False},
                ":now": self._now(),
            },
        )

    def remember_task(self, sid: str, task_id: str, expires_at: int) -> bool:
        return self._write(
            self.client.update_item,
            Key=tasks_key(sid),
            UpdateExpression="SET #ids = list_append(if_not_exists(#ids, :none), :id), #exp = :exp",
            ConditionExpression="attribute_not_exists(#ids) OR size(#ids) < :most",
            ExpressionAttributeNames={"#ids": "taskIds", "#exp": "expiresAt"},
            ExpressionAttributeValues={
                ":none": {"L": []},
                ":id": {"L": [_s(task_id)]},
                ":exp": _n(expires_at),
                ":most": _n(MAX_SESSION_TASKS),
            },
        )

    def session_tasks(self, sid: str) -> list[str]:
        with transient_as_busy():
            item = self.client.get_item(
                TableName=self.table, Key=tasks_key(sid), ConsistentRead=True
            ).get("Item")
        if not item or int(item["expiresAt"]["N"]) <= self.clock():
            return []
        # Without repeats: an append retried after a timeout may have landed twice.
        return list(dict.fromkeys(entry["S"] for entry in item.get("taskIds", {}).get("L", [])))

    def hold_question(self, task_id: str, key: str, holder: str, until: int) -> bool:
        # One conditional put: free, lapsed, or already this holder's.
        return self._write(
            self.client.put_item,
            Item={**hold_key(task_id, key), "holder": _s(holder), "expiresAt": _n(until)},
            ConditionExpression="attribute_not_exists(taskId) OR #exp <= :now OR holder = :holder",
            ExpressionAttributeNames={"#exp": "expiresAt"},
            ExpressionAttributeValues={":now": self._now(), ":holder": _s(holder)},
        )

    def claim(self, ref: str, round: int, until: int) -> bool:
        # One resume runs a round: the claim is taken only if nobody holds it, or its holder's
        # time is up (a function that died with it).
        return self._write(
            self.client.update_item,
            Key=call_key(ref),
            UpdateExpression="SET #claimed = :until",
            ConditionExpression=(
                f"{_OPEN_CALL} AND #round = :round "
                "AND (attribute_not_exists(#claimed) OR #claimed <= :now)"
            ),
            ExpressionAttributeNames={
                "#done": "done",
                "#exp": "expiresAt",
                "#round": "round",
                "#claimed": "claimedUntil",
            },
            ExpressionAttributeValues={
                ":until": _n(until),
                ":false": {"BOOL": False},
                ":now": self._now(),
                ":round": _n(round),
            },
        )

    def finish(
        self,
        ref: str,
        round: int,
        outcome: dict[str, Any] | None = None,
        expires_at: int | None = None,
    ) -> bool:
        # Arguments, questions and answers go as soon as the call has its outcome; the
        # outcome itself stays until `expires_at`.
        assignments = ["#done = :true", "answers = :empty", "asked = :empty"]
        values: dict[str, Any] = {
            ":true": {"BOOL": True},
            ":false": {"BOOL": False},
            ":empty": {"M": {}},
            ":now": self._now(),
            ":round": _n(round),
        }
        if outcome is not None:
            assignments.append("outcome = :outcome")
            values[":outcome"] = _json(outcome)
        if expires_at is not None:
            assignments.append("#exp = :keep")
            values[":keep"] = _n(expires_at)
        return self._write(
            self.client.update_item,
            Key=call_key(ref),
            UpdateExpression=f"SET {', '.join(assignments)} REMOVE params, requestState, failure",
            ConditionExpression=f"{_OPEN_CALL} AND #round = :round",
            ExpressionAttributeNames={"#done": "done", "#exp": "expiresAt", "#round": "round"},
            ExpressionAttributeValues=values,
        )
