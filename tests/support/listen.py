"""`subscriptions/listen` over HTTP: an SSE reader that times each event, the listen contract
every stream is checked against (each message valid against its schema), a listen in the
background, and a worker whose legs can start late.

A listen stream is read line by line (`data:` lines, one JSON document each) as it arrives, so
tests can tell a streamed window (the ack early) from a buffered one (everything at the end).
Every read has a socket timeout and every wait a deadline.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from mcp_tasks_aws.local.stack import EmbeddedStack
from support.mcp import PROTOCOL_VERSION
from support.schemas import MCP, TASKS
from support.tasks import CAPABILITIES, WorkerDispatch

SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
TASK_NOTIFICATION = "notifications/tasks"
TOOLS_CHANGED = "notifications/tools/list_changed"
PROMPTS_CHANGED = "notifications/prompts/list_changed"
# Never on a listen stream.
FORBIDDEN = {"notifications/progress", "notifications/message"}
# Without the Tasks opt-in (list-changed needs no capability).
NO_TASKS_CAPABILITIES: dict[str, Any] = {"elicitation": {}}


def assert_valid_message(message: dict[str, Any]) -> None:
    """Validate one message of a listen stream against its schema definition."""
    method = message.get("method")
    if method is None:
        MCP.assert_valid(message, "SubscriptionsListenResultResponse")
        MCP.assert_valid(message, "JSONRPCResultResponse")
        MCP.assert_valid(message["result"], "SubscriptionsListenResult")
        return
    if method == ACKNOWLEDGED:
        MCP.assert_valid(message, "SubscriptionsAcknowledgedNotification")
    elif method == TOOLS_CHANGED:
        MCP.assert_valid(message, "ToolListChangedNotification")
    elif method == PROMPTS_CHANGED:
        MCP.assert_valid(message, "PromptListChangedNotification")
    elif method == TASK_NOTIFICATION:
        TASKS.assert_valid(message, "TaskStatusNotification")
    else:
        pytest.fail(f"unexpected message on a listen stream: {message}")


# -- reading a listen stream ---------------------------------------------------------------------


@dataclass
class Listened:
    """One `subscriptions/listen` exchange: status, headers, and each message with its arrival
    time (seconds since the request was sent)."""

    rid: Any
    status: int
    headers: dict[str, str]
    timed: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    body: Any = None  # the JSON body of a non-SSE answer (an error)
    ended_at: float = 0.0
    closed_by_client: bool = False
    """The client stopped reading (`listen(until=...)`): the stream has no response yet."""

    @property
    def messages(self) -> list[dict[str, Any]]:
        return [message for _, message in self.timed]

    @property
    def ack(self) -> dict[str, Any]:
        return self.messages[0]

    @property
    def response(self) -> dict[str, Any]:
        return self.messages[-1]

    @property
    def snapshot(self) -> list[dict[str, Any]]:
        """Right after the ack: each honoured task as it stood when the listen opened."""
        honoured = self.acked().get("taskIds") or []
        return self.messages[1 : 1 + len(honoured)]

    @property
    def notifications(self) -> list[dict[str, Any]]:
        """What came between the snapshot and the response (or the client's close): the
        changes."""
        end = None if self.closed_by_client else -1
        return self.messages[1 + len(self.snapshot) : end]

    def of(self, method: str) -> list[dict[str, Any]]:
        return [m for m in self.notifications if m.get("method") == method]

    def acked(self) -> dict[str, Any]:
        """The `notifications` the server agreed to honour."""
        honoured: dict[str, Any] = self.ack["params"]["notifications"]
        return honoured

    def check(self) -> None:
        """The listen contract: 200 SSE; ack first, response last, notifications between, each
        tagged with this subscription's id; every message valid against the schema."""
        assert self.status == 200, (self.status, self.body)
        assert self.headers.get("content-type", "").startswith("text/event-stream"), self.headers
        messages = self.messages
        assert len(messages) >= 2, messages
        assert messages[0].get("method") == ACKNOWLEDGED, messages[0]
        assert "id" not in messages[0]
        if not self.closed_by_client:
            last = messages[-1]
            assert last.get("id") == self.rid, last
            assert "method" not in last, last
            assert "error" not in last, last
            expected = {"resultType": "complete", "_meta": {SUBSCRIPTION_ID: self.rid}}
            assert last["result"] == expected
        for message in messages if self.closed_by_client else messages[:-1]:
            assert message.get("jsonrpc") == "2.0", message
            assert "id" not in message, f"only the last message may be a response: {message}"
            assert message.get("method") not in FORBIDDEN, message
            assert message["params"]["_meta"][SUBSCRIPTION_ID] == self.rid, message
        assert [m.get("method") for m in messages[1:-1]].count(ACKNOWLEDGED) == 0
        # The snapshot: one notifications/tasks per honoured task, before any change.
        honoured = self.acked().get("taskIds") or []
        assert [m.get("method") for m in self.snapshot] == [TASK_NOTIFICATION] * len(honoured)
        assert sorted(m["params"]["taskId"] for m in self.snapshot) == sorted(honoured)
        for message in messages:
            assert_valid_message(message)


def listen_body(
    notifications: dict[str, Any],
    rid: Any,
    capabilities: dict[str, Any] | None = None,
    meta_extra: dict[str, Any] | None = None,
) -> bytes:
    meta = {
        "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
        "io.modelcontextprotocol/clientCapabilities": (
            CAPABILITIES if capabilities is None else capabilities
        ),
        **(meta_extra or {}),
    }
    message = {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "subscriptions/listen",
        "params": {"notifications": notifications, "_meta": meta},
    }
    return json.dumps(message).encode()


def listen_headers(token: str | None = None) -> dict[str, str]:
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL_VERSION,
        "Mcp-Method": "subscriptions/listen",
    }
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def listen(
    stack: EmbeddedStack,
    notifications: dict[str, Any],
    *,
    rid: Any,
    token: str | None = None,
    capabilities: dict[str, Any] | None = None,
    meta_extra: dict[str, Any] | None = None,
    deadline_s: float = 15.0,
    on_message: Callable[[dict[str, Any]], None] | None = None,
    until: Callable[[dict[str, Any]], bool] | None = None,
) -> Listened:
    """POST a listen over HTTP on 127.0.0.1 and read its SSE stream to the end, or until a
    message satisfies `until` (then the client closes it, as a client cancels a listen)."""
    body = listen_body(notifications, rid, capabilities, meta_extra)
    connection = http.client.HTTPConnection(stack.host, stack.port, timeout=deadline_s)
    started = time.monotonic()
    deadline = started + deadline_s
    try:
        connection.request("POST", "/mcp", body=body, headers=listen_headers(token))
        response = connection.getresponse()
        headers = {k.lower(): v for k, v in response.getheaders()}
        result = Listened(rid=rid, status=response.status, headers=headers)
        if not headers.get("content-type", "").startswith("text/event-stream"):
            raw = response.read()
            result.body = json.loads(raw) if raw else None
            result.ended_at = time.monotonic() - started
            return result
        while True:
            if time.monotonic() > deadline:
                pytest.fail(f"listen {rid!r} still open after {deadline_s} s")
            line = response.readline()
            if not line:
                break
            text = line.decode().rstrip("\r\n")
            if text.startswith("data:"):
                message = json.loads(text[len("data:") :])
                result.timed.append((time.monotonic() - started, message))
                if on_message is not None:
                    on_message(message)
                if until is not None and until(message):
                    result.closed_by_client = True
                    break
        result.ended_at = time.monotonic() - started
        return result
    finally:
        connection.close()


def listen_until_terminal(
    stack: EmbeddedStack, task_id: str, new_id: Callable[[], str], rounds: int = 10
) -> tuple[dict[str, Any], list[Listened]]:
    """Listen again and again, as a client does, until a notification shows the task ended;
    return that notification and every window. Each window is checked."""
    windows: list[Listened] = []
    for _ in range(rounds):
        listened = listen(stack, {"taskIds": [task_id]}, rid=new_id())
        listened.check()
        windows.append(listened)
        for note in [*listened.snapshot, *listened.notifications]:
            if note["params"]["status"] in ("completed", "failed", "cancelled"):
                return note, windows
    pytest.fail(f"{task_id} did not end within {rounds} windows")


class Background:
    """A listen running in a thread; `wait_ack` returns once its ack has arrived."""

    def __init__(self, stack: EmbeddedStack, notifications: dict[str, Any], **kwargs: Any):
        self._acked = threading.Event()
        self.result: Listened | None = None
        self.error: BaseException | None = None

        def seen(message: dict[str, Any]) -> None:
            if message.get("method") == ACKNOWLEDGED:
                self._acked.set()

        def run() -> None:
            try:
                self.result = listen(stack, notifications, on_message=seen, **kwargs)
            except BaseException as exc:
                self.error = exc
            finally:
                self._acked.set()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()

    def wait_ack(self, timeout: float = 5.0) -> None:
        assert self._acked.wait(timeout), f"no acknowledgement within {timeout} s"
        if self.error is not None:
            raise self.error

    def join(self, timeout: float = 15.0) -> Listened:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), f"listen still open after {timeout} s"
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result


def task_note(*statuses: str) -> Callable[[dict[str, Any]], bool]:
    """`listen(until=...)`: a change (not the snapshot) showing one of `statuses`, or any task
    change when none is given."""
    seen: list[dict[str, Any]] = []

    def ends(message: dict[str, Any]) -> bool:
        if message.get("method") != TASK_NOTIFICATION:
            return False
        seen.append(message)
        # The first task notification of a single-task listen is its snapshot.
        if len(seen) == 1:
            return False
        return not statuses or message["params"]["status"] in statuses

    return ends


def method_note(method: str) -> Callable[[dict[str, Any]], bool]:
    """`listen(until=...)`: the first notification of `method`."""
    return lambda message: message.get("method") == method


def as_get(notification: dict[str, Any]) -> dict[str, Any]:
    """A `notifications/tasks` params less `_meta`: what `tasks/get` returns less resultType."""
    params = dict(notification["params"])
    params.pop("_meta")
    return params


def without_result_type(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if k != "resultType"}


# -- a worker that starts late ------------------------------------------------------------------


class PacedDispatch(WorkerDispatch):
    """The worker as the state machine sees it, where every leg of a task whose tool is in
    `leg_delay` starts that many seconds late: a listen then opens while the task is still
    `working`, however fast the leg would have been (no race with the first snapshot)."""

    def __init__(self, stack: EmbeddedStack) -> None:
        super().__init__(stack)
        self.leg_delay: dict[str, float] = {}

    def __call__(self, event: dict[str, Any], context: Any) -> Any:
        if self.leg_delay:
            record = self.stack.worker_app.store.get(str(event.get("taskId")))
            delay = self.leg_delay.get(record.tool) if record is not None else None
            if delay:
                time.sleep(delay)
        return super().__call__(event, context)
