"""The 2025-11-25 side of the dual-era endpoint: sessions, answers, resumed streams.

`HttpTransport` hands every legacy message here (`LegacyGate`). This module checks the
session, gives the request the 2026-07-28 envelope its session stands for (the capabilities
declared at `initialize`, the log level set since), and serves it through the one method
table, at the (legacy, method) entries `legacy.methods` registers.

- `initialize` needs no session and must not carry one; a `server/discover` probe without a
  session gets the modern answer (dual-era clients probe with it). Anything else needs
  `Mcp-Session-Id`: missing -> 400; unknown, ended, expired, tampered or another caller's ->
  404 (the client initializes again).
- One consistent read of the session's state per message (to see an ended session).
- A `tools/call` or `prompts/get` in a session that declared what a question needs
  (elicitation, sampling or roots) needs a client that accepts `text/event-stream`, where
  questions travel: 406 before it runs otherwise. On a host whose answers stream, such a
  call's notifications go out as they are made, after its priming event
  (`InlineQuestions.live`).
- A client's JSON-RPC response is routed by its id (sealed by `StreamIds`) to the route that
  asked: `in` (inline questions, `legacy.questions`) or `task` (a task's questions, sent on
  its `tasks/result` stream, `legacy.task_results`, or on a `tasks/get` answer's stream,
  `legacy.task_questions`); a `GET` with `Last-Event-ID` resumes the
  stream of the route its event id names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from mcp_tasks_aws.protocol.era import LATEST_LEGACY, Era
from mcp_tasks_aws.protocol.errors import (
    SessionNotAllowed,
    SessionNotFound,
    SessionRequired,
    SessionVersionMismatch,
    StreamNotAccepted,
    StreamNotFound,
    UnknownResponse,
)
from mcp_tasks_aws.protocol.jsonrpc import ClientResponse, Message, Notification, Request
from mcp_tasks_aws.protocol.legacy import LegacySession, SessionCodec, envelope
from mcp_tasks_aws.protocol.sealing import Sealer, Unsealable
from mcp_tasks_aws.protocol.transport import SESSION_HEADER, HttpRequest, accepts
from mcp_tasks_aws.server.call import Call, Served
from mcp_tasks_aws.server.legacy.methods import LegacyMethods
from mcp_tasks_aws.server.legacy.questions import (
    INLINE_ROUTE,
    InlineQuestions,
    Rerun,
    Resumable,
    StreamIds,
)
from mcp_tasks_aws.server.legacy.sessions import LegacySessionStore, SessionState
from mcp_tasks_aws.server.live import Emit
from mcp_tasks_aws.server.methods import McpServer
from mcp_tasks_aws.server.tasks import answered_as_errors

if TYPE_CHECKING:
    from mcp_tasks_aws.protocol.request_state import SecretSource
    from mcp_tasks_aws.tasks.service import TaskService

SESSIONLESS = ("initialize", "server/discover")
"""Legacy methods served without a session."""
ASKING = ("tools/call", "prompts/get")
"""Methods whose tool or prompt may ask the client something, on the answer's SSE stream."""
QUESTION_CAPABILITIES = ("elicitation", "sampling", "roots")
"""What a session must declare for a tool to ask it anything (-32021 otherwise)."""

AnswerRoute = Callable[[Resumable, dict[str, Any], ClientResponse], None]
"""Takes a client's response to a request sent on a route: (session, id payload, response)."""
Resumer = Callable[[Resumable, dict[str, Any], Rerun], Iterator[Any]]
"""Continues a stream of a route from its event id payload (checks eagerly, then streams)."""


class LegacyEndpoint:
    """Serves 2025-11-25 clients beside the server's 2026-07-28 surface (`LegacyGate`)."""

    def __init__(
        self,
        server: McpServer,
        *,
        codec: SessionCodec,
        sessions: LegacySessionStore,
        questions: InlineQuestions,
    ) -> None:
        self.server = server
        self.codec = codec
        self.sessions = sessions
        self.ids: StreamIds = questions.ids
        self.questions = questions
        self.answer_routes: dict[str, AnswerRoute] = {INLINE_ROUTE: questions.deliver}
        self.resumers: dict[str, Resumer] = {INLINE_ROUTE: questions.resume}

    # -- LegacyGate -----------------------------------------------------------------------------

    def knows(self, method: str) -> bool:
        return self.server.knows(method)

    def post(self, http: HttpRequest, message: Message) -> Served | None:
        with answered_as_errors(Era.LEGACY):  # a throttled session table: 503, Retry-After
            return self._post(http, message)

    def _post(self, http: HttpRequest, message: Message) -> Served | None:
        token = http.header(SESSION_HEADER)
        if isinstance(message, Request) and message.method in SESSIONLESS and token is None:
            return self._serve(message, None, http)
        if isinstance(message, Request) and message.method == "initialize":
            raise SessionNotAllowed("initialize starts a session: send it without Mcp-Session-Id")
        if token is None:
            raise SessionRequired(
                "Bad Request: Mcp-Session-Id is required. Send initialize first (2025-11-25), "
                "or send params._meta with io.modelcontextprotocol/protocolVersion (2026-07-28)"
            )
        session, state = self.session(http)
        if isinstance(message, Notification):
            return None  # notifications/initialized, cancelled, roots/list_changed: noted
        resumable = Resumable(
            session,
            http.principal,
            state.log_level,
            deadline=http.deadline,
            accepts_stream=accepts(http.header("accept"))[1],
        )
        if isinstance(message, ClientResponse):
            self.answer(resumable, message)
            return None
        if (
            message.method in ASKING
            and self._may_ask(session)
            and not accepts(http.header("accept"))[1]
        ):
            # Decided before anything runs: refused after the run, the call would have done
            # its work and parked its questions for a client that cannot read them.
            raise StreamNotAccepted(
                f"Not Acceptable: {message.method} may ask the client questions, which travel "
                "on text/event-stream: accept it"
            )
        return self._serve(message, resumable, http)

    @staticmethod
    def _may_ask(session: LegacySession) -> bool:
        return any(name in session.capabilities for name in QUESTION_CAPABILITIES)

    def resume(self, http: HttpRequest, last_event_id: str) -> Iterator[Any]:
        with answered_as_errors(Era.LEGACY):  # a throttled session table: 503, Retry-After
            session, state = self.session(http)
        try:
            route, payload = self.ids.open_event_id(session, last_event_id)
        except Unsealable as exc:
            raise StreamNotFound("Stream not found: unknown Last-Event-ID") from exc
        resumer = self.resumers.get(route)
        if resumer is None:
            raise StreamNotFound("Stream not found: unknown Last-Event-ID")
        resumable = Resumable(
            session,
            http.principal,
            state.log_level,
            deadline=http.deadline,
            streaming=http.streaming,
        )
        with answered_as_errors(Era.LEGACY):  # reading the parked call: 503 if busy
            return resumer(resumable, payload, self._rerun(http))

    def end(self, http: HttpRequest) -> None:
        with answered_as_errors(Era.LEGACY):  # a throttled session table: 503, Retry-After
            session, _ = self.session(http)
            ended = self.sessions.end(session.sid, session.expires_at)
        if not ended:
            raise SessionNotFound("Session not found: it has already ended")

    # -- sessions -------------------------------------------------------------------------------

    def session(self, http: HttpRequest) -> tuple[LegacySession, SessionState]:
        """The live session the request names, for its caller (404 otherwise)."""
        token = http.header(SESSION_HEADER) or ""
        session = self.codec.open(token, http.principal)
        state = self.sessions.state(session.sid)
        if state.ended:
            raise SessionNotFound("Session not found: it has ended; initialize a new session")
        version = http.header("mcp-protocol-version")
        if version is not None and version.strip() != session.version:
            raise SessionVersionMismatch(
                f"MCP-Protocol-Version {version.strip()[:32]!r} is not the session's "
                f"negotiated version {session.version}"
            )
        return session, state

    def answer(self, resumable: Resumable, response: ClientResponse) -> None:
        """Route a client's response to the request it answers (nothing changes if none)."""
        try:
            route, payload = self.ids.open_request_id(resumable.session, response.id)
        except Unsealable as exc:
            raise UnknownResponse(
                "Unknown response: its id matches no request this session was sent"
            ) from exc
        deliver = self.answer_routes.get(route)
        if deliver is None:
            raise UnknownResponse("Unknown response: its id matches no request in progress")
        deliver(resumable, payload, response)

    # -- serving --------------------------------------------------------------------------------

    def _serve(self, request: Request, resumable: Resumable | None, http: HttpRequest) -> Served:
        # Multi round-trip fields are the server's to set in this era (see legacy.questions).
        params = {
            k: v for k, v in request.params.items() if k not in ("inputResponses", "requestState")
        }
        served = Request(request.id, request.method, self._with_envelope(params, resumable))
        meta = self.server.parse_meta(served)
        opening = None
        if (
            http.streaming
            and resumable is not None
            and request.method in ASKING
            and accepts(http.header("accept"))[1]
        ):
            # Its progress goes out as it is made, after the priming event that says where
            # the stream resumes if the call asks (`InlineQuestions.live`).
            resumable, opening = self.questions.live(resumable)
        # An inline run stops at the request's deadline with the isError answer that says so,
        # as in 2026-07-28, instead of dying with the function (a bare 5xx).
        return self.server.serve(
            served,
            meta,
            http.principal,
            era=Era.LEGACY,
            session=resumable,
            deadline=http.deadline,
            streaming=opening is not None,
            granted_scopes=http.granted_scopes,
            opening=opening,
        )

    def _with_envelope(self, params: dict[str, Any], resumable: Resumable | None) -> dict[str, Any]:
        session = resumable.session if resumable is not None else None
        level = resumable.log_level if resumable is not None else None
        meta = envelope(session, params.get("_meta"), log_level=level, version=LATEST_LEGACY)
        return {**params, "_meta": meta}

    def _rerun(self, http: HttpRequest) -> Rerun:
        """Reruns a parked call for the request that resumes it: its caller, and the scopes
        its token grants now (the tool's are checked again)."""

        def rerun(
            resumable: Resumable, request: Request, emit: Emit | None = None
        ) -> tuple[Any, list[dict[str, Any]]]:
            params = self._with_envelope(request.params, resumable)
            served = Request(request.id, request.method, params)
            call = Call(
                served,
                http.principal,
                self.server.parse_meta(served),
                era=Era.LEGACY,
                session=resumable,
                granted_scopes=http.granted_scopes,
                # The resuming GET's deadline: a run that reaches it ends the call with the
                # isError answer, so no reconnect runs it again.
                deadline=resumable.deadline,
                emit=emit,
            )
            return self.server.handle(call), call.notifications

        return rerun


def install_legacy(
    server: McpServer,
    *,
    secret: SecretSource | bytes,
    sessions: LegacySessionStore,
    tasks: TaskService | None = None,
    deployment_id: str = "",
    session_ttl_seconds: int = 24 * 3600,
    window_ms: int = 20_000,
    poll_ms: int = 500,
    page_size: int = 50,
) -> LegacyEndpoint:
    """Register the legacy era's methods on `server`; return the endpoint that serves them.

    With `tasks`, 2025-11-25 clients get the 2025-11-25 tasks utility on the same records and runner
    (`legacy.tasks`); without, task-only tools refuse them. `secret` is the state secret, or
    its source: sessions and ids are sealed with the current secret and open under the
    previous one too while a rotation settles. They are bound to `deployment_id`, as
    `requestState` is: another stack sharing the secret opens none of them.
    """
    sealer = Sealer(secret, "legacy-sessions", audience=deployment_id)
    ids = StreamIds(sealer)
    questions = InlineQuestions(sessions, ids, window_ms=window_ms, poll_ms=poll_ms)
    codec = SessionCodec(sealer, ttl_seconds=session_ttl_seconds)
    legacy_tasks = None
    if tasks is not None:
        from mcp_tasks_aws.server.legacy.tasks import LegacyTasks

        legacy_tasks = LegacyTasks(
            server,
            tasks,
            ids,
            sessions,
            page_size=page_size,
            window_ms=window_ms,
            poll_ms=poll_ms,
        )
    LegacyMethods(
        server, codec=codec, sessions=sessions, questions=questions, tasks=legacy_tasks
    ).install()
    endpoint = LegacyEndpoint(server, codec=codec, sessions=sessions, questions=questions)
    if legacy_tasks is not None:
        endpoint.answer_routes[legacy_tasks.route] = legacy_tasks.deliver
        endpoint.resumers[legacy_tasks.route] = legacy_tasks.resume
    return endpoint
