"""The 2025-11-25 tasks utility, on the same task records and runner as the Tasks extension:
`params.task` on `tools/call`, `tasks/get`, `tasks/list`, `tasks/cancel` and `tasks/result`,
and the answers to a task's questions.

Every method calls the task use cases (`tasks.service`) with the caller's principal, as the
2026-07-28 methods do (`server.tasks`); only shapes and a few rules differ, and those are views
of the record and of the transition table (`legacy.task_views`):

- `tools/call` with `params.task` (`{ttl?}`) on a tool whose policy allows a task runs through
  the server's one decision (`InlineRunner.run_call`: a tool's prelude still asks inline first),
  with a creator that keeps the asked `ttl` (at least `MIN_TTL_MS`, capped by the server's
  maximum) and answers the nested `CreateTaskResult`; a tool that never runs as a task
  (`taskSupport: forbidden`) answers -32601, as 2025-11-25 says;
- `tasks/get` is one consistent read; of a task waiting for input, from a session that can
  answer its questions on `text/event-stream`, the answer also carries those questions not
  sent to another poller (`legacy.task_questions`: for clients that never open `tasks/result`);
- `tasks/list` is one page of the tasks *this session*
  created, newest first (the session keeps their ids, `legacy.sessions`; one batch read of
  the page's records), behind a sealed cursor that only its session can use. Scoped to the
  session, not the caller: without authentication every caller is one principal, and a task
  id is a bearer secret, so a listing must show only ids its reader already has. Tasks stay
  shared by id as before (`tasks/get` of a known id works from any session of the caller,
  and from 2026-07-28);
- `tasks/cancel` answers the Task already `cancelled`, or -32602 when the `cancel` move was
  refused because the task is terminal;
- `tasks/result` is `legacy.task_results`; the client's answers to the requests sent there come
  back as JSON-RPC responses and take the path of `tasks/update` (`deliver`); an answer that
  is a JSON-RPC error fails the task with it (the `refuse` move).

Unknown, expired and foreign tasks all answer -32602, foreign exactly like unknown.

The views and the stream (`legacy.task_views`, `legacy.task_results`, and the result models
under them) are imported on the first task request: an `initialize` does not pay for them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from functools import cached_property
from typing import TYPE_CHECKING, Any, Final

from pydantic import Field, ValidationError

from mcp_tasks_aws.protocol import models as m
from mcp_tasks_aws.protocol.era import Era
from mcp_tasks_aws.protocol.errors import (
    InvalidParams,
    MethodNotFound,
    UnknownResponse,
)
from mcp_tasks_aws.protocol.jsonrpc import ClientResponse
from mcp_tasks_aws.protocol.models import WireModel
from mcp_tasks_aws.protocol.sealing import Unsealable, fingerprint
from mcp_tasks_aws.server.call import Call, Handler
from mcp_tasks_aws.server.legacy.questions import (
    ANSWERABLE,
    TASK_ROUTE,
    Resumable,
    StreamIds,
    client_failure,
    resumable_of,
)
from mcp_tasks_aws.server.legacy.sessions import LegacySessionStore
from mcp_tasks_aws.server.methods import McpServer
from mcp_tasks_aws.server.tasks import MAX_RESPONSES_BYTES, answered_as_errors, create_task
from mcp_tasks_aws.tasks.exceptions import (
    TaskNotFound,
)
from mcp_tasks_aws.tasks.model import TaskRecord
from mcp_tasks_aws.tasks.service import TaskService
from mcp_tasks_aws.tools.registry import TaskPolicy, ToolSpec

if TYPE_CHECKING:
    from mcp_tasks_aws.server.legacy.task_questions import TaskQuestions
    from mcp_tasks_aws.server.legacy.task_results import TaskResults

logger = logging.getLogger(__name__)

MIN_TTL_MS: Final = 1000
"""The shortest retention a 2025-11-25 client can ask (a task must outlive its creation)."""
_CURSOR_KIND: Final = "c2"
"""Cursors of a session's task list (c1 were owner-index positions)."""
_BATCH_READ_KEYS: Final = 100
"""DynamoDB's BatchGetItem takes at most this many keys."""
_REMEMBER_ATTEMPTS = 2
"""Tries of the write that adds a new task to its session's list."""


class TaskRequest(WireModel):
    """`params.task` of a 2025-11-25 task-augmented request."""

    ttl: int | None = Field(default=None, ge=0, strict=True)


def task_request(params: m.CallToolParams) -> TaskRequest | None:
    """The call's `params.task`, or None when it asks for no task (-32602 when malformed)."""
    raw = (params.model_extra or {}).get("task")
    if raw is None:
        return None
    try:
        return TaskRequest.model_validate(raw)
    except ValidationError as exc:
        raise InvalidParams("Invalid params: params.task must be {ttl?: integer >= 0}") from exc


class LegacyTaskCreator:
    """Creates the task of one 2025-11-25 call (`server.call.TaskCreator`), with its asked `ttl`,
    and adds it to its session's list."""

    def __init__(
        self, service: TaskService, sessions: LegacySessionStore, ttl_ms: int | None
    ) -> None:
        self.service = service
        self.sessions = sessions
        self.ttl_ms = ttl_ms

    def create(
        self,
        call: Call,
        spec: ToolSpec,
        params: m.CallToolParams,
        journal: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        record = create_task(self.service, call, spec, params, journal, ttl_ms=self.ttl_ms)
        session = resumable_of(call).session
        for attempt in range(_REMEMBER_ATTEMPTS):
            try:
                # Once more after a fault: an append that landed unheard repeats the id, and
                # the list is read without repeats (`session_tasks`).
                self.sessions.remember_task(session.sid, record.task_id, session.expires_at)
                break
            except Exception:
                if attempt + 1 < _REMEMBER_ATTEMPTS:
                    continue
                # The task exists and runs: failing the call now would make the client create
                # another. It is only missing from this session's tasks/list.
                logger.warning("could not add a new task to its session's list", exc_info=True)
        from mcp_tasks_aws.server.legacy.task_views import created_wire  # first task request only

        return created_wire(record)


class LegacyTasks:
    """Registers and serves the 2025-11-25 task methods of one server."""

    route: Final = TASK_ROUTE

    def __init__(
        self,
        server: McpServer,
        service: TaskService,
        ids: StreamIds,
        sessions: LegacySessionStore,
        *,
        page_size: int = 50,
        window_ms: int = 20_000,
        poll_ms: int = 500,
    ) -> None:
        self.server = server
        self.service = service
        self.ids = ids
        self.sessions = sessions
        self.page_size = page_size
        self.window_ms = window_ms
        self.poll_ms = poll_ms

    @cached_property
    def results(self) -> TaskResults:
        from mcp_tasks_aws.server.legacy.task_results import TaskResults  # first use only

        return TaskResults(
            self.service,
            self.ids,
            self.questions,
            window_ms=self.window_ms,
            poll_ms=self.poll_ms,
        )

    @cached_property
    def questions(self) -> TaskQuestions:
        from mcp_tasks_aws.server.legacy.task_questions import TaskQuestions  # first use only

        return TaskQuestions(self.sessions, self.ids)

    def install(self) -> None:
        legacy = Era.LEGACY
        self.server.register(legacy, "tasks/get", m.TaskParams, self.get)
        self.server.register(legacy, "tasks/list", m.PaginatedParams, self.list)
        self.server.register(legacy, "tasks/cancel", m.TaskParams, self.cancel)
        self.server.register(legacy, "tasks/result", m.TaskParams, self.result)

    @staticmethod
    def capabilities() -> dict[str, Any]:
        """The server's `tasks` capability in `initialize`."""
        return {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}

    # -- tools/call with params.task ------------------------------------------------------------

    def calling(self, handler: Handler) -> Handler:
        """Wraps the `tools/call` entry: a call with `params.task` may become a task."""
        tools = self.server.toolset.tools

        def call_tool(call: Call, params: m.CallToolParams) -> Any:
            asked = task_request(params)
            if asked is None:
                return handler(call, params)
            spec = tools.get(params.name)
            if spec is None:
                raise InvalidParams(f"Unknown tool: {params.name}")
            if spec.task is TaskPolicy.INLINE:
                raise MethodNotFound(
                    f"Tool {spec.name} does not run as a task (execution.taskSupport: "
                    "forbidden): call it without params.task"
                )
            ttl = None if asked.ttl is None else max(asked.ttl, MIN_TTL_MS)
            creator = LegacyTaskCreator(self.service, self.sessions, ttl)
            return self.server.inline.run_call(call, params, opted_in=True, creator=creator)

        return call_tool

    # -- tasks/* ----------------------------------------------------------------------------

    def get(self, call: Call, params: m.TaskParams) -> dict[str, Any]:
        from mcp_tasks_aws.server.legacy.task_views import task_wire

        with answered_as_errors(Era.LEGACY):
            record = self.service.load(call.principal, params.task_id)
            resumable = resumable_of(call)
            if resumable.accepts_stream and record.visible_status == "input_required":
                # For clients that poll tasks/get and never open tasks/result: the task's
                # questions on this answer's stream, before the answer (legacy.task_questions).
                asked = self.questions.for_poll(resumable.session, record, call.capabilities)
                call.notifications.extend(asked)
            return task_wire(record)

    def list(self, call: Call, params: m.PaginatedParams) -> dict[str, Any]:
        from mcp_tasks_aws.server.legacy.task_views import listing_wire

        resumable = resumable_of(call)
        created = self.sessions.session_tasks(resumable.session.sid)  # oldest first
        # A page ends where the last one began, counted from the oldest: stable while the
        # session creates more tasks between two pages.
        end = len(created)
        if params.cursor is not None:
            end = self._open_cursor(resumable, params.cursor)
            if end > len(created):
                raise InvalidParams("Invalid cursor")
        begin = max(0, end - self.page_size)
        newest_first = created[begin:end][::-1]
        with answered_as_errors(Era.LEGACY):
            live: dict[str, TaskRecord] = {}
            for chunk in range(0, len(newest_first), _BATCH_READ_KEYS):
                live.update(
                    self.service.live(
                        call.principal, newest_first[chunk : chunk + _BATCH_READ_KEYS]
                    )
                )
        # Expired (or gone) tasks drop out: a page may be shorter than the page size.
        tasks = [live[task_id].summary() for task_id in newest_first if task_id in live]
        cursor = self._seal_cursor(resumable, begin) if begin > 0 else None
        return listing_wire(tasks, cursor)

    def cancel(self, call: Call, params: m.TaskParams) -> dict[str, Any]:
        from mcp_tasks_aws.server.legacy.task_views import cancel_refusal, task_wire

        with answered_as_errors(Era.LEGACY):
            record, changed = self.service.cancel(call.principal, params.task_id)
        if not changed:
            # The cancel move was refused, so the task is terminal (2025-11-25: -32602).
            raise InvalidParams(cancel_refusal(record) or "Cannot cancel task")
        return task_wire(record)

    def result(self, call: Call, params: m.TaskParams) -> dict[str, Any] | Iterator[Any]:
        with answered_as_errors(Era.LEGACY):
            return self.results.serve(resumable_of(call), call.request.id, params.task_id)

    # -- the stream's routes ----------------------------------------------------------------

    def resume(self, resumable: Resumable, payload: dict[str, Any], _rerun: Any) -> Iterator[Any]:
        return self.results.resume(resumable, payload)

    def deliver(
        self, resumable: Resumable, payload: dict[str, Any], response: ClientResponse
    ) -> None:
        """The client's answer to a task's request: `tasks/update`'s path (first answer wins;
        an answer to a request no longer outstanding changes nothing)."""
        task_id, key, method = payload.get("t"), payload.get("k"), payload.get("m")
        if not (isinstance(task_id, str) and isinstance(key, str) and method in ANSWERABLE):
            raise UnknownResponse("Unknown response id")
        owner = resumable.principal
        with answered_as_errors(Era.LEGACY):
            try:
                if response.error is not None:
                    failure = client_failure(str(method), response.error)
                    self.service.refuse(owner, task_id, key, str(method), failure)
                    return
                if len(json.dumps(response.result)) > MAX_RESPONSES_BYTES:
                    raise InvalidParams("The answer is too large")
                self.service.update(owner, task_id, {key: response.result})
            except TaskNotFound as exc:  # expired (or gone) since the request was sent
                raise UnknownResponse("Unknown response: its task is gone") from exc

    # -- cursors ----------------------------------------------------------------------------

    def _seal_cursor(self, resumable: Resumable, end: int) -> str:
        payload = {"a": end, "p": fingerprint(resumable.principal), "i": resumable.session.sid}
        return self.ids.sealer.seal(_CURSOR_KIND, payload, expires_at=resumable.session.expires_at)

    def _open_cursor(self, resumable: Resumable, cursor: str) -> int:
        try:
            payload = self.ids.sealer.open(_CURSOR_KIND, cursor)
        except Unsealable as exc:
            raise InvalidParams("Invalid cursor") from exc
        end = payload.get("a")
        # A cursor is its session's (so its caller's): another's answers like a forged one.
        if (
            payload.get("p") != fingerprint(resumable.principal)
            or payload.get("i") != resumable.session.sid
            or not isinstance(end, int)
            or isinstance(end, bool)
            or end <= 0
        ):
            raise InvalidParams("Invalid cursor")
        return end
