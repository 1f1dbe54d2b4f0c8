"""The (legacy, method) entries of the method table: what 2025-11-25 clients can call.

Methods both eras share are the server's own handlers, registered for the legacy era with a
wrapper that shapes their results for 2025-11-25 (`protocol.legacy.legacy_result`). Only the
differences live here:

- the lifecycle: `initialize` (version negotiation, the sealed session), `ping`,
  `logging/setLevel`, `resources/subscribe` / `unsubscribe`;
- `server/discover` keeps its modern answer: a dual-era client probes with it;
- `tools/list` adds each tool's `execution.taskSupport`, from its task policy;
- `tools/call` and `prompts/get` carry their questions as server->client requests
  (`legacy.questions`) instead of `input_required`;
- a tool that runs only as a task answers a call without `params.task` with a task handle
  (`server.handles`) in a session that did not declare `tasks`, else -32601 (where handles
  are off too), as 2025-11-25 says; with legacy tasks (`legacy.tasks`), a call with
  `params.task` becomes a task, and `initialize` declares the `tasks` capability. A session
  that gets handles sees such a tool as `optional` and the handle tools as `forbidden`; one
  that declared `tasks` sees it `required`, and gets what it sees.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp_tasks_aws.protocol import models as m
from mcp_tasks_aws.protocol.era import Era, negotiate
from mcp_tasks_aws.protocol.errors import InvalidParams, MethodNotFound, SessionNotFound
from mcp_tasks_aws.protocol.legacy import (
    InitializeParams,
    SessionCodec,
    SetLevelParams,
    SubscribeParams,
    legacy_capabilities,
    legacy_result,
    session_capabilities,
)
from mcp_tasks_aws.protocol.transport import SESSION_HEADER
from mcp_tasks_aws.server.call import Call, Handler
from mcp_tasks_aws.server.legacy.questions import InlineQuestions, resumable_of
from mcp_tasks_aws.server.legacy.sessions import LegacySessionStore, SessionEnded
from mcp_tasks_aws.server.methods import McpServer
from mcp_tasks_aws.tools.registry import TaskPolicy

if TYPE_CHECKING:
    from mcp_tasks_aws.server.legacy.tasks import LegacyTasks

SHAPED = (
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "completion/complete",
)
"""Shared methods whose legacy answer is the modern one without its 2026-07-28 fields."""
TASK_SUPPORT = {
    TaskPolicy.INLINE: "forbidden",
    TaskPolicy.OPTIONAL: "optional",
    TaskPolicy.REQUIRED: "required",
}


def task_support(policy: TaskPolicy, legacy_tasks: bool) -> str:
    """A tool's `execution.taskSupport`: its policy, as far as legacy tasks are served.

    Without legacy tasks, an optional tool always runs inline for a 2025-11-25 client, so it
    says `forbidden`; a task-only tool stays `required` (it cannot be called inline at all).
    """
    if policy is TaskPolicy.OPTIONAL and not legacy_tasks:
        return "forbidden"
    return TASK_SUPPORT[policy]


class LegacyMethods:
    """Registers and serves the legacy era's entries of one server's method table."""

    def __init__(
        self,
        server: McpServer,
        *,
        codec: SessionCodec,
        sessions: LegacySessionStore,
        questions: InlineQuestions,
        tasks: LegacyTasks | None = None,
    ) -> None:
        self.server = server
        self.codec = codec
        self.sessions = sessions
        self.questions = questions
        self.tasks = tasks

    def install(self) -> None:
        server, legacy = self.server, Era.LEGACY
        server.register(legacy, "initialize", InitializeParams, self.initialize)
        server.register(legacy, "ping", m.RequestParams, self.ping)
        server.register(legacy, "logging/setLevel", SetLevelParams, self.set_level)
        server.register(legacy, "server/discover", *server.lookup("server/discover"))
        if server.toolset.resources:
            server.register(legacy, "resources/subscribe", SubscribeParams, self.subscribe)
            server.register(legacy, "resources/unsubscribe", SubscribeParams, self.subscribe)
        model, handler = server.lookup("tools/list")
        server.register(legacy, "tools/list", model, self._listing_tools(handler))
        for method in SHAPED:
            if server.has_method(method):
                model, handler = server.lookup(method)
                server.register(legacy, method, model, _shaped(handler))
        model, handler = server.lookup("tools/call")
        if self.tasks is not None:
            handler = self.tasks.calling(handler)  # params.task makes the call a task
        server.register(legacy, "tools/call", model, self._asking(self._task_only(handler)))
        model, handler = server.lookup("prompts/get")
        server.register(legacy, "prompts/get", model, self._asking(handler))
        if self.tasks is not None:
            self.tasks.install()

    # -- lifecycle ------------------------------------------------------------------------------

    def initialize(self, call: Call, params: InitializeParams) -> dict[str, Any]:
        version = negotiate(params.protocol_version)
        declared = session_capabilities(params.capabilities)
        token, _ = self.codec.issue(version, declared, call.principal)
        call.response_headers[SESSION_HEADER] = token
        capabilities = legacy_capabilities(self.server.capabilities())
        if "resources" in capabilities:
            capabilities["resources"]["subscribe"] = True
        if self.tasks is not None:
            capabilities["tasks"] = self.tasks.capabilities()
        toolset = self.server.toolset
        return {
            "protocolVersion": version,
            "capabilities": capabilities,
            "serverInfo": {"name": toolset.name, "version": toolset.version},
        }

    def ping(self, call: Call, params: m.RequestParams) -> dict[str, Any]:
        return {}

    def set_level(self, call: Call, params: SetLevelParams) -> dict[str, Any]:
        session = resumable_of(call).session
        try:
            self.sessions.set_log_level(session.sid, params.level, session.expires_at)
        except SessionEnded as exc:
            raise SessionNotFound("Session not found: it has ended") from exc
        return {}

    def subscribe(self, call: Call, params: SubscribeParams) -> dict[str, Any]:
        """Accepted for a known resource. Resources here have no change signal, so no
        `notifications/resources/updated` is ever due: nothing needs remembering."""
        if params.uri not in self.server.toolset.resources:
            raise InvalidParams(f"Unknown resource: {params.uri}")
        return {}

    # -- shared methods, legacy shapes ----------------------------------------------------------

    def _listing_tools(self, handler: Handler) -> Handler:
        def list_tools(call: Call, params: Any) -> dict[str, Any]:
            result = legacy_result(handler(call, params))
            tools = self.server.toolset.tools
            legacy_tasks = self.server.has_method("tasks/get", Era.LEGACY)
            handles = self.server.handles
            with_handles = handles is not None and handles.listed_to(call)
            for tool in result["tools"]:
                spec = tools.get(tool["name"])
                if spec is None:  # a handle tool: it answers in its call
                    support = TASK_SUPPORT[TaskPolicy.INLINE]
                elif with_handles and handles is not None and handles.eligible(spec):
                    # A plain call gets a handle, a call with params.task a task: clients
                    # that refuse to call a `required` tool without tasks can call it.
                    support = TASK_SUPPORT[TaskPolicy.OPTIONAL]
                else:
                    support = task_support(spec.task, legacy_tasks)
                tool["execution"] = {"taskSupport": support}
            return result

        return list_tools

    def _task_only(self, handler: Handler) -> Handler:
        """Refuses a call to a task-only tool without `params.task`: 2025-11-25 says -32601."""

        def call_tool(call: Call, params: m.CallToolParams) -> Any:
            spec = self.server.toolset.tools.get(params.name)
            if spec is None or spec.task is not TaskPolicy.REQUIRED:
                return handler(call, params)
            if self.tasks is None:
                raise MethodNotFound(
                    f"Tool {spec.name} runs only as a task (execution.taskSupport: required), "
                    "and this server takes no task-augmented calls from 2025-11-25 clients"
                )
            handles = self.server.handles
            if (params.model_extra or {}).get("task") is None:
                if handles is not None and handles.offered_to(call, spec):
                    return handler(call, params)  # answered with a task handle
                raise MethodNotFound(
                    f"Tool {spec.name} runs only as a task (execution.taskSupport: required): "
                    "call it with params.task"
                )
            return handler(call, params)

        return call_tool

    def _asking(self, handler: Handler) -> Handler:
        """Carries a call's questions as server->client requests (see legacy.questions)."""

        def serve(call: Call, params: Any) -> Any:
            result = handler(call, params)
            return self.questions.outcome(
                resumable_of(call), call.request, result, call.notifications
            )

        return serve


def _shaped(handler: Handler) -> Callable[[Call, Any], Any]:
    def serve(call: Call, params: Any) -> Any:
        result = handler(call, params)
        return legacy_result(result) if isinstance(result, dict) else result

    return serve
