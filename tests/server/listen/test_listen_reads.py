"""A listen window polls only the watched tasks' heads, and builds the full task (which may
read an offloaded result back from S3) only for a notification it sends."""

from __future__ import annotations

from typing import Any

from mcp_tasks_aws.protocol import models as m
from mcp_tasks_aws.protocol.jsonrpc import Request
from mcp_tasks_aws.server.call import Call
from mcp_tasks_aws.server.listen import Listener
from mcp_tasks_aws.tasks.memory import InMemoryTaskStore
from mcp_tasks_aws.tasks.model import TaskHead, TaskRecord, new_task_id
from mcp_tasks_aws.tasks.service import TaskService

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {m.TASKS_EXTENSION: {}}},
}


def record(status: str, **extra: Any) -> TaskRecord:
    return TaskRecord(
        task_id=new_task_id(),
        owner="alice",
        tool="t",
        arguments={},
        capabilities={},
        status=status,  # type: ignore[arg-type]
        created_at=1,
        updated_at=1,
        ttl_ms=None,
        poll_interval_ms=100,
        **extra,
    )


class Store(InMemoryTaskStore):
    """The in-memory store, counting the batch reads a listen makes, whole and projected."""

    def __init__(self, *records: TaskRecord) -> None:
        super().__init__()
        for record in records:
            self.put_new(record)
        self.batch_reads = 0
        self.peeks = 0

    def get_many(self, task_ids: list[str]) -> dict[str, TaskRecord]:
        self.batch_reads += 1
        return super().get_many(task_ids)

    def peek_many(self, task_ids: list[str]) -> dict[str, TaskHead]:
        self.peeks += 1
        return super().peek_many(task_ids)


class Results:
    """A result store that records every read."""

    def __init__(self) -> None:
        self.reads: list[str] = []

    def put(self, task_id: str, body: bytes) -> str:
        raise AssertionError("nothing is offloaded here")

    def get(self, ref: str) -> bytes:
        self.reads.append(ref)
        return b'{"content": []}'

    def size(self, ref: str) -> int:
        return len(b'{"content": []}')


def test_offloaded_results_are_not_read_on_polls_that_send_nothing() -> None:
    # Given a completed task whose result lives in S3, and a working task, both watched
    done = record("completed", result_ref="results/x.json")
    working = record("working")
    store = Store(done, working)
    results = Results()
    service = TaskService(store, runner=None, results=results)  # type: ignore[arg-type]
    clock = iter(i * 0.1 for i in range(1000))
    listener = Listener(
        tasks=service,
        feed=None,
        has_prompts=False,
        window_ms=1000,
        poll_ms=100,
        clock=lambda: next(clock),
        sleep=lambda _: None,
    )
    call = Call(
        request=Request(7, "subscriptions/listen", {}),
        principal="alice",
        meta=m.RequestMeta.model_validate(META),
    )
    params = m.ListenParams.model_validate(
        {"_meta": META, "notifications": {"taskIds": [done.task_id, working.task_id]}}
    )
    # When the window runs to its end with nothing changing
    messages = list(listener.open(call, params))
    # Then it sent each task once as it stood (reading the offloaded result for that), and
    # then polled only the heads: no whole record, no result read again
    assert [msg.get("method") for msg in messages] == [
        "notifications/subscriptions/acknowledged",
        "notifications/tasks",
        "notifications/tasks",
        None,
    ]
    assert store.peeks > 3
    assert store.batch_reads == 1  # the records the snapshot shows
    assert results.reads == ["results/x.json"]
