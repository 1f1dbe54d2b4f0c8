"""A listen window's bytes are bounded: tasks' payloads (results, input requests, errors) are
sent while they fit, counted as encoded in the Lambda response; past that a task is sent as a
plain `Task` (the client reads the payload with `tasks/get`), an offloaded result that cannot
fit is not even read back, and once plain notifications no longer fit the window ends.

The in-memory store and a recording result store, a deterministic clock: no AWS, no sleeps."""

from __future__ import annotations

import json
from typing import Any

from mcp_tasks_aws.protocol import models as m
from mcp_tasks_aws.protocol.jsonrpc import Request, encoded_size
from mcp_tasks_aws.server.call import Call
from mcp_tasks_aws.server.listen import PAYLOAD_FIELDS, WINDOW_BYTES, Listener
from mcp_tasks_aws.tasks.memory import InMemoryTaskStore
from mcp_tasks_aws.tasks.model import TaskRecord, new_task_id
from mcp_tasks_aws.tasks.service import TaskService
from support.schemas import TASKS

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {m.TASKS_EXTENSION: {}}},
}
KB = 1000


def completed(**extra: Any) -> TaskRecord:
    values: dict[str, Any] = {
        "task_id": new_task_id(),
        "owner": "alice",
        "tool": "t",
        "arguments": {},
        "capabilities": {},
        "status": "completed",
        "created_at": 1,
        "updated_at": 1,
        "ttl_ms": None,
        "poll_interval_ms": 100,
    }
    return TaskRecord(**{**values, **extra})


def text_result(chars: int) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": '"' * chars}]}  # quotes: escaped twice


class Bucket:
    """Offloaded results by reference, recording every read (HEADs are not reads)."""

    def __init__(self) -> None:
        self.bodies: dict[str, bytes] = {}
        self.reads: list[str] = []

    def add(self, result: dict[str, Any]) -> str:
        ref = f"results/{len(self.bodies)}.json"
        self.bodies[ref] = json.dumps(result, separators=(",", ":")).encode()
        return ref

    def put(self, task_id: str, body: bytes, expires_at: int | None) -> str:
        raise AssertionError("nothing is offloaded here")

    def get(self, ref: str) -> bytes:
        self.reads.append(ref)
        return self.bodies[ref]

    def size(self, ref: str) -> int:
        return len(self.bodies[ref])


def listen(records: list[TaskRecord], bucket: Bucket, **limits: int) -> list[dict[str, Any]]:
    """One whole window over `records` (all terminal: the snapshot, then the result)."""
    store = InMemoryTaskStore()
    for record in records:
        store.put_new(record)
    service = TaskService(store, runner=None, results=bucket)  # type: ignore[arg-type]
    clock = iter(i * 0.1 for i in range(1000))
    listener = Listener(
        tasks=service,
        feed=None,
        has_prompts=False,
        window_ms=1000,
        poll_ms=100,
        clock=lambda: next(clock),
        sleep=lambda _: None,
        **limits,
    )
    call = Call(Request(7, "subscriptions/listen", {}), "alice", m.RequestMeta.model_validate(META))
    ids = [record.task_id for record in records]
    params = m.ListenParams.model_validate({"_meta": META, "notifications": {"taskIds": ids}})
    return list(listener.open(call, params))


def tasks_in(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [msg["params"] for msg in messages if msg.get("method") == "notifications/tasks"]


def assert_plain_task(params: dict[str, Any]) -> None:
    """A notification without its payload is the extension's `Task` (with `_meta`)."""
    assert not set(PAYLOAD_FIELDS) & set(params)
    TASKS.assert_valid({k: v for k, v in params.items() if k != "_meta"}, "Task")
    TASKS.assert_valid({"_meta": params["_meta"]}, "NotificationParams")


def test_thirty_offloaded_results_of_400_kb_fit_one_lambda_response() -> None:
    # Given 30 completed tasks whose results (400 KB of JSON, 800 KB encoded) live in S3: 24 MB
    bucket = Bucket()
    records = [completed(result_ref=bucket.add(text_result(200 * KB))) for _ in range(30)]
    # When one window shows them all
    messages = listen(records, bucket)
    # Then the window fits the bound (and so Lambda's 6 MB response)
    assert sum(encoded_size(msg) for msg in messages) <= WINDOW_BYTES < 6 * 1024 * 1024
    shown = tasks_in(messages)
    assert len(shown) == 30  # every task is notified
    with_result = [task for task in shown if "result" in task]
    assert 1 <= len(with_result) < 30
    assert all(
        task["result"]["content"] == text_result(200 * KB)["content"] for task in with_result
    )
    for task in shown:
        if "result" not in task:
            assert task["status"] == "completed"
            assert_plain_task(task)
    assert messages[-1] == {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {
            "resultType": "complete",
            "_meta": {"io.modelcontextprotocol/subscriptionId": 7},
        },
    }


def test_an_offloaded_result_larger_than_the_room_left_is_not_read_back() -> None:
    bucket = Bucket()
    small = completed(result_ref=bucket.add(text_result(1 * KB)))
    large = completed(result_ref=bucket.add(text_result(50 * KB)))
    messages = listen([small, large], bucket, payload_bytes=20 * KB)
    by_id = {task["taskId"]: task for task in tasks_in(messages)}
    assert by_id[small.task_id]["result"]["content"] == text_result(1 * KB)["content"]
    assert_plain_task(by_id[large.task_id])
    assert bucket.reads == [small.result_ref]  # the large one's size was asked, not its body


def test_a_result_on_the_item_that_does_not_fit_is_left_out_by_its_encoded_size() -> None:
    # 6 KB of quotes: 12 KB of JSON, 24 KB encoded; the room is 20 KB
    record = completed(result=text_result(6 * KB))
    (task,) = tasks_in(listen([record], Bucket(), payload_bytes=20 * KB))
    assert_plain_task(task)


def test_input_requests_and_errors_are_payloads_too() -> None:
    asking = completed(status="input_required", input_requests={"q": {"method": "roots/list"}})
    failed = completed(status="failed", error={"code": -32603, "message": "x" * 100})
    shown = tasks_in(listen([asking, failed], Bucket(), payload_bytes=0))
    assert [task["status"] for task in shown] == ["input_required", "failed"]
    for task in shown:
        assert_plain_task(task)


def test_the_window_ends_early_once_even_a_plain_task_does_not_fit() -> None:
    records = [completed(result=text_result(10)) for _ in range(5)]
    one_plain = encoded_size(tasks_in(listen(records[:1], Bucket(), payload_bytes=0))[0])
    messages = listen(records, Bucket(), payload_bytes=0, window_bytes=600 + 2 * one_plain)
    assert 1 <= len(tasks_in(messages)) < 5
    assert messages[-1]["result"]["resultType"] == "complete"  # a graceful close: listen again
