"""The MCP server: one method table from (era, JSON-RPC method) to (params model, handler).

`McpServer.handle` takes one decoded JSON-RPC request plus the caller's principal and returns
the response message. It knows nothing of HTTP or AWS: the HTTP transport
(`protocol.transport`) wraps it, and the task backend plugs in through `TaskBackend`.

Both protocol eras dispatch through the same table (`methods`, keyed by `protocol.era.Era` and
method name): the server fills the 2026-07-28 entries, and `legacy.endpoint` registers the
2025-11-25 ones (`register`), which wrap these handlers rather than test an era inside them.

Inline calls run here, including multi round-trip requests (MRTR): a tool that asks a question
answers `input_required` with the outstanding `inputRequests` and a sealed `requestState`
holding the answers so far, the step results (encrypted) and the keys just asked; the retried
call replays the tool with them plus its answers to exactly those keys. So do the rest of the
server's surface: prompts, resources and resource templates, argument completion, and
`notifications/progress` for inline calls whose request carries a `progressToken`
(throttled; sent on the response's SSE stream before the result).

The tool set is checked once, when the server is built: a tool whose schema cannot be built
stops the server there, named with its parameter, instead of failing every `tools/list`.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ValidationError

from mcp_tasks_aws.protocol import models as m
from mcp_tasks_aws.protocol.era import Era
from mcp_tasks_aws.protocol.errors import (
    InvalidMeta,
    InvalidParams,
    McpError,
    MethodNotFound,
    MissingClientCapability,
)
from mcp_tasks_aws.protocol.headers import ParamHeader
from mcp_tasks_aws.protocol.jsonrpc import Request, notification_message, result_message
from mcp_tasks_aws.protocol.request_state import RequestStateCodec, SealedRound, digest
from mcp_tasks_aws.tools.context import STEP_PREFIX, BecomeTask, InputNeeded, ToolContext
from mcp_tasks_aws.tools.deadline import DeadlineExceeded, time_limit
from mcp_tasks_aws.tools.invoke import run_prompt, run_tool
from mcp_tasks_aws.tools.registry import TaskPolicy, ToolSet, ToolSpec, text_result

logger = logging.getLogger(__name__)

PROTOCOL_VERSION = "2026-07-28"
SUPPORTED_VERSIONS = [PROTOCOL_VERSION]
_LOG_LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]


@dataclass
class Call:
    """One request being served: who asked, what they declared, what to stream back."""

    request: Request
    principal: str
    meta: m.RequestMeta
    notifications: list[dict[str, Any]] = field(default_factory=list)
    era: Era = Era.MODERN
    session: Any = None
    """A legacy call's session context (`legacy.questions.Resumable`); None in 2026-07-28."""
    response_headers: dict[str, str] = field(default_factory=dict)
    """HTTP headers the answer must carry (the `Mcp-Session-Id` an `initialize` issues)."""
    deadline: float | None = None
    """`time.monotonic()` by which an inline run must end (from the function's time left)."""

    @property
    def capabilities(self) -> m.ClientCapabilities:
        return self.meta.client_capabilities

    def log(self, level: str, data: Any) -> None:
        """Queue a `notifications/message` if the request asked for logs at this level."""
        wanted = self.meta.log_level
        if wanted not in _LOG_LEVELS or level not in _LOG_LEVELS:
            return
        if _LOG_LEVELS.index(level) >= _LOG_LEVELS.index(wanted):
            self.notifications.append(
                notification_message("notifications/message", {"level": level, "data": data})
            )

    def progress_sender(self) -> Callable[[float, float | None, str | None], None] | None:
        """What `ctx.report(..., progress=...)` calls inline: None without a progressToken."""
        token = self.meta.progress_token
        if token is None:
            return None
        from mcp_tasks_aws.progress import ProgressThrottle  # only requests that want progress

        throttle = ProgressThrottle()

        def send(progress: float, total: float | None, message: str | None) -> None:
            if not throttle.admit(progress, total):
                return
            params: dict[str, Any] = {"progressToken": token, "progress": progress}
            if total is not None:
                params["total"] = total
            if message:
                params["message"] = message
            self.notifications.append(notification_message("notifications/progress", params))

        return send


class TaskCreator(Protocol):
    """Makes a call a task, and says so in its era's shape."""

    def create(
        self,
        call: Call,
        spec: ToolSpec,
        params: m.CallToolParams,
        journal: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Durably create a task for this call and start it; return the CreateTaskResult.

        `journal` holds answers gathered inline before the task existed (a tool's prelude).
        """
        ...


class TaskBackend(TaskCreator, Protocol):
    """What the server needs from the durable-task domain (absent: no Tasks extension)."""

    def methods(self) -> dict[str, tuple[type[m.RequestParams], Callable[[Call, Any], Any]]]:
        """The `tasks/*` methods it serves."""
        ...


Handler = Callable[[Call, Any], Any]
"""A method: returns a result object, or an iterator of whole messages (a stream)."""


class StreamOpener(Protocol):
    """What serves `subscriptions/listen` (see `mcp_tasks_aws.listen`)."""

    @property
    def lists_supported(self) -> dict[str, bool]: ...

    def open(self, call: Call, params: m.ListenParams) -> Iterator[dict[str, Any]]: ...


class McpServer:
    """Serves one ToolSet over JSON-RPC, per the 2026-07-28 stateless envelope."""

    def __init__(
        self,
        toolset: ToolSet,
        *,
        state_codec: RequestStateCodec,
        page_size: int = 50,
        list_ttl_ms: int = 60_000,
        tasks: TaskBackend | None = None,
        listener: StreamOpener | None = None,
        list_changed: Callable[[str], None] | None = None,
    ) -> None:
        toolset.check()  # fail at startup, not on every tools/list
        self.toolset = toolset
        self.listener = listener
        self.list_changed = list_changed
        self.state_codec = state_codec
        self.page_size = page_size
        self.list_ttl_ms = list_ttl_ms
        self.tasks = tasks
        modern: dict[str, tuple[type[BaseModel], Handler]] = {
            "server/discover": (m.RequestParams, self.discover),
            "tools/list": (m.PaginatedParams, self.list_tools),
            "tools/call": (m.CallToolParams, self.call_tool),
            "prompts/list": (m.PaginatedParams, self.list_prompts),
            "prompts/get": (m.GetPromptParams, self.get_prompt),
            "resources/list": (m.PaginatedParams, self.list_resources),
            "resources/templates/list": (m.PaginatedParams, self.list_resource_templates),
            "resources/read": (m.ReadResourceParams, self.read_resource),
            "completion/complete": (m.CompleteParams, self.complete),
        }
        if tasks is not None:
            modern.update(tasks.methods())
        if listener is not None:
            modern["subscriptions/listen"] = (m.ListenParams, listener.open)
        self.methods: dict[tuple[Era, str], tuple[type[BaseModel], Handler]] = {
            (Era.MODERN, name): entry for name, entry in modern.items()
        }

    # -- dispatch -----------------------------------------------------------------------------

    def register(
        self, era: Era, method: str, params_model: type[BaseModel], handler: Handler
    ) -> None:
        """Add (or replace) the entry that serves `method` in `era`."""
        self.methods[(era, method)] = (params_model, handler)

    def has_method(self, method: str, era: Era = Era.MODERN) -> bool:
        return (era, method) in self.methods

    def knows(self, method: str) -> bool:
        """Whether any era serves `method` (an unknown method is -32601 before anything else)."""
        return any((era, method) in self.methods for era in Era)

    def parse_meta(self, request: Request) -> m.RequestMeta:
        """Validate `params._meta`, required on every request (its version is checked later)."""
        raw = request.params.get("_meta")
        if not isinstance(raw, dict):
            raise InvalidMeta("params._meta is required")
        try:
            return m.RequestMeta.model_validate(raw)
        except ValidationError as exc:
            fields = sorted({str(e["loc"][0]) for e in exc.errors() if e["loc"]})
            raise InvalidMeta(f"Invalid params._meta: check {', '.join(fields)}") from exc

    def param_headers(self, request: Request) -> Sequence[ParamHeader]:
        """The `x-mcp-header` parameters of the tool a `tools/call` names (SEP-2243)."""
        spec = self.toolset.tools.get(str(request.params.get("name")))
        return spec.param_headers if spec is not None else ()

    def lookup(self, method: str, era: Era = Era.MODERN) -> tuple[type[BaseModel], Handler]:
        entry = self.methods.get((era, method))
        if entry is None:
            raise MethodNotFound(f"Method not found: {method}")
        return entry

    def serve(
        self,
        request: Request,
        meta: m.RequestMeta,
        principal: str,
        deadline: float | None = None,
    ) -> tuple[dict[str, Any] | Iterator[dict[str, Any]], list[Any]]:
        """Transport entry point: (result message or stream, notifications).

        Errors raise McpError. A stream (subscriptions/listen) yields whole messages, the
        last one being the response.
        """
        call = Call(request=request, principal=principal, meta=meta, deadline=deadline)
        result = self.handle(call)
        if isinstance(result, dict):
            return result_message(request.id, result), call.notifications
        return result, []

    def serve_legacy(
        self, request: Request, meta: m.RequestMeta, principal: str, session: Any
    ) -> tuple[dict[str, Any] | Iterator[Any], list[Any], dict[str, str]]:
        """`serve` for a 2025-11-25 request: (message or stream, notifications, headers)."""
        call = Call(request, principal, meta, era=Era.LEGACY, session=session)
        result = self.handle(call)
        if isinstance(result, dict):
            return result_message(request.id, result), call.notifications, call.response_headers
        return result, [], call.response_headers

    def handle(self, call: Call) -> Any:
        """Run the method for `call`; return the result object (errors raise McpError)."""
        params_model, handler = self.lookup(call.request.method, call.era)
        try:
            params = params_model.model_validate(call.request.params)
        except ValidationError as exc:
            fields = sorted({".".join(str(p) for p in e["loc"]) for e in exc.errors()})
            raise InvalidParams(f"Invalid params: check {', '.join(fields)}") from exc
        return handler(call, params)

    # -- server/discover ----------------------------------------------------------------------

    def server_info(self) -> dict[str, Any]:
        return {m.SERVER_INFO_KEY: {"name": self.toolset.name, "version": self.toolset.version}}

    def discover(self, call: Call, params: m.RequestParams) -> dict[str, Any]:
        lists = self.listener.lists_supported if self.listener is not None else {}
        # Tools may log (ctx.log): sent when a request sets io.modelcontextprotocol/logLevel.
        capabilities: dict[str, Any] = {
            "tools": _list_capability(lists.get("tools")),
            "logging": {},
        }
        if self.toolset.prompts:
            capabilities["prompts"] = _list_capability(lists.get("prompts"))
        if self.toolset.resources or self.toolset.resource_templates:
            capabilities["resources"] = {}
        if self.toolset.completers:
            capabilities["completions"] = {}
        if self.tasks is not None:
            capabilities["extensions"] = {m.TASKS_EXTENSION: {}}
        return {
            "resultType": "complete",
            "supportedVersions": SUPPORTED_VERSIONS,
            "capabilities": capabilities,
            "cacheScope": "public",
            "ttlMs": self.list_ttl_ms,
            "_meta": self.server_info(),
        }

    # -- lists --------------------------------------------------------------------------------

    def _page(self, items: list[Any], cursor: str | None) -> tuple[list[Any], str | None]:
        start = 0
        if cursor is not None:
            try:
                start = int(base64.urlsafe_b64decode(cursor.encode()).decode())
            except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
                raise InvalidParams("Invalid cursor") from exc
            if not 0 <= start <= len(items):
                raise InvalidParams("Invalid cursor")
        end = start + self.page_size
        next_cursor = base64.urlsafe_b64encode(str(end).encode()).decode()
        return items[start:end], (next_cursor if end < len(items) else None)

    def _list_result(self, key: str, items: list[Any], cursor: str | None) -> dict[str, Any]:
        page, next_cursor = self._page(items, cursor)
        result: dict[str, Any] = {
            "resultType": "complete",
            key: [item.to_wire() for item in page],
            "cacheScope": "public",
            "ttlMs": self.list_ttl_ms,
        }
        if next_cursor:
            result["nextCursor"] = next_cursor
        return result

    def list_tools(self, call: Call, params: m.PaginatedParams) -> dict[str, Any]:
        return self._list_result("tools", list(self.toolset.tools.values()), params.cursor)

    def list_prompts(self, call: Call, params: m.PaginatedParams) -> dict[str, Any]:
        return self._list_result("prompts", list(self.toolset.prompts.values()), params.cursor)

    def list_resources(self, call: Call, params: m.PaginatedParams) -> dict[str, Any]:
        return self._list_result("resources", list(self.toolset.resources.values()), params.cursor)

    def list_resource_templates(self, call: Call, params: m.PaginatedParams) -> dict[str, Any]:
        templates = list(self.toolset.resource_templates.values())
        return self._list_result("resourceTemplates", templates, params.cursor)

    def read_resource(self, call: Call, params: m.ReadResourceParams) -> dict[str, Any]:
        from mcp_tasks_aws.tools import resources

        found = self.toolset.find_resource(params.uri)
        if found is None:  # SEP-2164: -32602 naming the URI in data
            raise resources.not_found(params.uri)
        spec, variables = found
        return {
            "resultType": "complete",
            **resources.read(spec, params.uri, variables),
            "cacheScope": "public",
            "ttlMs": self.list_ttl_ms,
        }

    # -- completion/complete ------------------------------------------------------------------

    def complete(self, call: Call, params: m.CompleteParams) -> dict[str, Any]:
        from mcp_tasks_aws.tools import completions

        ref, argument = params.ref, params.argument.name
        known: Sequence[str]
        kind: Literal["prompt", "resource"]
        if isinstance(ref, m.PromptRef):
            prompt = self.toolset.prompts.get(ref.name)
            if prompt is None:
                raise InvalidParams(f"Unknown prompt: {ref.name}")
            kind, name, known = "prompt", ref.name, [a["name"] for a in prompt.arguments]
        else:
            template = self.toolset.resource_templates.get(ref.uri)
            if template is None and ref.uri not in self.toolset.resources:
                raise InvalidParams(f"Unknown resource template: {ref.uri}")
            kind, name = "resource", ref.uri
            known = template.template.variables if template is not None else ()
        if argument not in known:
            raise InvalidParams(f"{name} has no argument {argument!r}")
        completer = self.toolset.completers.get((kind, name, argument))
        if completer is None:
            return {"resultType": "complete", **completions.empty_completion()}
        context = (params.context.arguments if params.context else None) or {}
        return {
            "resultType": "complete",
            **completions.complete(completer, params.argument.value, context),
        }

    # -- multi round-trip ---------------------------------------------------------------------

    def _binding(self, call: Call, name: str, arguments: Any) -> dict[str, Any]:
        return {
            "m": call.request.method,
            "n": name,
            "a": digest(arguments or {}),
            "p": digest(call.principal),
        }

    def replay_journal(
        self, call: Call, params: m.InputResponseParams, name: str, arguments: Any
    ) -> dict[str, Any]:
        """The journal a request replays with: what earlier rounds sealed, plus this round's
        answers.

        Client input never reaches step results: `step:` keys in `inputResponses` are always
        dropped. With a state, only the keys it sealed as outstanding (the questions of the
        round that issued it) are taken: sealed answers cannot be rewritten. Without one, the
        client answers up front (nothing was asked yet, so any question may be): that gains it
        nothing it could not get by answering round by round, and each answer is still checked
        against the question it answers.
        """
        responses = {
            key: value
            for key, value in (params.input_responses or {}).items()
            if not key.startswith(STEP_PREFIX)
        }
        if params.request_state is None:
            return responses
        sealed = self.state_codec.open(params.request_state, self._binding(call, name, arguments))
        journal = {**sealed.answers, **sealed.steps}
        for key in sealed.outstanding:
            if key in responses:
                journal[key] = responses[key]
        return journal

    def input_required(
        self, call: Call, name: str, arguments: Any, ctx: ToolContext, need: InputNeeded
    ) -> dict[str, Any]:
        # Only answers the tool consumed travel on; step results travel encrypted.
        consumed = ctx.consumed_answers
        sealed = SealedRound(
            answers={k: v for k, v in consumed.items() if not k.startswith(STEP_PREFIX)},
            steps={k: v for k, v in consumed.items() if k.startswith(STEP_PREFIX)},
            outstanding=frozenset(need.requests),
        )
        state = self.state_codec.seal(self._binding(call, name, arguments), sealed)
        return {
            "resultType": "input_required",
            "inputRequests": need.requests,
            "requestState": state,
        }

    def context(
        self, call: Call, journal: dict[str, Any], *, stop_at_task_boundary: bool = False
    ) -> ToolContext:
        return ToolContext(
            capabilities=call.capabilities,
            principal=call.principal,
            journal=journal,
            log=call.log,
            stop_at_task_boundary=stop_at_task_boundary,
            list_changed=self.list_changed,
            progress=call.progress_sender(),
        )

    # -- tools/call ---------------------------------------------------------------------------

    def call_tool(self, call: Call, params: m.CallToolParams) -> dict[str, Any]:
        return self.run_call(call, params, opted_in=call.capabilities.tasks, creator=self.tasks)

    def run_call(
        self,
        call: Call,
        params: m.CallToolParams,
        *,
        opted_in: bool,
        creator: TaskCreator | None,
    ) -> dict[str, Any]:
        """A tools/call, inline or as a task, as the tool's policy and the request decide.

        `opted_in` says whether the request accepts a task, and `creator` makes one (None:
        tasks are not configured). The 2026-07-28 entry passes the Tasks extension's opt-in
        and backend; the 2025-11-25 one, `params.task` and a creator of that era's shape.
        """
        spec = self.toolset.tools.get(params.name)
        if spec is None:
            raise InvalidParams(f"Unknown tool: {params.name}")
        if spec.task is TaskPolicy.REQUIRED and not opted_in:
            raise MissingClientCapability(
                {"extensions": {m.TASKS_EXTENSION: {}}},
                f"Tool {spec.name} runs only as a task: declare the {m.TASKS_EXTENSION} extension",
            )
        tasks = creator if spec.task is not TaskPolicy.INLINE and opted_in else None
        if tasks is not None and not spec.prelude:
            return tasks.create(call, spec, params)
        if spec.task is TaskPolicy.REQUIRED and creator is None:
            raise McpError("Tasks are not configured on this server")
        journal = self.replay_journal(call, params, spec.name, params.arguments)
        # With a prelude, the tool runs inline until `ctx.run_as_task()`; its questions are
        # asked through MRTR before the task exists, and their answers go with the task.
        ctx = self.context(call, journal, stop_at_task_boundary=tasks is not None)
        try:
            with time_limit(call.deadline):
                result = run_tool(spec, params.arguments, ctx)
        except DeadlineExceeded:
            return {"resultType": "complete", **_out_of_time(spec, opted_in)}
        except InputNeeded as need:
            return self.input_required(call, spec.name, params.arguments, ctx, need)
        except BecomeTask:
            if tasks is None:  # only raised when stop_at_task_boundary was set
                raise
            return tasks.create(call, spec, params, ctx.consumed_answers)
        return {"resultType": "complete", **result}

    # -- prompts/get --------------------------------------------------------------------------

    def get_prompt(self, call: Call, params: m.GetPromptParams) -> dict[str, Any]:
        spec = self.toolset.prompts.get(params.name)
        if spec is None:
            raise InvalidParams(f"Unknown prompt: {params.name}")
        journal = self.replay_journal(call, params, spec.name, params.arguments)
        ctx = self.context(call, journal)
        try:
            with time_limit(call.deadline):
                result = run_prompt(spec, params.arguments, ctx)
        except DeadlineExceeded as exc:
            logger.warning("prompt %s ran out of time inline", spec.name)
            raise McpError(f"Prompt {spec.name} did not finish in time") from exc
        except InputNeeded as need:
            return self.input_required(call, spec.name, params.arguments, ctx, need)
        return {"resultType": "complete", **result}


def _out_of_time(spec: ToolSpec, opted_in: bool) -> dict[str, Any]:
    """The isError result of an inline run stopped at its deadline, saying what to do."""
    logger.warning("tool %s ran out of time inline", spec.name)
    message = f"Tool {spec.name} did not finish in time: an inline call must answer first."
    if spec.task is not TaskPolicy.INLINE and not opted_in:
        message += f" Declare the {m.TASKS_EXTENSION} extension to run it as a task."
    return text_result(message, is_error=True)


def _list_capability(list_changed: bool | None) -> dict[str, Any]:
    return {"listChanged": True} if list_changed else {}
