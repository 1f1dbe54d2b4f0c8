"""A 2025-11-25 task's outstanding questions, sent to one poller at a time and answered once.

2025-11-25 carries a task's requests to the client (`elicitation/create`,
`sampling/createMessage`, `roots/list`) on the `tasks/result` stream. Some clients never open
that stream: the Inspector's default era and ext-tasks' 2025-11-25 requester poll `tasks/get`
until the task is terminal, so a task that asks would wait for its TTL. For them, a `tasks/get`
of a task in `input_required`, from a session that accepts `text/event-stream` and declared
the channel a question needs (elicitation, sampling, roots), answers on SSE: the task's
outstanding requests first, each a server->client request tagged with the related-task
`_meta` (so a task-aware client routes it to the task it follows), then the `tasks/get`
answer itself. The client POSTs its response as for any request sent on a `tasks/result`
stream: the JSON-RPC id seals (session, task, key, method) on route `task`, and the answer
takes the path of `tasks/update` (`LegacyTasks.deliver`; first answer wins).

A poller calls `tasks/get` again and again while it waits, and several clients may poll the
same task: each question is *held* by whoever was sent it (`LegacySessionStore.hold_question`,
one conditional write), for `hold_s`, and no one else is sent it meanwhile:

- a `tasks/get` takes a question only when nobody holds it (its holder is that request
  alone): the next poll, by the same client or another, does not get it again;
- a `tasks/result` stream holds it for its session: that session's streams may send it again
  (a stream lost on its way, resumed from an earlier event id), other pollers may not; so a
  client that polls `tasks/get` and then opens `tasks/result` (the TypeScript SDK 1.x) is
  asked once.

When the hold lapses with the question still open (its stream was lost, or the client never
answered), the next poller is sent it again; an answer to it from the first client still
counts, and the first answer wins.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import Any, Final

from mcp_tasks_aws.protocol import models as m
from mcp_tasks_aws.protocol.jsonrpc import request_message
from mcp_tasks_aws.protocol.legacy import LegacySession
from mcp_tasks_aws.server.legacy.questions import TASK_ROUTE, StreamIds
from mcp_tasks_aws.server.legacy.sessions import LegacySessionStore
from mcp_tasks_aws.server.legacy.task_views import related
from mcp_tasks_aws.tasks.model import TaskRecord
from mcp_tasks_aws.tools.journal import ELICIT, LIST_ROOTS, SAMPLE

QUESTION_HOLD_SECONDS: Final = 300
"""How long a question sent to one poller is not sent to another (time for a person to answer)."""
_CHANNEL: Final = {ELICIT: "elicitation", SAMPLE: "sampling", LIST_ROOTS: "roots"}


class TaskQuestions:
    """Sends a task's outstanding requests to one poller at a time (route `task`)."""

    def __init__(
        self,
        sessions: LegacySessionStore,
        ids: StreamIds,
        *,
        hold_s: int = QUESTION_HOLD_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.sessions = sessions
        self.ids = ids
        self.hold_s = hold_s
        self.clock = clock

    def request(
        self, session: LegacySession, task_id: str, key: str, request: dict[str, Any]
    ) -> dict[str, Any]:
        """The server->client request asking question `key` of task `task_id` in `session`."""
        method = str(request.get("method"))
        params = dict(request.get("params") or {})
        params["_meta"] = {**(params.get("_meta") or {}), **related(task_id)}
        rid = self.ids.request_id(session, TASK_ROUTE, {"t": task_id, "k": key, "m": method})
        return request_message(rid, method, params)

    def take(self, task_id: str, key: str, holder: str) -> bool:
        """Hold question `key` for `holder` (True), unless another holder has it still."""
        until = int(self.clock()) + self.hold_s
        return self.sessions.hold_question(task_id, key, holder, until)

    def for_poll(
        self, session: LegacySession, record: TaskRecord, capabilities: m.ClientCapabilities
    ) -> list[dict[str, Any]]:
        """The requests a `tasks/get` of `record` carries: the outstanding questions this
        session can answer (it declared their channel) that no other poller holds."""
        if record.visible_status != "input_required":
            return []
        holder = f"get:{secrets.token_urlsafe(12)}"  # this request alone: taken only if free
        sent = []
        for key in sorted(record.input_requests):
            request = record.input_requests[key]
            channel = _CHANNEL.get(str(request.get("method")))
            if channel is None or getattr(capabilities, channel) is None:
                continue
            # Held before it is sent: a poll racing this one must not be sent it too.
            if self.take(record.task_id, key, holder):
                sent.append(self.request(session, record.task_id, key, request))
        return sent
