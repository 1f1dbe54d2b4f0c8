"""Inline questions for legacy clients: multi round-trip rounds carried as server->client
requests on SSE, answered by separate POSTs, resumed with `GET` + `Last-Event-ID`.

A tool asks the same way in both eras (`await ctx.elicit(...)`); the server's inline path
answers `input_required` with the questions and a sealed `requestState`. For a 2026-07-28
client that result goes on the wire as is. For a legacy session, this module turns it into
what 2025-11-25 expects, without holding any connection or memory between requests:

1. *park*: the round (the call's params, its `requestState`, the questions' keys) is stored as
   a parked call (`server.legacy.sessions`); the POST's SSE response is a priming event, whose `id`
   seals where the stream is, with a `retry`, then one `elicitation/create` /
   `sampling/createMessage` / `roots/list` request per question, and ends there: behind API
   Gateway a function cannot hold a stream open while the client thinks;
2. *answer*: each JSON-RPC id the server chose seals (session, call, key): the client's
   response, POSTed on its own, maps back to its question with no lookup, is checked against
   the session (so against the caller) and against the question's shape, and is recorded
   (first answer wins);
3. *resume*: the client reconnects with `GET` and `Last-Event-ID`; the function holding that
   `GET` waits (a bounded window) until every question is answered, then runs the call again
   with the answers as `inputResponses` and the round's `requestState`: the same multi
   round-trip path as a modern retry. The result (or the next round's questions) goes on the
   resumed stream; a window that ends first closes with the priming event alone, and the
   client reconnects again. One resume runs a round (it claims it in the store, until a
   little past its deadline): another GET with the same event id waits for the outcome, or
   sends the next round's questions once the call asked again. The run stops at the GET's
   deadline (the isError answer ends the call), and the wait for answers leaves it half the
   request's time. The message a call ended with stays readable for a few minutes: a
   reconnect whose stream was lost reads it again instead of a 404.

On a host whose answers stream, both streams are live (`server.live`): a POST's starts with
its priming event before the tool runs (`live`: the ref the call parks under is minted
first, so the event names it), then each progress notification as it is made, then the
result or the questions; a resume's rerun sends its progress as it is made too.

The JSON-RPC ids and event ids carry a *route* name; this module serves route `in` (inline
calls). The `tasks/result` streams (`legacy.task_results`) plug into `LegacyEndpoint` as route
`task` and reuse `StreamIds` for their ids.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from mcp_tasks_aws.protocol.errors import (
    INTERNAL_ERROR,
    InternalError,
    InvalidParams,
    McpError,
    SessionNotFound,
    StreamNotFound,
    UnknownResponse,
    to_error_object,
)
from mcp_tasks_aws.protocol.jsonrpc import (
    ClientResponse,
    Request,
    error_message,
    request_message,
    result_message,
)
from mcp_tasks_aws.protocol.legacy import LegacySession, client_meta_of, legacy_result
from mcp_tasks_aws.protocol.sealing import Sealer, Unsealable
from mcp_tasks_aws.protocol.transport import SseEvent
from mcp_tasks_aws.server.legacy.sessions import (
    CallConflict,
    CallTooLarge,
    LegacySessionStore,
    ParkedCall,
)
from mcp_tasks_aws.server.live import Emit, relayed
from mcp_tasks_aws.server.tasks import MAX_RESPONSES_BYTES
from mcp_tasks_aws.tasks.ports import Throttled
from mcp_tasks_aws.tasks.watch import PollWindow
from mcp_tasks_aws.tools.journal import ELICIT, LIST_ROOTS, SAMPLE, validate_answer

if TYPE_CHECKING:
    from mcp_tasks_aws.server.call import Call

logger = logging.getLogger(__name__)

INLINE_ROUTE = "in"
TASK_ROUTE = "task"
"""The route of `tasks/result` streams and of the questions they carry (`legacy.task_results`)."""
ANSWERABLE = (ELICIT, SAMPLE, LIST_ROOTS)
_REQUEST_KIND = "q1"
_EVENT_KIND = "e1"
_RESERVED = frozenset({"s", "r", "exp"})
"""Keys of a sealed id that are not the route's: the session, the route, the expiry."""
_PARK_SECONDS = 3600
"""How long a parked call waits for answers (its `requestState` expires after an hour too)."""
_MAX_FAILURE_CHARS = 512
MAX_PARKED_CHARS = 256 * 1024
"""The most a parked call's arguments, sealed state and questions may take (JSON): the rest of
its DynamoDB item (400 KB) is room for the answers."""
_CLAIM_SECONDS = 900.0
"""How long a resume without a deadline holds the round it runs (Lambda's longest run)."""
_KEEP_OUTCOME_SECONDS = 300
"""How long a call's final message stays readable after the call ended (a lost stream)."""
_MAX_KEPT_OUTCOME_CHARS = 256 * 1024
"""The largest final message kept (the call's item must stay under DynamoDB's 400 KB)."""
_NOT_KEPT = "The call's result was sent once and is too large to be sent again"
_CLAIM_MARGIN_SECONDS = 5.0
"""How far past its request's deadline a claim holds (the answer's way out, clock skew)."""
_FINISH_RETRY_DELAYS_S = (0.05, 0.2)
"""Backoff between tries of the write that ends a resumed call (a busy session table)."""


@dataclass(frozen=True)
class StreamIds:
    """Seals and opens the ids a legacy session's streams use: JSON-RPC ids of server->client
    requests, and SSE event ids. Both name a route and are bound to one session."""

    sealer: Sealer

    def request_id(self, session: LegacySession, route: str, payload: dict[str, Any]) -> str:
        return self._seal(_REQUEST_KIND, session, route, payload)

    def event_id(self, session: LegacySession, route: str, payload: dict[str, Any]) -> str:
        return self._seal(_EVENT_KIND, session, route, payload)

    def _seal(self, kind: str, session: LegacySession, route: str, payload: dict[str, Any]) -> str:
        if _RESERVED & payload.keys():
            raise ValueError(f"payload keys {sorted(_RESERVED)} are the ids' own")
        data = {"s": session.sid, "r": route, **payload}
        return self.sealer.seal(kind, data, expires_at=session.expires_at)

    def _open(self, kind: str, session: LegacySession, token: Any) -> tuple[str, dict[str, Any]]:
        payload = self.sealer.open(kind, token) if isinstance(token, str) else None
        # A token sealed for another session (so possibly another caller) maps to nothing.
        if payload is None or payload.pop("s", None) != session.sid:
            raise Unsealable()
        payload.pop("exp", None)
        route = payload.pop("r", None)
        if not isinstance(route, str):
            raise Unsealable()
        return route, payload

    def open_request_id(self, session: LegacySession, rid: Any) -> tuple[str, dict[str, Any]]:
        return self._open(_REQUEST_KIND, session, rid)

    def open_event_id(self, session: LegacySession, event_id: str) -> tuple[str, dict[str, Any]]:
        return self._open(_EVENT_KIND, session, event_id)


@dataclass(frozen=True)
class Resumable:
    """A legacy call being served: the session, its caller (the principal the session was
    issued to), the parked call it resumes (if any), and the request's deadline."""

    session: LegacySession
    principal: str
    log_level: str | None = None
    parked: ParkedCall | None = None
    deadline: float | None = None
    """`time.monotonic()` by which the request's answer must be on its way (None: no limit)."""
    accepts_stream: bool = False
    """Whether the request accepts `text/event-stream` (a `tasks/get` may carry questions)."""
    streaming: bool = False
    """Whether the answer reaches the client as it is made (a resumed call's progress then
    goes out as the run makes it, `server.live.relayed`)."""
    ref: str | None = None
    """The ref a call parks under if it asks (None: one is minted then). A call whose answer
    streams as it is made mints it first: its priming event, sent before its first progress
    notification, names it (`InlineQuestions.live`)."""


def resumable_of(call: Call) -> Resumable:
    """The session a legacy call runs in (only `initialize` and a discover probe have none)."""
    if not isinstance(call.session, Resumable):
        raise SessionNotFound("Session not found: initialize first")
    return call.session


class Rerun(Protocol):
    """Serves a request again inside the session: (result dict or stream, notifications);
    with `emit`, each notification goes there as it is made instead (`server.live`)."""

    def __call__(
        self, resumable: Resumable, request: Request, emit: Emit | None = None
    ) -> tuple[Any, list[dict[str, Any]]]: ...


class InlineQuestions:
    """Parks inline calls that asked something, records answers, resumes them (route `in`)."""

    def __init__(
        self,
        sessions: LegacySessionStore,
        ids: StreamIds,
        *,
        retry_ms: int = 250,
        window_ms: int = 20_000,
        poll_ms: int = 500,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.sessions = sessions
        self.ids = ids
        self.retry_ms = retry_ms
        self.window_ms = window_ms
        self.poll_ms = poll_ms
        self.clock = clock
        self.sleep = sleep

    # -- park -----------------------------------------------------------------------------------

    def outcome(
        self, resumable: Resumable, request: Request, result: Any, notifications: list[Any]
    ) -> Any:
        """A tools/call or prompts/get result for a legacy client: shaped as 2025-11-25, or,
        if it asks the client something, the stream that parks the call and asks."""
        if not isinstance(result, dict) or result.get("resultType") != "input_required":
            return legacy_result(result) if isinstance(result, dict) else result
        return iter(self.park(resumable, request, result, notifications))

    def park(
        self,
        resumable: Resumable,
        request: Request,
        result: dict[str, Any],
        notifications: list[Any],
    ) -> list[Any]:
        session, previous = resumable.session, resumable.parked
        questions: dict[str, dict[str, Any]] = result.get("inputRequests") or {}
        now = int(time.time())
        if previous is not None:
            ref = previous.ref
        else:
            ref = resumable.ref if resumable.ref is not None else secrets.token_urlsafe(16)
        call = ParkedCall(
            ref=ref,
            sid=session.sid,
            request_id=request.id,
            method=request.method,
            params=_client_params(request.params),
            request_state=result.get("requestState"),
            asked=dict(questions),
            round=previous.round + 1 if previous is not None else 0,
            expires_at=min(session.expires_at, now + _PARK_SECONDS),
        )
        too_large = McpError(
            f"{request.method} cannot wait for its answers: its arguments, questions and "
            f"answers so far are over {MAX_PARKED_CHARS // 1024} KB"
        )
        if _chars(call.params, call.request_state, call.asked) > MAX_PARKED_CHARS:
            raise too_large
        # Durable before any question is sent: an answer must always find its call.
        try:
            self.sessions.park(call, previous.round if previous is not None else None)
        except CallTooLarge as exc:
            raise too_large from exc
        return [self.priming(session, call), *notifications, *self._questions(session, call)]

    def _questions(self, session: LegacySession, call: ParkedCall) -> list[SseEvent]:
        """The round's outstanding questions as server->client requests."""
        events = []
        for key in sorted(call.outstanding, key=list(call.asked).index):
            question = call.asked[key]
            method = str(question.get("method"))
            rid = self.ids.request_id(session, INLINE_ROUTE, {"c": call.ref, "k": key, "m": method})
            events.append(SseEvent(request_message(rid, method, question.get("params") or {})))
        return events

    def priming(self, session: LegacySession, call: ParkedCall) -> SseEvent:
        """The event that says where the stream is (and how soon to come back)."""
        return self._priming(session, call.ref, call.round)

    def _priming(self, session: LegacySession, ref: str, round_: int) -> SseEvent:
        event_id = self.ids.event_id(session, INLINE_ROUTE, {"c": ref, "n": round_})
        return SseEvent(None, event_id=event_id, retry_ms=self.retry_ms)

    def live(self, resumable: Resumable) -> tuple[Resumable, Callable[[], SseEvent]]:
        """A POSTed call whose answer streams as it is made (`server.live`): the session
        context to run it in, and the priming event its stream starts with.

        The priming event must go out before the call's first progress notification, so
        before anyone knows whether the call will ask: it names the ref and round the call
        parks under if it does (minted here), and a call that asks sends the same one. A
        call that ends without asking parks nothing; a resume from its event id is then 404,
        as for any ended call whose outcome is no longer kept (it was never stored: the
        result went out on the stream).
        """
        ref = secrets.token_urlsafe(16)
        return replace(resumable, ref=ref), lambda: self._priming(resumable.session, ref, 0)

    # -- answer ---------------------------------------------------------------------------------

    def deliver(
        self, resumable: Resumable, payload: dict[str, Any], response: ClientResponse
    ) -> None:
        """Record the client's answer to the question `payload` names."""
        ref, key, method = payload.get("c"), payload.get("k"), payload.get("m")
        if not (isinstance(ref, str) and isinstance(key, str) and method in ANSWERABLE):
            raise UnknownResponse("Unknown response id")
        if response.error is not None:
            self.sessions.answer(ref, key, failure=client_failure(method, response.error))
            return
        # The answer must fit what was asked (-32602 otherwise, and nothing is recorded), and
        # be no larger than a task's (`tasks/update`).
        validate_answer(method, response.result)
        if _chars(response.result) > MAX_RESPONSES_BYTES:
            raise InvalidParams(f"The answer is too large (over {MAX_RESPONSES_BYTES // 1024} KB)")
        # A duplicate, or an answer to a call that has moved on, changes nothing.
        try:
            self.sessions.answer(ref, key, answer=response.result)
        except CallTooLarge as exc:
            raise InvalidParams(
                "The answer does not fit with the call's other answers: send a smaller one"
            ) from exc

    # -- resume ---------------------------------------------------------------------------------

    def resume(self, resumable: Resumable, payload: dict[str, Any], rerun: Rerun) -> Iterator[Any]:
        """The resumed stream of the call `payload` names (checked now: 404 if it is gone)."""
        ref, round_ = payload.get("c"), payload.get("n")
        call = self.sessions.parked(ref) if isinstance(ref, str) else None
        if call is None or call.sid != resumable.session.sid:
            raise StreamNotFound("Stream not found: the call it belongs to has ended")
        if call.done:
            # Ended: its outcome once more (the stream that carried it may have been lost),
            # for a short while after the end; then it is gone.
            if call.outcome is None:
                raise StreamNotFound("Stream not found: the call it belongs to has ended")
            return iter([call.outcome])
        if call.round != round_:
            # The client missed the events of the round the call is at (a resumed stream was
            # lost on the way): send that round's open questions again.
            session = resumable.session
            return iter([self.priming(session, call), *self._questions(session, call)])
        return self._resumed(resumable, call, rerun)

    def _resumed(self, resumable: Resumable, call: ParkedCall, rerun: Rerun) -> Iterator[Any]:
        session = resumable.session
        yield self.priming(session, call)
        polls = self._window(resumable.deadline).polls()
        current: ParkedCall | None = call
        # Until every question is answered and this resume holds the round (two GETs with one
        # Last-Event-ID must not both run it: a side effect after the question would happen
        # twice), or the call has moved on without it (another resume ended it, or asked the
        # next round's questions, which go on this stream too).
        while True:
            if current is None:
                return
            if current.done:
                if current.outcome is not None:
                    yield current.outcome  # another resume ended it: its answer goes here too
                return
            if current.round != call.round:
                yield self.priming(session, current)
                yield from self._questions(session, current)
                return
            try:
                if current.ready and self.sessions.claim(
                    current.ref, current.round, self._lease(resumable)
                ):
                    break
                if not next(polls, False):
                    return  # the client comes back after `retry` with the same event id
                current = self.sessions.parked(call.ref)
            except Throttled:
                # The session table is busy and nothing ran yet: end the stream as a window
                # does; the client comes back with the same event id (a claim that landed
                # unheard lapses with its lease, then that resume runs the round).
                logger.warning("resuming a legacy call: the session table is busy")
                return
        request_id = current.request_id
        if current.failure is not None:
            if self._end(current, error_message(request_id, current.failure)):
                yield error_message(request_id, current.failure)
            return
        params = {
            **current.params,
            "inputResponses": current.answers,
            **({"requestState": current.request_state} if current.request_state else {}),
        }
        again = Request(request_id, current.method, params)
        resuming = replace(resumable, parked=current)
        try:
            if resumable.streaming:
                # The stream is open (its priming event went first): progress goes out as
                # the run makes it, before anyone knows how the round ends.
                result, notifications = yield from relayed(
                    lambda emit: rerun(resuming, again, emit)
                )
            else:
                result, notifications = rerun(resuming, again)
        except McpError as exc:
            error, _ = to_error_object(exc)
            if self._end(current, error_message(request_id, error)):
                yield error_message(request_id, error)
            return
        except CallConflict:
            return  # another resume moved the call on: its stream carries the rest
        except Exception:
            # Ended here, or every reconnect would run it into the same fault again.
            logger.exception("resuming a legacy %s failed", current.method)
            error, _ = to_error_object(InternalError("Internal error"))
            if self._end(current, error_message(request_id, error)):
                yield error_message(request_id, error)
            return
        if isinstance(result, dict):
            # Only the resume that ends the call runs it; the answer is kept a while, so a
            # reconnect whose stream was lost (or a duplicate GET) reads it instead of a 404.
            if self._end(current, result_message(request_id, result)):
                yield from notifications
                yield result_message(request_id, result)
            return
        yield from result  # the next round: parked already, its priming event and questions

    def _end(self, call: ParkedCall, message: dict[str, Any]) -> bool:
        """End the call with `message`, kept for `_KEEP_OUTCOME_SECONDS` to be read again
        (one too large for the call's item is kept as an error saying so); False if the call
        had moved on."""
        kept = message
        if _chars(message) > _MAX_KEPT_OUTCOME_CHARS:
            error, _ = to_error_object(InternalError(_NOT_KEPT))
            kept = error_message(call.request_id, error)
        keep_until = min(call.expires_at, int(time.time()) + _KEEP_OUTCOME_SECONDS)
        for delay in (*_FINISH_RETRY_DELAYS_S, None):
            try:
                return self.sessions.finish(call.ref, call.round, kept, keep_until)
            except Throttled:
                if delay is None:
                    # The round ran and this is its only copy: send it rather than lose it.
                    # The call stays claimed; its lease lapses and a later resume runs it again.
                    logger.warning("a legacy call ran but its end could not be recorded")
                    return True
                self.sleep(delay)
        raise AssertionError("unreachable")

    def _lease(self, resumable: Resumable) -> int:
        """Until when (epoch seconds) a claim on a round holds: past the request's deadline,
        by when its run has ended one way or another (without one, a Lambda's longest run)."""
        left = _CLAIM_SECONDS
        if resumable.deadline is not None:
            left = max(0.0, resumable.deadline - self.clock()) + _CLAIM_MARGIN_SECONDS
        return int(time.time() + left) + 1

    def _window(self, request_deadline: float | None) -> PollWindow:
        """How long the wait for answers lasts: the window, and no longer than half the
        request's time left, so the run that follows has the other half before the deadline
        stops it (`clock` is the monotonic clock that deadline is on)."""
        window_ms = self.window_ms
        if request_deadline is not None:
            window_ms = min(window_ms, int(max(0.0, request_deadline - self.clock()) / 2 * 1000))
        return PollWindow(window_ms, self.poll_ms, self.clock, self.sleep)


def _chars(*values: Any) -> int:
    """The size of values as compact JSON (what the store keeps of them, near enough)."""
    return sum(len(json.dumps(value, separators=(",", ":"))) for value in values)


def _client_params(params: dict[str, Any]) -> dict[str, Any]:
    """What a resume sends again: the client's params, without the round's answers and the
    session's envelope (the resume serves it with the session as it is then)."""
    kept = {k: v for k, v in params.items() if k not in ("inputResponses", "requestState")}
    kept["_meta"] = client_meta_of(params.get("_meta"))
    return kept


def client_failure(method: str, error: Any) -> dict[str, Any]:
    """The JSON-RPC error a call (or task) fails with when the client answered one of its
    questions with an error."""
    code = error.get("code") if isinstance(error, dict) else None
    detail = error.get("message") if isinstance(error, dict) else None
    message = f"The client answered {method} with an error"
    if isinstance(detail, str) and detail:
        message += f": {detail[:_MAX_FAILURE_CHARS]}"
    failure: dict[str, Any] = {"code": INTERNAL_ERROR, "message": message}
    if isinstance(code, int) and not isinstance(code, bool):
        failure["data"] = {"clientErrorCode": code}
    return failure
