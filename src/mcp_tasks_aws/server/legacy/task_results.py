"""`tasks/result` for 2025-11-25 clients: a call that blocks until the task ends, served as SSE
windows a Lambda function can hold, resumed by any function with `GET` + `Last-Event-ID`.

2025-11-25 says `tasks/result` blocks until the task is terminal and carries, meanwhile, the
task's requests to the client (`elicitation/create`, `sampling/createMessage`, `roots/list`).
A function behind API Gateway can neither stream nor hold a request much past 29 s, so:

- a terminal task answers at once, in JSON: its result with the related-task `_meta`, or the
  JSON-RPC error the call failed with (`task_views.outcome_of`);
- otherwise the answer is an SSE *window*: a priming event (an `id` and `retry`), then the
  task's outstanding requests not yet sent on this stream, each as a server->client request
  with the related-task `_meta`, and a `notifications/tasks/status` whenever the status this
  stream reported changes. The window ends as soon as it has delivered something (deployed,
  API Gateway hands the client a window only when it ends), when the task ends (then with the
  `tasks/result` response, under the original request's id), or after `window_ms`, polling the
  task's head every `poll_ms` meanwhile. A window on a working task holds only while the task
  is young (polled at its floor interval, the first 10 s with a 500 ms floor; see
  `tasks.watch`): an older task's window sends what is new and ends, its `retry` being the
  task's poll interval, which grows with its age. So a stream on a long task costs about what
  polling it does, and no news is later than the poll step in force. A window on a task
  waiting for input still holds: a 2025-11-25 client comes back on its `retry` timer, not when
  it has answered, so the window waits for the answer's effect;
- the client comes back after `retry` with `GET` and the last event id it saw. Every event id
  seals where the stream is (`Position`: task, the `tasks/result` request id, which of the
  outstanding requests it has sent, the status it last reported) to the session, so whichever
  function gets the `GET` continues exactly there, with no server memory.

Each request's JSON-RPC id seals (session, task, input key, method): the client's answer, POSTed
on its own, maps back with no lookup and takes the path of `tasks/update` (`LegacyTasks`
routes it). The same key always gets the same id, so a request sent again after a lost stream
is recognisable as the same one, and the first answer wins. A request is held for the
stream's session before it is sent (`legacy.task_questions`): one another poller was sent
(a `tasks/get` that carried it, another session's stream) waits until that hold lapses.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any, Final, NamedTuple

from mcp_tasks_aws.protocol.era import Era
from mcp_tasks_aws.protocol.errors import (
    InternalError,
    McpError,
    StreamNotFound,
    to_error_object,
)
from mcp_tasks_aws.protocol.jsonrpc import (
    RequestId,
    error_message,
    notification_message,
    result_message,
)
from mcp_tasks_aws.protocol.legacy import LegacySession
from mcp_tasks_aws.protocol.transport import SseEvent
from mcp_tasks_aws.server.legacy.questions import TASK_ROUTE, Resumable, StreamIds
from mcp_tasks_aws.server.legacy.task_questions import TaskQuestions
from mcp_tasks_aws.server.legacy.task_views import legacy_status, outcome_of, task_wire
from mcp_tasks_aws.server.tasks import task_error
from mcp_tasks_aws.tasks.exceptions import TaskNotFound
from mcp_tasks_aws.tasks.model import TaskRecord
from mcp_tasks_aws.tasks.service import TaskService
from mcp_tasks_aws.tasks.watch import PollWindow

logger = logging.getLogger(__name__)

STATUS_NOTIFICATION: Final = "notifications/tasks/status"


def key_digest(key: str) -> str:
    """A short stand-in for an input key inside an event id (keys can be long)."""
    return base64.urlsafe_b64encode(hashlib.sha256(key.encode()).digest()[:6]).decode()


class Position(NamedTuple):
    """Where a `tasks/result` stream is; sealed into each event id it sends."""

    task_id: str
    request_id: RequestId
    sent: frozenset[str]
    """Digests of the outstanding requests already sent on this stream."""
    status: str
    """The status this stream last reported (or found when it opened)."""

    def payload(self) -> dict[str, Any]:
        return {"t": self.task_id, "q": self.request_id, "d": sorted(self.sent), "u": self.status}

    @classmethod
    def of(cls, payload: dict[str, Any]) -> Position | None:
        task_id, request_id = payload.get("t"), payload.get("q")
        sent, status = payload.get("d"), payload.get("u")
        if not (isinstance(task_id, str) and isinstance(status, str) and isinstance(sent, list)):
            return None
        if not isinstance(request_id, str | int) or isinstance(request_id, bool):
            return None
        return cls(task_id, request_id, frozenset(str(d) for d in sent), status)


class OutcomeError(McpError):
    """The JSON-RPC error a task's call failed with, returned as `tasks/result`'s own."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(str(error.get("message", "Task failed")), error.get("data"))
        self.code = int(error.get("code", self.code))


class TaskResults:
    """Serves `tasks/result` for one server's tasks (route `task`)."""

    def __init__(
        self,
        service: TaskService,
        ids: StreamIds,
        questions: TaskQuestions,
        *,
        window_ms: int = 20_000,
        poll_ms: int = 500,
        retry_ms: int = 250,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.service = service
        self.ids = ids
        self.questions = questions
        self.window_ms = window_ms
        self.poll_ms = poll_ms
        self.retry_ms = retry_ms
        self.clock = clock
        self.sleep = sleep

    def serve(
        self, resumable: Resumable, request_id: RequestId, task_id: str
    ) -> dict[str, Any] | Iterator[Any]:
        """The answer to `tasks/result`: the outcome now, or the first window of its stream.

        TaskNotFound (a missing, expired or foreign task) is raised now, before any stream.
        """
        record = self.service.load(resumable.principal, task_id)
        if record.is_terminal:
            outcome = outcome_of(self.service.view(record))
            if outcome.error is not None:
                raise OutcomeError(outcome.error)
            assert outcome.result is not None
            return outcome.result
        shown = legacy_status(record.visible_status, record.tool_error)
        position = Position(task_id, request_id, frozenset(), shown)
        return self._guarded(position, self._window(resumable, record, position))

    def resume(self, resumable: Resumable, payload: dict[str, Any]) -> Iterator[Any]:
        """The stream an event id names, continued (404 now if its task is gone)."""
        position = Position.of(payload)
        if position is None:
            raise StreamNotFound("Stream not found: unknown Last-Event-ID")
        try:
            record = self.service.load(resumable.principal, position.task_id)
        except TaskNotFound as exc:
            raise StreamNotFound("Stream not found: its task is gone") from exc
        return self._guarded(position, self._window(resumable, record, position))

    # -- the window -----------------------------------------------------------------------------

    def _window(
        self, resumable: Resumable, record: TaskRecord, position: Position
    ) -> Iterator[Any]:
        session, owner = resumable.session, resumable.principal
        hold_ms = self._hold_ms(record)
        retry_ms = self.retry_ms if hold_ms else record.poll_interval_at(self.service.clock())
        yield self._mark(session, position, retry_ms)
        polls = PollWindow(hold_ms, self.poll_ms, self.clock, self.sleep).polls()
        current = record
        held_elsewhere: set[str] = set()
        while True:
            events, position = self._news(session, current, position, held_elsewhere)
            yield from events
            if current.is_terminal:
                yield self._final(current, position.request_id)
                return
            if events:
                return  # delivered: the client comes back for the rest
            if not next(polls, False):
                return  # nothing new: the client comes back with the same event id
            # A projected read of the head each poll; the whole record only once it changed.
            head = self.service.peek(owner, [position.task_id]).get(position.task_id)
            if head is None:
                raise TaskNotFound(expired=True)
            if head.version != current.version:
                current = self.service.load(owner, position.task_id)

    def _hold_ms(self, record: TaskRecord) -> int:
        """How long this window waits for news: the whole window, or for a working task only
        while it is polled at its floor interval."""
        until = record.polled_at_the_floor_until()
        if record.visible_status != "working" or until is None:
            return self.window_ms
        return max(0, min(self.window_ms, until - self.service.clock()))

    def _news(
        self,
        session: LegacySession,
        record: TaskRecord,
        position: Position,
        held_elsewhere: set[str],
    ) -> tuple[list[SseEvent], Position]:
        """What this stream has not told the client yet: a status change, new requests.

        `held_elsewhere` collects the keys another poller holds, tried once per window (the
        next window tries again: a hold lasts minutes, a window seconds)."""
        events: list[SseEvent] = []
        shown = legacy_status(record.visible_status, record.tool_error)
        if shown != position.status:
            position = position._replace(status=shown)
            notification = notification_message(STATUS_NOTIFICATION, task_wire(record))
            events.append(SseEvent(notification, event_id=self._event_id(session, position)))
        outstanding = record.input_requests if record.visible_status == "input_required" else {}
        digests = {key: key_digest(key) for key in outstanding}
        sent = position.sent & frozenset(digests.values())  # answered ones drop out
        for key in sorted(outstanding):
            if digests[key] in sent or key in held_elsewhere:
                continue
            if not self.questions.take(record.task_id, key, session.sid):
                held_elsewhere.add(key)  # another poller was sent it: not ours to ask, for now
                continue
            sent |= {digests[key]}
            position = position._replace(sent=sent)
            events.append(
                SseEvent(
                    self.questions.request(session, record.task_id, key, outstanding[key]),
                    event_id=self._event_id(session, position),
                )
            )
        return events, position._replace(sent=sent)

    def _final(self, record: TaskRecord, request_id: RequestId) -> dict[str, Any]:
        outcome = outcome_of(self.service.view(record))
        if outcome.error is not None:
            return error_message(request_id, outcome.error)
        assert outcome.result is not None
        return result_message(request_id, outcome.result)

    def _event_id(self, session: LegacySession, position: Position) -> str:
        return self.ids.event_id(session, TASK_ROUTE, position.payload())

    def _mark(self, session: LegacySession, position: Position, retry_ms: int) -> SseEvent:
        """The priming event: where the stream is, and how soon to come back."""
        return SseEvent(None, event_id=self._event_id(session, position), retry_ms=retry_ms)

    @staticmethod
    def _guarded(position: Position, stream: Iterator[Any]) -> Iterator[Any]:
        """A failure mid-stream answers the `tasks/result` request (its id), then ends it."""
        try:
            yield from stream
        except Exception as exc:
            answer = task_error(exc, Era.LEGACY)
            if answer is None:
                logger.exception("tasks/result stream of task %s failed", position.task_id)
                answer = InternalError("Internal error")
            error, _ = to_error_object(answer)
            yield error_message(position.request_id, error)
