"""What a legacy session stores server-side, and the port it is stored through.

A session itself is a sealed token (`protocol.legacy`); only what changes after `initialize`
is stored, in small items that expire with the session:

- the session's *state*: its log level (`logging/setLevel`) and whether it has ended
  (`DELETE`); read once per legacy request;
- a *parked call*: an inline `tools/call` or `prompts/get` waiting for the client's answers to
  server->client requests (elicitation, sampling, roots). The answers arrive in separate POSTs
  (any function instance) and the call resumes on a later `GET` with `Last-Event-ID`;
- the session's *tasks*: the ids of the tasks it created, oldest first (at most
  `MAX_SESSION_TASKS`), which its `tasks/list` shows; read by that method only;
- a task question's *hold*: who was last sent one of a task's outstanding requests (on a
  `tasks/get` or `tasks/result` stream), and until when no other poller is sent it
  (`hold_question`), so a question goes to one client at a time and is answered once.

`LegacySessionStore` is the port; `aws.sessions.DynamoLegacySessionStore` fills it on the task
table, `InMemoryLegacySessionStore` (below) is its twin for tests and for a server without a
table (then a session ends only in the process that saw its `DELETE`).

Invariants (both implementations):
- an ended session never comes back; its log level can no longer change;
- the first answer to a question wins; answers to a question not outstanding change nothing;
- a parked call moves from round r to r+1 only once (two resumes cannot both re-park it), and
  ends once (`finish`), after which its arguments, questions and answers are gone; what it
  ended with (`outcome`, the final JSON-RPC message) may stay a short while, for a client
  whose resumed stream was lost on its way to read again;
- a round is run by one resume at a time (`claim`): the claim holds until its `until`
  (epoch seconds), after which a resume may take it again (the one that held it died);
- a task question is held by one holder at a time: `hold_question` takes it only when nobody
  holds it, its hold has lapsed, or the holder already holds it (then it is renewed);
- items whose `expires_at` (epoch seconds) has passed read as absent;
- a parked call is one item of at most `ITEM_LIMIT_CHARS` (DynamoDB's 400 KB): a park or an
  answer that would take it past that raises `CallTooLarge` and writes nothing.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol

from mcp_tasks_aws.protocol.jsonrpc import RequestId


class SessionEnded(Exception):
    """The session was ended (`DELETE`): it accepts nothing more."""


class CallConflict(Exception):
    """The parked call is not at the round the write expected (another resume moved it)."""


class CallTooLarge(Exception):
    """The write would take the parked call past the store's item limit (nothing written)."""


MAX_SESSION_TASKS = 1000
"""The most tasks a session's `tasks/list` shows: the first ones it created (the list is one
small item; later tasks are still there by id)."""
ITEM_LIMIT_CHARS = 400 * 1024
"""DynamoDB's largest item; the in-memory twin holds a call's JSON to it, as a stand-in."""


@dataclass(frozen=True)
class SessionState:
    log_level: str | None = None
    ended: bool = False


@dataclass(frozen=True)
class ParkedCall:
    """An inline call waiting for the client's answers to this round's questions."""

    ref: str
    sid: str
    request_id: RequestId
    method: str
    """`tools/call` or `prompts/get`."""
    params: dict[str, Any]
    """The request's params as the client sent them (name, arguments, its `_meta`)."""
    request_state: str | None
    """The sealed multi round-trip state of the answers before this round."""
    asked: dict[str, dict[str, Any]]
    """This round's questions: input key -> `{method, params}` (as `inputRequests` has them)."""
    round: int
    expires_at: int
    answers: dict[str, Any] = field(default_factory=dict)
    failure: dict[str, Any] | None = None
    """A JSON-RPC error the client answered a question with: the call fails with it."""
    done: bool = False
    claimed_until: int | None = None
    """Until when (epoch seconds) a resume holds this round to run it (`claim`)."""
    outcome: dict[str, Any] | None = None
    """A call done: the JSON-RPC message it ended with, kept until `expires_at` (`finish`)."""

    @property
    def outstanding(self) -> set[str]:
        return set(self.asked) - set(self.answers)

    @property
    def ready(self) -> bool:
        """Whether the call can resume: every question answered, or one refused."""
        return not self.done and (self.failure is not None or not self.outstanding)


class LegacySessionStore(Protocol):
    """Durable legacy-session state; every read is strongly consistent."""

    def state(self, sid: str) -> SessionState:
        """The session's state (the default state if nothing was ever stored)."""
        ...

    def set_log_level(self, sid: str, level: str, expires_at: int) -> None:
        """Record the session's log level; SessionEnded if it has ended."""
        ...

    def end(self, sid: str, expires_at: int) -> bool:
        """End the session for good; False if it had already ended."""
        ...

    def park(self, call: ParkedCall, previous_round: int | None = None) -> None:
        """Store a call's round: a new call (`previous_round` None) or the next round of one
        still at `previous_round`, its answers cleared; CallConflict otherwise, CallTooLarge
        if it does not fit in one item."""
        ...

    def parked(self, ref: str) -> ParkedCall | None:
        """The parked call, or None if unknown or expired."""
        ...

    def answer(
        self, ref: str, key: str, answer: Any = None, failure: dict[str, Any] | None = None
    ) -> bool:
        """Record the answer (or the client's error) to an outstanding question of a call not
        done and not refused; False (nothing written) if there is no such question, it is
        answered, or another question was answered with an error. CallTooLarge if the call
        would no longer fit in one item with it."""
        ...

    def claim(self, ref: str, round: int, until: int) -> bool:
        """Take the call's `round` to run it, until `until` (epoch seconds); False if the call
        is not open at that round, or another resume holds it still."""
        ...

    def remember_task(self, sid: str, task_id: str, expires_at: int) -> bool:
        """Add a task the session created to its list; False (nothing written) once the list
        holds `MAX_SESSION_TASKS`."""
        ...

    def session_tasks(self, sid: str) -> list[str]:
        """The ids of the tasks the session created, oldest first (none if it made none)."""
        ...

    def hold_question(self, task_id: str, key: str, holder: str, until: int) -> bool:
        """Take (or, for its holder, renew) the delivery of task `task_id`'s outstanding
        request `key` until `until` (epoch seconds); False (nothing written) if another
        holder holds it still."""
        ...

    def finish(
        self,
        ref: str,
        round: int,
        outcome: dict[str, Any] | None = None,
        expires_at: int | None = None,
    ) -> bool:
        """Mark the call done at `round` and drop its payloads, keeping `outcome` (what it
        ended with) until `expires_at` (the call's own expiry if None); False if it was not
        there."""
        ...


class InMemoryLegacySessionStore:
    """`LegacySessionStore` in a dict, honouring the same contract (tests, no-table servers)."""

    def __init__(
        self, clock: Callable[[], float] = time.time, item_limit_chars: int = ITEM_LIMIT_CHARS
    ) -> None:
        self._clock = clock
        self._item_limit = item_limit_chars
        self._lock = threading.Lock()
        self._states: dict[str, tuple[SessionState, int]] = {}
        self._calls: dict[str, ParkedCall] = {}
        self._tasks: dict[str, tuple[list[str], int]] = {}
        self._holds: dict[tuple[str, str], tuple[str, int]] = {}

    def _live_state(self, sid: str) -> SessionState:
        entry = self._states.get(sid)
        if entry is None or entry[1] <= self._clock():
            return SessionState()
        return entry[0]

    def state(self, sid: str) -> SessionState:
        with self._lock:
            return self._live_state(sid)

    def set_log_level(self, sid: str, level: str, expires_at: int) -> None:
        with self._lock:
            current = self._live_state(sid)
            if current.ended:
                raise SessionEnded(sid)
            self._states[sid] = (replace(current, log_level=level), expires_at)

    def end(self, sid: str, expires_at: int) -> bool:
        with self._lock:
            current = self._live_state(sid)
            if current.ended:
                return False
            self._states[sid] = (replace(current, ended=True), expires_at)
            return True

    def _store_call(self, call: ParkedCall) -> None:
        if len(json.dumps(asdict(call), separators=(",", ":"), default=str)) > self._item_limit:
            raise CallTooLarge(call.ref)
        self._calls[call.ref] = call

    def _live_call(self, ref: str) -> ParkedCall | None:
        call = self._calls.get(ref)
        if call is None or call.expires_at <= self._clock():
            return None
        return call

    def park(self, call: ParkedCall, previous_round: int | None = None) -> None:
        with self._lock:
            current = self._live_call(call.ref)
            if previous_round is None:
                if current is not None:
                    raise CallConflict(call.ref)
            elif current is None or current.done or current.round != previous_round:
                raise CallConflict(call.ref)
            self._store_call(
                replace(call, answers={}, failure=None, done=False, claimed_until=None)
            )

    def parked(self, ref: str) -> ParkedCall | None:
        with self._lock:
            return self._live_call(ref)

    def answer(
        self, ref: str, key: str, answer: Any = None, failure: dict[str, Any] | None = None
    ) -> bool:
        with self._lock:
            call = self._live_call(ref)
            if call is None or call.done or call.failure is not None:
                return False
            if key not in call.outstanding:
                return False
            if failure is not None:
                self._store_call(replace(call, failure=failure))
            else:
                self._store_call(replace(call, answers={**call.answers, key: answer}))
            return True

    def remember_task(self, sid: str, task_id: str, expires_at: int) -> bool:
        with self._lock:
            known = self._live_tasks(sid)
            if len(known) >= MAX_SESSION_TASKS:
                return False
            self._tasks[sid] = ([*known, task_id], expires_at)
            return True

    def session_tasks(self, sid: str) -> list[str]:
        with self._lock:
            return self._live_tasks(sid)

    def _live_tasks(self, sid: str) -> list[str]:
        entry = self._tasks.get(sid)
        if entry is None or entry[1] <= self._clock():
            return []
        return list(entry[0])

    def hold_question(self, task_id: str, key: str, holder: str, until: int) -> bool:
        with self._lock:
            held = self._holds.get((task_id, key))
            if held is not None and held[1] > self._clock() and held[0] != holder:
                return False
            self._holds[(task_id, key)] = (holder, until)
            return True

    def claim(self, ref: str, round: int, until: int) -> bool:
        with self._lock:
            call = self._live_call(ref)
            if call is None or call.done or call.round != round:
                return False
            if call.claimed_until is not None and call.claimed_until > self._clock():
                return False
            self._calls[ref] = replace(call, claimed_until=until)
            return True

    def finish(
        self,
        ref: str,
        round: int,
        outcome: dict[str, Any] | None = None,
        expires_at: int | None = None,
    ) -> bool:
        with self._lock:
            call = self._live_call(ref)
            if call is None or call.done or call.round != round:
                return False
            self._calls[ref] = replace(
                call,
                params={},
                request_state=None,
                asked={},
                answers={},
                failure=None,
                done=True,
                outcome=outcome,
                expires_at=call.expires_at if expires_at is None else expires_at,
            )
            return True
