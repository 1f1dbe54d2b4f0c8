"""The task record, its statuses, ids and TTL arithmetic.

One record per task. What the wire shows (`DetailedTask`) is derived from it by
:meth:`TaskRecord.to_wire`; nothing derived is stored.

Invariants (enforced by the store's conditional writes, which only change ACTIVE tasks):
- an active task (working, input_required) may move to any status; a terminal one
  (completed, failed, cancelled) is never left;
- `cancel_requested` overrides everything: once set, no worker outcome is recorded;
- every write bumps `version`; the worker's writes are also conditioned on `leg`, the number
  of the leg that read the record, so a stale or duplicate leg cannot record anything;
- an answer is only ever served to a tool for a key the task asked (`asked_keys`).
"""

from __future__ import annotations

import json
import math
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
ACTIVE: frozenset[str] = frozenset({"working", "input_required"})

# Step Functions keeps a Standard execution at most a year; an unlimited task waits that long.
MAX_WAIT_SECONDS = 360 * 24 * 3600


def new_task_id() -> str:
    """A task id with 128 random bits: 32 lowercase hex characters (safe as an execution name,
    in a URL, and as a command-line argument)."""
    return secrets.token_hex(16)


def iso(ms: int) -> str:
    """Epoch milliseconds as an ISO 8601 UTC timestamp."""
    moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


@dataclass
class TaskRecord:
    task_id: str
    owner: str
    tool: str
    arguments: dict[str, Any]
    capabilities: dict[str, Any]
    status: TaskStatus
    created_at: int
    updated_at: int
    ttl_ms: int | None
    poll_interval_ms: int
    status_message: str | None = None
    version: int = 1
    leg: int = 0
    answers: dict[str, Any] = field(default_factory=dict)
    input_requests: dict[str, dict[str, Any]] = field(default_factory=dict)
    asked_keys: frozenset[str] = frozenset()
    task_token: str | None = None
    cancel_requested: bool = False
    result: dict[str, Any] | None = None
    result_ref: str | None = None
    error: dict[str, Any] | None = None

    @property
    def expires_at(self) -> int | None:
        """Epoch seconds after which the task is gone (DynamoDB TTL attribute)."""
        if self.ttl_ms is None:
            return None
        return math.ceil((self.created_at + self.ttl_ms) / 1000)

    def is_expired(self, now_ms: int) -> bool:
        expires = self.expires_at
        return expires is not None and now_ms >= expires * 1000

    def wait_seconds(self, now_ms: int) -> int:
        """How long the execution may wait from now: the remaining TTL, at least a second."""
        expires = self.expires_at
        if expires is None:
            return MAX_WAIT_SECONDS
        return max(1, min(MAX_WAIT_SECONDS, expires - now_ms // 1000))

    @property
    def journal(self) -> dict[str, Any]:
        """The answers a replayed leg may use: only those for keys the task asked."""
        return {k: v for k, v in self.answers.items() if k in self.asked_keys}

    @property
    def visible_status(self) -> TaskStatus:
        # All outstanding requests answered: the next leg is starting, so the task is working
        # again even before the worker records anything.
        if self.status == "input_required" and not self.input_requests:
            return "working"
        return self.status

    def header(self) -> dict[str, Any]:
        """The fields every task shape carries (CreateTaskResult and DetailedTask)."""
        task: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.visible_status,
            "createdAt": iso(self.created_at),
            "lastUpdatedAt": iso(self.updated_at),
            "ttlMs": self.ttl_ms,
            "pollIntervalMs": self.poll_interval_ms,
        }
        if self.status_message:
            task["statusMessage"] = self.status_message
        return task

    def to_wire(self, result: dict[str, Any] | None = None) -> dict[str, Any]:
        """The DetailedTask `tasks/get` returns; `result` is the resolved (maybe offloaded) one."""
        task = self.header()
        status = task["status"]
        if status == "input_required":
            task["inputRequests"] = self.input_requests
        elif status == "completed":
            task["result"] = result if result is not None else self.result
        elif status == "failed":
            task["error"] = self.error or {"code": -32603, "message": "Task failed"}
        return task


def encode_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)
