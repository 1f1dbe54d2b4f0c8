"""The recorded history of a run: what each client sent and what came back, in order.

Only what a client sees is recorded here (the checker adds the store's trail and the final
records). Every entry carries the run's global sequence numbers of when its request was sent
and when its answer came (`sent`, `answered`), which the trail shares: "acknowledged before
that was sent" is `a.answered < b.sent`.

What a client learnt is kept as typed facts the checker judges:
- `Created`: a task the client was given (acknowledged: it must end, exactly once);
- `Seen`: a task as one answer showed it (status, open questions, the answers its result used);
- `Missing`: an answer that said the task is not there (or expired);
- `Answered`: answers the client sent for a task, and whether they were acknowledged;
- `Cancelled`: a cancel the client sent, and whether it was acknowledged;
- `Probe`: a request about a task of another caller, and what it answered.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Exchange:
    """One request and its answer (or none: the function crashed, the gateway said 502)."""

    client: str
    era: str
    method: str
    task_id: str | None
    sent: int
    sent_ms: int
    answered: int = -1
    answered_ms: int = -1
    status: int = 0
    outcome: str = ""
    """`ok`, `error <code>`, `busy` (503), `crashed` (502)."""
    note: str = ""

    def line(self) -> str:
        task = f" {self.task_id[:8]}" if self.task_id else ""
        note = f" {self.note}" if self.note else ""
        return (
            f"#{self.sent:>5}-{self.answered:<5} t={self.sent_ms / 1000:9.3f}s {self.client:<10} "
            f"{self.era:<7} {self.method}{task} -> {self.status} {self.outcome}{note}"
        )


@dataclass
class Created:
    task_id: str
    principal: str
    tool: str
    client: str
    answered: int


@dataclass
class Seen:
    task_id: str
    principal: str
    status: str
    sent: int
    answered: int
    via: str
    open_keys: frozenset[str] = frozenset()
    answers_used: dict[str, str] | None = None
    """What the task's result says each question got (completed tasks of the simulation's tools)."""
    tool_error: bool = False
    error_message: str | None = None


@dataclass
class Missing:
    task_id: str
    principal: str
    sent: int
    answered: int
    expired: bool
    via: str


@dataclass
class Answered:
    task_id: str
    principal: str
    answers: dict[str, str]
    """Key -> the unique value sent (an accepted form's `v`; `decline` for a decline)."""
    sent: int
    answered: int
    acknowledged: bool
    via: str


@dataclass
class Cancelled:
    task_id: str
    principal: str
    sent: int
    answered: int
    acknowledged: bool
    shown: str | None
    """The status the cancel's answer showed (2025-11-25, handles), if it shows one."""
    via: str


@dataclass
class Probe:
    """A request about another caller's task, and the error it answered (None: no error)."""

    task_id: str
    principal: str
    method: str
    answer: Any
    unknown_answer: Any
    """What the same request answers for an id nobody has."""


@dataclass
class History:
    exchanges: list[Exchange] = field(default_factory=list)
    created: list[Created] = field(default_factory=list)
    seen: list[Seen] = field(default_factory=list)
    missing: list[Missing] = field(default_factory=list)
    answered: list[Answered] = field(default_factory=list)
    cancelled: list[Cancelled] = field(default_factory=list)
    probes: list[Probe] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """The run's own log: actions, faults, deliveries (what a reader needs to follow it)."""

    def lines(self, limit: int = 400) -> list[str]:
        rows = [e.line() for e in self.exchanges]
        if len(rows) > limit:
            rows = [*rows[: limit // 2], f"... {len(rows) - limit} more ...", *rows[-limit // 2 :]]
        return rows
