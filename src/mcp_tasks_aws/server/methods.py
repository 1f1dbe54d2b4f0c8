"""The MCP server: one method table from (era, JSON-RPC method) to (params model, handler).

`McpServer.serve` takes one decoded JSON-RPC request plus the caller's principal and returns
what to send (`call.Served`). It knows nothing of HTTP or AWS: the HTTP transport
(`protocol.transport`) wraps it, and the task backend plugs in through `call.TaskBackend`.

Both protocol eras dispatch through the same table (`methods`, keyed by `protocol.era.Era` and
method name): the server fills the 2026-07-28 entries, and `server.legacy.endpoint` registers
the 2025-11-25 ones (`register`), which wrap these handlers rather than test an era inside
them. The rest of the 2026-07-28 surface is here too: discovery, the lists, prompts,
resources and resource templates, and argument completion. Inline runs (with MRTR) are
`server.inline`.

The tool set is checked once, when the server is built: a tool whose schema cannot be built
stops the server there, named with its parameter, instead of failing every `tools/list`.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ValidationError

from mcp_tasks_aws.protocol import models as m
from mcp_tasks_aws.protocol.era import Era
from mcp_tasks_aws.protocol.errors import InvalidMeta, InvalidParams, MethodNotFound
from mcp_tasks_aws.protocol.headers import ParamHeader
from mcp_tasks_aws.protocol.jsonrpc import Request, result_message
from mcp_tasks_aws.protocol.request_state import RequestStateCodec
from mcp_tasks_aws.server.call import Call, Handler, Served, Session, StreamOpener, TaskBackend
from mcp_tasks_aws.server.inline import InlineRunner
from mcp_tasks_aws.server.live import LIVE_METHODS, serve_live
from mcp_tasks_aws.tools.registry import ToolSet

if TYPE_CHECKING:
    from mcp_tasks_aws.server.handles import TaskHandles

PROTOCOL_VERSION = "2026-07-28"
SUPPORTED_VERSIONS = [PROTOCOL_VERSION]


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
        handles: TaskHandles | None = None,
    ) -> None:
        toolset.check()  # fail at startup, not on every tools/list
        if handles is not None and handles.toolset is not toolset:
            raise ValueError("the task handles must be built for the server's own tool set")
        self.toolset = toolset
        self.listener = listener
        self.handles = handles
        """Task handles for clients that do not speak tasks (`server.handles`; None: off)."""
        self.inline = InlineRunner(
            toolset, state_codec=state_codec, list_changed=list_changed, handles=handles
        )
        self.page_size = page_size
        self.list_ttl_ms = list_ttl_ms
        self.tasks = tasks
        modern: dict[str, tuple[type[BaseModel], Handler]] = {
            "server/discover": (m.RequestParams, self.discover),
            "tools/list": (m.PaginatedParams, self.list_tools),
            "tools/call": (m.CallToolParams, self.call_tool),
            "prompts/list": (m.PaginatedParams, self.list_prompts),
            "prompts/get": (m.GetPromptParams, self.inline.get_prompt),
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
        declared = raw.get(m.CLIENT_CAPABILITIES_KEY)
        if declared is not None and m.capabilities_chars(declared) > m.MAX_CAPABILITIES_CHARS:
            # A task keeps them on its item: unbounded, they could make it too large to write.
            raise InvalidMeta(
                f"Invalid params._meta: {m.CLIENT_CAPABILITIES_KEY} is too large "
                f"(over {m.MAX_CAPABILITIES_CHARS} characters of JSON)"
            )
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
        *,
        era: Era = Era.MODERN,
        session: Session | None = None,
        deadline: float | None = None,
        streaming: bool = False,
        granted_scopes: frozenset[str] | None = None,
        opening: Callable[[], Any] | None = None,
    ) -> Served:
        """Transport entry point, both eras: the message or stream, notifications, headers.

        Errors raise McpError. A stream (subscriptions/listen, a 2025-11-25 call that asks)
        yields whole messages, the last one being the response; its notifications travel in it.
        `granted_scopes` are what the caller's token grants (None: tools' scopes are not
        enforced). With `streaming`, an inline run's notifications go out as they are made: in
        2026-07-28 always, in 2025-11-25 when given the `opening` its stream must start with
        (the priming event of `server.legacy.questions`).
        """
        call = Call(
            request,
            principal,
            meta,
            era=era,
            session=session,
            deadline=deadline,
            streaming=streaming,
            granted_scopes=granted_scopes,
        )
        live = era is Era.MODERN or opening is not None
        if streaming and live and request.method in LIVE_METHODS:
            # Progress and log notifications go out as the tool makes them (`server.live`).
            result = serve_live(call, self.handle, opening)
        else:
            result = self.handle(call)
        if isinstance(result, dict):
            message = result_message(request.id, result)
            return Served(message, call.notifications, call.response_headers)
        return Served(result, [], call.response_headers)

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
        return {
            "resultType": "complete",
            "supportedVersions": SUPPORTED_VERSIONS,
            "capabilities": self.capabilities(),
            "cacheScope": "public",
            "ttlMs": self.list_ttl_ms,
            "_meta": self.server_info(),
        }

    def capabilities(self) -> dict[str, Any]:
        """What this server offers, in 2026-07-28 terms (`server/discover`; the 2025-11-25
        `initialize` derives its own from it)."""
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
        return capabilities

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

    def _list_result(
        self,
        key: str,
        items: list[Any],
        cursor: str | None,
        wire: Callable[[Any], dict[str, Any]] = lambda item: item.to_wire(),
    ) -> dict[str, Any]:
        page, next_cursor = self._page(items, cursor)
        result: dict[str, Any] = {
            "resultType": "complete",
            key: [wire(item) for item in page],
            "cacheScope": "public",
            "ttlMs": self.list_ttl_ms,
        }
        if next_cursor:
            result["nextCursor"] = next_cursor
        return result

    def list_tools(self, call: Call, params: m.PaginatedParams) -> dict[str, Any]:
        tools: list[Any] = list(self.toolset.tools.values())
        handles = self.handles
        if handles is None or not handles.listed_to(call):
            return self._list_result("tools", tools, params.cursor)
        # A client without tasks: the handle tools after the server's own, and no
        # outputSchema on a tool that answers it with a handle (see server.handles).
        tools += handles.tools()
        return self._list_result(
            "tools",
            tools,
            params.cursor,
            lambda item: item if isinstance(item, dict) else handles.listed(item),
        )

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

    # -- tools/call ---------------------------------------------------------------------------

    def call_tool(self, call: Call, params: m.CallToolParams) -> dict[str, Any]:
        if self.handles is not None and self.handles.knows(params.name):
            return self.handles.call_tool(call, params)  # task_status, task_answer, task_cancel
        opted_in = call.capabilities.tasks
        return self.inline.run_call(call, params, opted_in=opted_in, creator=self.tasks)


def _list_capability(list_changed: bool | None) -> dict[str, Any]:
    return {"listChanged": True} if list_changed else {}
