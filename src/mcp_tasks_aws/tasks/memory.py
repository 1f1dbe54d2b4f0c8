"""The in-memory twin of the DynamoDB task store: the same contract, held in a dict.

It exists so the task domain can be tested without moto, and so races can be forced step by
step: `before_call` (if set) runs before every primitive, outside the lock, with the primitive's
name and task id, and a test can block there to let another caller go first. The one contract
suite in `tests/tasks/test_store_contract.py` runs against this store and the DynamoDB adapter
alike.

Guards and changes are decided by the pure functions of `tasks.transitions`; the lock makes
check-and-write one step, as a DynamoDB conditional write is.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from mcp_tasks_aws.tasks.exceptions import TaskAlreadyExists
from mcp_tasks_aws.tasks.model import TaskHead, TaskRecord, now_ms
from mcp_tasks_aws.tasks.ports import Applied, Page
from mcp_tasks_aws.tasks.transitions import Changes, Guard, allows, applied


class InMemoryTaskStore:
    """TaskStore in a dict, atomic per call."""

    def __init__(self, clock: Callable[[], int] = now_ms) -> None:
        self._records: dict[str, TaskRecord] = {}
        self._lock = threading.Lock()
        self._clock = clock
        self.before_call: Callable[[str, str], None] | None = None

    def _enter(self, primitive: str, task_id: str) -> None:
        if self.before_call is not None:
            self.before_call(primitive, task_id)

    def get(self, task_id: str) -> TaskRecord | None:
        self._enter("get", task_id)
        with self._lock:
            return self._records.get(task_id)

    def get_many(self, task_ids: list[str]) -> dict[str, TaskRecord]:
        self._enter("get_many", ",".join(task_ids))
        with self._lock:
            return {i: self._records[i] for i in dict.fromkeys(task_ids) if i in self._records}

    def peek_many(self, task_ids: list[str]) -> dict[str, TaskHead]:
        self._enter("peek_many", ",".join(task_ids))
        with self._lock:
            return {
                i: self._records[i].head() for i in dict.fromkeys(task_ids) if i in self._records
            }

    def put_new(self, record: TaskRecord) -> None:
        self._enter("put_new", record.task_id)
        with self._lock:
            if record.task_id in self._records:
                if self._records[record.task_id] == record:
                    return  # the same write again (a retry whose first try landed)
                raise TaskAlreadyExists(record.task_id)
            self._records[record.task_id] = record

    def apply(self, task_id: str, guard: Guard, changes: Changes) -> Applied | None:
        self._enter(f"apply:{changes.move}", task_id)
        with self._lock:
            record = self._records.get(task_id)
            if record is None:
                return None
            if not allows(guard, record):
                return Applied(record, changed=False)
            after = applied(record, changes)
            self._records[task_id] = after
            return Applied(after, changed=True)

    def list_by_owner(self, owner: str, *, limit: int, after: str | None = None) -> Page:
        self._enter("list_by_owner", owner)
        start = _position(after) if after is not None else None
        now = self._clock()
        with self._lock:
            mine = sorted(
                (r for r in self._records.values() if r.owner == owner),
                key=lambda r: (r.created_at, r.task_id),
                reverse=True,
            )
        if start is not None:
            mine = [r for r in mine if (r.created_at, r.task_id) < start]
        page = mine[:limit]
        more = len(mine) > limit
        tasks = [r.summary() for r in page if not r.is_expired(now)]
        last = page[-1] if page else None
        return Page(tasks, f"{last.created_at}/{last.task_id}" if more and last else None)

    def unstarted(self, updated_before_ms: int, limit: int) -> list[str]:
        self._enter("unstarted", "")
        with self._lock:
            found = sorted(
                (r for r in self._records.values() if r.unheld),
                key=lambda r: (r.updated_at, r.task_id),
            )
        return [r.task_id for r in found if r.updated_at < updated_before_ms][:limit]

    # -- test helpers -----------------------------------------------------------------------------

    def all_records(self) -> list[TaskRecord]:
        with self._lock:
            return list(self._records.values())


def _position(after: str) -> tuple[int, str]:
    created, sep, task_id = after.partition("/")
    if not sep or not created.isdigit() or not task_id:
        raise ValueError("not a position of this store")
    return int(created), task_id
