"""The task record, task ids, the clock and TTL arithmetic, and the status a client sees.

One record per task. Nothing derived is stored: what a client sees (`server.tasks`) is computed
from the record, and how a record may change is `tasks.transitions` (which builds on this
module, never the other way round).

Invariants (held by the stores, which write only moves whose guard holds):
- a terminal status (completed, failed, cancelled) is never left; `cancelled` is the durable
  cancel marker;
- every write a client can see bumps `version` (`claim` and `attach` only change who runs the
  task); a leg's writes are fenced by `leg`;
- an answer is only ever served to a tool for a key the task asked (`asked_keys`).
"""

from __future__ import annotations

import json
import math
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Any, Final, Literal, NamedTuple

from mcp_tasks_aws.protocol.names import TERMINAL_STATUSES, TaskStatus

HeldBy = Literal["direct", "execution"]
"""Who holds a task now: its direct leg, or an execution (the fence of `tasks.transitions`)."""

# Step Functions keeps a Standard execution at most a year; an unlimited task waits that long.
MAX_WAIT_SECONDS: Final = 360 * 24 * 3600

_TASK_ID: Final = re.compile(r"[0-9a-f]{32}")


def now_ms() -> int:
    """The domain's clock: epoch milliseconds, the unit of every timestamp on a record.

    Whatever reads the time for a task (the service, the worker, the stores) takes a clock
    defaulting to this one, so a test can pass a fake.
    """
    return int(time.time() * 1000)


def expiry(created_at_ms: int, ttl_ms: int | None) -> int | None:
    """Epoch seconds after which a task created at `created_at_ms` is gone (None: never)."""
    return None if ttl_ms is None else math.ceil((created_at_ms + ttl_ms) / 1000)


def has_expired(expires_at: int | None, now_ms: int) -> bool:
    return expires_at is not None and now_ms >= expires_at * 1000


def shown_status(status: TaskStatus, outstanding: bool) -> TaskStatus:
    """The status a client sees: waiting with nothing outstanding means the next leg is starting."""
    return "working" if status == "input_required" and not outstanding else status


def new_task_id() -> str:
    """A task id with 128 random bits: 32 lowercase hex characters (safe as an execution name,
    in a URL, and as a command-line argument)."""
    return secrets.token_hex(16)


def is_task_id(text: str) -> bool:
    """Whether `text` could be an id `new_task_id` minted (anything else is unknown at once)."""
    return _TASK_ID.fullmatch(text) is not None


@dataclass(frozen=True)
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
    """Outstanding requests: key -> `{"method": ..., "params": ...}`."""
    asked_keys: frozenset[str] = frozenset()
    task_token: str | None = None
    result: dict[str, Any] | None = None
    result_ref: str | None = None
    error: dict[str, Any] | None = None
    tool_error: bool = False
    """The result is a tool error (`isError: true`), known without reading the result."""
    held_by: HeldBy = "execution"
    """Who holds the task now: its direct leg (until an execution attaches), or an execution
    (`transitions`: the fence of the moves only a direct leg may make)."""
    poll_interval_max_ms: int | None = None
    """The longest `pollIntervalMs` suggested as the task ages (None: always `poll_interval_ms`)."""
    execution_arn: str | None = None
    """The execution that *is* the task's work, when its run has one from the start (a
    declared workflow's Standard machine; None otherwise). Set at creation, never changed."""
    run: str = "legs"
    """What runs the task: a name of the run registry (`tasks.runs.registry`), chosen when
    the task is created and never changed. A direct task stays `direct` after an execution
    attaches (its `held_by` says so): that run is the `legs` run with another first leg."""

    @property
    def expires_at(self) -> int | None:
        """Epoch seconds after which the task is gone (DynamoDB TTL attribute)."""
        return expiry(self.created_at, self.ttl_ms)

    def is_expired(self, now_ms: int) -> bool:
        return has_expired(self.expires_at, now_ms)

    def poll_interval_at(self, now_ms: int) -> int:
        """The `pollIntervalMs` to suggest at `now_ms`.

        A working task: by its age (:func:`suggested_poll_interval`). A task waiting for input
        or ended: the longest interval, as nothing changes until the client acts (a client
        that answers looks again at once, whatever the hint).
        """
        if self.visible_status != "working":
            return max(self.poll_interval_ms, self.poll_interval_max_ms or 0)
        return suggested_poll_interval(
            now_ms - self.created_at, self.poll_interval_ms, self.poll_interval_max_ms
        )

    def polled_at_the_floor_until(self) -> int | None:
        """Until when (epoch ms) this task is polled at its floor interval, if it is working
        (None: its interval never grows). Listen windows hold only until then."""
        age = floor_interval_age_ms(self.poll_interval_ms, self.poll_interval_max_ms)
        return None if age is None else self.created_at + age

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
        """The status clients see (see :func:`shown_status`)."""
        return shown_status(self.status, bool(self.input_requests))

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @property
    def unheld(self) -> bool:
        """Active with nothing holding it for good: no leg claimed it yet (leg 0), or its
        direct leg claimed it, parked it (leg 2 on) and no execution attached a token. What
        the sweeper looks at (`tasks.sweep`, `UnstartedIndex` in DynamoDB)."""
        if self.is_terminal or self.task_token is not None:
            return False
        return self.leg == 0 or (self.held_by == "direct" and self.leg >= 2)

    @property
    def waiting_on_token(self) -> bool:
        """Parked on a task token with requests outstanding (cancel interrupts that wait)."""
        return bool(self.input_requests) and self.task_token is not None

    def head(self) -> TaskHead:
        return TaskHead(
            self.task_id, self.owner, self.visible_status, self.version, self.expires_at
        )

    def summary(self) -> TaskSummary:
        return TaskSummary(
            task_id=self.task_id,
            owner=self.owner,
            status=self.visible_status,
            status_message=self.status_message,
            created_at=self.created_at,
            updated_at=self.updated_at,
            ttl_ms=self.ttl_ms,
            poll_interval_ms=self.poll_interval_ms,
            tool_error=self.tool_error,
        )


class TaskHead(NamedTuple):
    """What a watcher compares between two reads of a task: who owns it, whether it is over,
    whether it expired, and its version (any write changes it)."""

    task_id: str
    owner: str
    status: TaskStatus
    version: int
    expires_at: int | None

    def is_expired(self, now_ms: int) -> bool:
        return has_expired(self.expires_at, now_ms)


class TaskSummary(NamedTuple):
    """What a listing of one owner's tasks carries per task (no payloads)."""

    task_id: str
    owner: str
    status: TaskStatus
    status_message: str | None
    created_at: int
    updated_at: int
    ttl_ms: int | None
    poll_interval_ms: int
    tool_error: bool = False

    @property
    def expires_at(self) -> int | None:
        return expiry(self.created_at, self.ttl_ms)

    def is_expired(self, now_ms: int) -> bool:
        return has_expired(self.expires_at, now_ms)


POLL_AGE_DIVISOR: Final = 10
"""A task is polled about every tenth of its age: the wait after it ends is then ~5% of it."""


def suggested_poll_interval(age_ms: int, floor_ms: int, ceiling_ms: int | None) -> int:
    """How long a client should wait between `tasks/get` polls of a task `age_ms` old.

    The interval grows with the task's age, from `floor_ms` (a new task, which may end any
    moment) to `ceiling_ms` (a task running for minutes): about a tenth of the age, in steps
    that double from the floor (so it changes rarely), within those bounds. With a floor of
    500 ms and a ceiling of 10 s: 500 ms for the first 10 s, 1 s until 20 s, 2 s until 40 s,
    4 s until 80 s, 8 s until 100 s, then 10 s; a 5-minute task is polled about 50 times
    instead of 300 at a fixed second.
    """
    if ceiling_ms is None or ceiling_ms <= floor_ms:
        return floor_ms
    interval = floor_ms
    while interval * 2 <= max(0, age_ms) // POLL_AGE_DIVISOR and interval * 2 < ceiling_ms:
        interval *= 2
    return ceiling_ms if age_ms // POLL_AGE_DIVISOR >= ceiling_ms else interval


def floor_interval_age_ms(floor_ms: int, ceiling_ms: int | None) -> int | None:
    """The age at which :func:`suggested_poll_interval` first suggests more than `floor_ms`
    (None: never, the interval does not grow): 10 s with a 500 ms floor."""
    if ceiling_ms is None or ceiling_ms <= floor_ms:
        return None
    return POLL_AGE_DIVISOR * min(2 * floor_ms, ceiling_ms)


def encode_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)
