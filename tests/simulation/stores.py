"""The task store of a run, on either of the two stores the contract binds, and its trail.

- `twin`: the in-memory store (`tasks.memory`), each primitive one AWS call of the DynamoDB
  adapter's (`GetItem`, `BatchGetItem`, `PutItem`, `UpdateItem`, `Query`) sent through the
  simulated SDK (`simulation.sdk`): the same attempts, faults and retries. What the adapter
  makes of a resent conditional write (its nonce, `aws.dynamodb`) is what `FaultyTwin` does: a
  copy refused after its first landed reports the write made, unless another write came
  between. What still fails after the retries is `Throttled`, as the adapter raises it.
- `moto`: the real `aws.dynamodb.DynamoTaskStore` on moto's DynamoDB (a table made from
  template.yaml's `TaskTable`), its botocore client replaced by a `SimClient`.

Either way every write that lands is logged to the `Trail` (what a DynamoDB stream of the
table would carry): the checker's view of the store between the client's reads.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from mcp_tasks_aws.tasks.memory import InMemoryTaskStore
from mcp_tasks_aws.tasks.model import TaskHead, TaskRecord, is_task_id
from mcp_tasks_aws.tasks.ports import Applied, Page, Throttled
from mcp_tasks_aws.tasks.transitions import Changes, Guard
from simulation.clock import VirtualClock
from simulation.scheduler import current
from simulation.sdk import Sdk


class Landed(NamedTuple):
    """One write that landed on a task."""

    seq: int
    ms: int
    writer: str
    move: str
    record: TaskRecord
    running: frozenset[str] = frozenset()
    """What ran the task as the write landed (its executions still running: the simulated
    AWS's ground truth, which no function can read)."""


@dataclass
class Trail:
    """Every landed write per task, in order (the table's stream), with a global sequence the
    history shares (`seq`), so the checker can say what landed before what was seen."""

    seq: Iterator[int]
    clock: VirtualClock
    observe: Callable[[str], frozenset[str]] = lambda task_id: frozenset()
    writes: dict[str, list[Landed]] = field(default_factory=dict)

    def landed(self, record: TaskRecord, move: str) -> None:
        process = current()
        writer = process.name if process is not None else "driver"
        running = self.observe(record.task_id)
        entry = Landed(next(self.seq), self.clock.now_ms(), writer, move, record, running)
        self.writes.setdefault(record.task_id, []).append(entry)


def _busy(error: Exception) -> Exception:
    return Throttled()


class FaultyTwin:
    """`TaskStore` on the in-memory twin, each primitive sent as its DynamoDB call would be."""

    def __init__(self, twin: InMemoryTaskStore, sdk: Sdk, trail: Trail) -> None:
        self.twin = twin
        self.sdk = sdk
        self.trail = trail
        self._last_writer: dict[str, object] = {}
        self._tokens = itertools.count()

    def _call(self, operation: str, send: Callable[[], Any]) -> Any:
        return self.sdk.call("dynamodb", operation, {}, send, give_up=_busy)

    def get(self, task_id: str) -> TaskRecord | None:
        return self._call("GetItem", lambda: self.twin.get(task_id))

    def get_many(self, task_ids: list[str]) -> dict[str, TaskRecord]:
        return self._call("BatchGetItem", lambda: self.twin.get_many(task_ids))

    def peek_many(self, task_ids: list[str]) -> dict[str, TaskHead]:
        return self._call("BatchGetItem", lambda: self.twin.peek_many(task_ids))

    def put_new(self, record: TaskRecord) -> None:
        def send() -> None:
            known = self.twin.get(record.task_id) is not None
            self.twin.put_new(record)
            if not known:
                self._last_writer.pop(record.task_id, None)
                self.trail.landed(record, "create")

        self._call("PutItem", send)

    def apply(self, task_id: str, guard: Guard, changes: Changes) -> Applied | None:
        nonce = next(self._tokens)

        def send() -> Applied | None:
            outcome = self.twin.apply(task_id, guard, changes)
            if outcome is None:
                return None
            if outcome.changed:
                self._last_writer[task_id] = nonce
                self.trail.landed(outcome.record, changes.move)
                return outcome
            # Refused: the adapter finds its own nonce on the item if its first copy landed
            # and nothing was written since (aws.dynamodb: `_carries_nonce`).
            return Applied(outcome.record, changed=self._last_writer.get(task_id) == nonce)

        result: Applied | None = self._call("UpdateItem", send)
        return result

    def list_by_owner(self, owner: str, *, limit: int, after: str | None = None) -> Page:
        return self._call("Query", lambda: self.twin.list_by_owner(owner, limit=limit, after=after))

    def unstarted(self, updated_before_ms: int, limit: int) -> list[str]:
        return self._call("Query", lambda: self.twin.unstarted(updated_before_ms, limit))

    def final_records(self) -> dict[str, TaskRecord]:
        return {record.task_id: record for record in self.twin.all_records()}


class RecordingDynamo:
    """moto's DynamoDB client, logging every task write that lands to the trail."""

    def __init__(self, client: Any, trail: Trail) -> None:
        self._client = client
        self._trail = trail

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def put_item(self, **params: Any) -> Any:
        from mcp_tasks_aws.aws.dynamodb_items import decode

        answer = self._client.put_item(**params)
        item = params.get("Item", {})
        if is_task_id(item.get("taskId", {}).get("S", "")) and "owner" in item:
            self._trail.landed(decode(item), "create")
        return answer

    def update_item(self, **params: Any) -> Any:
        from mcp_tasks_aws.aws.dynamodb_items import decode

        answer = self._client.update_item(**params)
        item = answer.get("Attributes") or {}
        if is_task_id(item.get("taskId", {}).get("S", "")) and "owner" in item:
            self._trail.landed(decode(item), _move_of(params))
        return answer


def _move_of(params: dict[str, Any]) -> str:
    """The move an UpdateItem writes, read from its status change (the trail's label)."""
    values = params.get("ExpressionAttributeValues", {})
    for value in values.values():
        text = value.get("S") if isinstance(value, dict) else None
        if text in ("completed", "failed", "cancelled", "input_required", "working"):
            return f"-> {text}"
    return "update"


@contextmanager
def moto_table(table_name: str) -> Iterator[Any]:
    """A fresh task table on moto (running: `simulation.moto_aws.moto_running`), deleted
    after."""
    import boto3

    from mcp_tasks_aws.local.aws import REGION, _create_task_table
    from simulation.moto_aws import template

    _create_task_table(template(), table_name)
    client = boto3.client("dynamodb", region_name=REGION, config=_no_retries())
    try:
        yield client
    finally:
        client.delete_table(TableName=table_name)


def _no_retries() -> Any:
    from botocore.config import Config

    # The simulated SDK does the retrying (simulation.sdk), as the real client's policy says.
    return Config(retries={"mode": "standard", "total_max_attempts": 1})
