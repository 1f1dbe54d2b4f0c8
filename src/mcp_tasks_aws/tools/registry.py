"""The registry: plain Python functions become MCP tools, prompts, resources and completers.

`ToolSet.tool` derives a tool's `inputSchema` from its type hints (through pydantic, see
`signature`), or takes a hand-written JSON Schema 2020-12 as is; its description comes from the
docstring and its `outputSchema` from the return annotation. Schemas and validators are built
by `ToolSet.check()`, which the server runs once at startup, so a definition no client could
use fails there, naming the tool and the parameter, instead of answering "Internal error" to
every `tools/list`.

Invariants:
- every tool, prompt and resource has a description (registration fails without one);
- a tool's `ToolContext` parameter is injected, never part of its input schema;
- the task policy is the server's decision, declared here per tool;
- `x-mcp-header` parameters satisfy SEP-2243 (see `protocol.headers`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar, overload

from mcp_tasks_aws.tools.signature import ToolDefinitionError, check_name, docstring_parts
from mcp_tasks_aws.tools.specs import (
    PromptSpec,
    TaskPolicy,
    ToolError,
    ToolResult,
    ToolSpec,
    text_result,
)

RUNNERS: frozenset[str | None] = frozenset({None, "durable"})
"""What a tool may ask to run its tasks (`runner=`): None, the server's legs, or `durable`."""

if TYPE_CHECKING:  # imported where used: a tool set without them does not load them
    from mcp_tasks_aws.tools.completions import CompleterSpec, RefKind
    from mcp_tasks_aws.tools.resources import ResourceSpec, ResourceTemplateSpec

__all__ = [
    "PromptSpec",
    "TaskPolicy",
    "ToolDefinitionError",
    "ToolError",
    "ToolResult",
    "ToolSet",
    "ToolSpec",
    "text_result",
]

F = TypeVar("F", bound=Callable[..., Any])


class ToolSet:
    """What one server serves: tools, prompts, resources and completers.

    A tools module creates one at module level, named `tools`, and decorates its functions::

        tools = ToolSet()

        @tools.tool
        def add(a: int, b: int) -> int:
            \"\"\"Add two numbers.\"\"\"
            return a + b
    """

    def __init__(self, name: str = "mcp-tasks-aws", version: str = "0.1.0") -> None:
        self.name = name
        self.version = version
        self.tools: dict[str, ToolSpec] = {}
        self.prompts: dict[str, PromptSpec] = {}
        self.resources: dict[str, ResourceSpec] = {}
        self.resource_templates: dict[str, ResourceTemplateSpec] = {}
        self.completers: dict[tuple[RefKind, str, str], CompleterSpec] = {}
        self._checked = False

    # -- tools --------------------------------------------------------------------------------

    @overload
    def tool(self, fn: F) -> F: ...

    @overload
    def tool(
        self,
        *,
        name: str | None = None,
        description: str | None = None,
        title: str | None = None,
        task: TaskPolicy | str = TaskPolicy.INLINE,
        ttl_ms: int | None = None,
        poll_interval_ms: int | None = None,
        annotations: dict[str, Any] | None = None,
        prelude: bool = False,
        input_schema: dict[str, Any] | None = None,
        scopes: Iterable[str] = (),
        max_poll_interval_ms: int | None = None,
        direct: bool = True,
        expected_seconds: float | None = None,
        handles: bool | None = None,
        runner: str | None = None,
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        fn: Any = None,
        *,
        name: str | None = None,
        description: str | None = None,
        title: str | None = None,
        task: TaskPolicy | str = TaskPolicy.INLINE,
        ttl_ms: int | None = None,
        poll_interval_ms: int | None = None,
        annotations: dict[str, Any] | None = None,
        prelude: bool = False,
        input_schema: dict[str, Any] | None = None,
        scopes: Iterable[str] = (),
        max_poll_interval_ms: int | None = None,
        direct: bool = True,
        expected_seconds: float | None = None,
        handles: bool | None = None,
        runner: str | None = None,
    ) -> Any:
        """Register a function as a tool (usable bare or with keyword options).

        `task` is the tool's task policy; `ttl_ms` overrides the server's default retention for
        its tasks, and `poll_interval_ms` / `max_poll_interval_ms` the bounds of the poll
        interval suggested as a task ages (the first for a new task, the second for an old
        one). With `prelude=True`, the code before `await ctx.run_as_task()` runs inline during
        the call (asking questions through multi round-trip results) and the rest runs as the
        task. `direct=False` runs every task of the tool on Step Functions, never directly.
        `input_schema` replaces the schema derived from the type hints with a hand-written
        JSON Schema 2020-12, sent to clients unchanged and checked on every call; the
        function's parameters must still be among its properties. `scopes` are the OAuth
        scopes a caller's token must grant (AuthMode OAUTH or JWT); a token without them gets
        403 `insufficient_scope`.

        For clients that do not speak tasks (see `server.handles`): `expected_seconds` is how
        long a call usually takes; an `optional` tool expected to take longer than the
        server's inline budget answers such a client with a task handle instead of running
        inline. `handles` overrides the deployment's `MCP_TASKS_HANDLES` for this tool: False
        keeps the -32021 refusal of a task-only tool (and inline runs of an optional one);
        True gives handles even where the deployment turned them off (and makes an optional
        tool answer such clients with a handle whatever its expected duration).

        `runner="durable"` runs each task of the tool as a Lambda durable execution
        (`tasks.runs.durable`): `ctx.step` is a checkpointed step, a question waits on a
        durable callback, `ctx.sleep` waits without compute, and the task may run for hours.
        Such a tool runs only as a task (`task="required"`).
        """
        if isinstance(scopes, str):
            raise TypeError("scopes: give a list of scope names, not one string")
        if expected_seconds is not None and not expected_seconds >= 0:
            raise ToolDefinitionError("expected_seconds: give a number of seconds >= 0")
        needed = frozenset(scopes)
        if runner not in RUNNERS:
            raise ToolDefinitionError(f"runner={runner!r}: give one of {sorted(map(str, RUNNERS))}")
        if runner == "durable" and TaskPolicy(task) is not TaskPolicy.REQUIRED:
            raise ToolDefinitionError(
                "runner='durable' runs only as a task: give task='required' as well"
            )

        def register(func: Any) -> Any:
            tool_name = name or func.__name__
            text, param_docs = _describe("tool", tool_name, func, description, self.tools)
            self.tools[tool_name] = ToolSpec(
                fn=func,
                name=tool_name,
                description=text,
                title=title,
                task=TaskPolicy(task),
                ttl_ms=ttl_ms,
                poll_interval_ms=poll_interval_ms,
                annotations=annotations,
                param_docs=param_docs,
                prelude=prelude,
                handwritten_schema=input_schema,
                scopes=needed,
                max_poll_interval_ms=max_poll_interval_ms,
                direct=direct,
                expected_seconds=expected_seconds,
                handles=handles,
                runner=runner,
            )
            self._checked = False
            return func

        return register(fn) if fn is not None else register

    def include(self, other: ToolSet) -> ToolSet:
        """Serve `other`'s tools, prompts and resources here too (a declaration's managed
        tools beside code tools: `tools.include(declared_tools("managed.yaml"))`); a name
        registered in both raises ToolDefinitionError. Returns `other`."""
        pairs: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
            ("tool", self.tools, other.tools),
            ("prompt", self.prompts, other.prompts),
            ("resource", self.resources, other.resources),
        ]
        for kind, mine, theirs in pairs:
            for name in theirs:
                if name in mine:
                    raise ToolDefinitionError(f"{kind} {name!r} is registered twice")
        for _, mine, theirs in pairs:
            mine.update(theirs)
        self.resource_templates.update(other.resource_templates)
        self.completers.update(other.completers)
        self._checked = False
        return other

    # -- prompts ------------------------------------------------------------------------------

    @overload
    def prompt(self, fn: F) -> F: ...

    @overload
    def prompt(
        self, *, name: str | None = None, description: str | None = None, title: str | None = None
    ) -> Callable[[F], F]: ...

    def prompt(
        self,
        fn: Any = None,
        *,
        name: str | None = None,
        description: str | None = None,
        title: str | None = None,
    ) -> Any:
        """Register a function as a prompt (usable bare or with keyword options).

        Its parameters are the prompt's arguments (strings; required unless they have a
        default). It returns text, content blocks, `Message`s or a list of them.
        """

        def register(func: Any) -> Any:
            prompt_name = name or func.__name__
            text, param_docs = _describe("prompt", prompt_name, func, description, self.prompts)
            self.prompts[prompt_name] = PromptSpec(
                fn=func, name=prompt_name, description=text, title=title, param_docs=param_docs
            )
            self._checked = False
            return func

        return register(fn) if fn is not None else register

    # -- resources ----------------------------------------------------------------------------

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        description: str | None = None,
        title: str | None = None,
        mime_type: str | None = "text/plain",
    ) -> Callable[[F], F]:
        """Register a function returning a resource's contents (`str` or `bytes`) under `uri`.

        A `uri` with `{variables}` (RFC 6570 level 1) registers a resource template: the
        function takes exactly those variables as arguments and is called for every URI the
        template matches. Raise `ResourceNotFound` when what a URI names does not exist.
        """

        from mcp_tasks_aws.tools.resources import ResourceSpec, ResourceTemplateSpec, UriTemplate

        def register(func: F) -> F:
            summary, _ = docstring_parts(func)
            text = description or summary
            label = f"resource {uri!r}"
            if not text:
                raise ToolDefinitionError(f"{label} needs a description (docstring)")
            if uri in self.resources or uri in self.resource_templates:
                raise ToolDefinitionError(f"{label} is registered twice")
            resource_name = name or func.__name__
            if not UriTemplate.is_template(uri):
                self.resources[uri] = ResourceSpec(
                    fn=func,
                    uri=uri,
                    name=resource_name,
                    description=text,
                    mime_type=mime_type,
                    title=title,
                )
                return func
            try:
                template = UriTemplate(uri)
            except ValueError as exc:
                raise ToolDefinitionError(f"resource template {exc}") from exc
            self.resource_templates[uri] = ResourceTemplateSpec(
                fn=func,
                template=template,
                name=resource_name,
                description=text,
                mime_type=mime_type,
                title=title,
            )
            self._checked = False
            return func

        return register

    def find_resource(
        self, uri: str
    ) -> tuple[ResourceSpec | ResourceTemplateSpec, dict[str, str]] | None:
        """What serves `uri`, and the template variables it binds (static resources first)."""
        static = self.resources.get(uri)
        if static is not None:
            return static, {}
        for template in self.resource_templates.values():
            variables = template.template.match(uri)
            if variables is not None:
                return template, variables
        return None

    # -- completions --------------------------------------------------------------------------

    def completer(
        self, *, argument: str, prompt: str | None = None, resource: str | None = None
    ) -> Callable[[F], F]:
        """Register a function suggesting values for a prompt argument or template variable.

        `@tools.completer(prompt="plan_trip", argument="city")` or
        `@tools.completer(resource="weather://{city}/today", argument="city")`. The function
        takes the partial value (and optionally the arguments resolved so far) and returns a
        list of strings, best first.
        """
        from mcp_tasks_aws.tools.completions import CompleterSpec

        if (prompt is None) == (resource is None):
            raise ToolDefinitionError("a completer names either prompt= or resource=")
        kind: RefKind = "prompt" if prompt is not None else "resource"
        ref = prompt if prompt is not None else resource
        assert ref is not None

        def register(func: F) -> F:
            key = (kind, ref, argument)
            if key in self.completers:
                raise ToolDefinitionError(f"{self.completers[key].label} has two completers")
            self.completers[key] = CompleterSpec(fn=func, kind=kind, ref=ref, argument=argument)
            self._checked = False
            return func

        return register

    # -- startup ------------------------------------------------------------------------------

    def check(self) -> None:
        """Build every schema and check every cross-reference, once (the server calls it).

        Raises ToolDefinitionError naming the tool (and parameter) that cannot be served.
        """
        if self._checked:
            return
        for spec in self.tools.values():
            spec.check()
        for prompt in self.prompts.values():
            prompt.check()
        for completer in self.completers.values():
            self._check_completer(completer)
        self._checked = True

    def _check_completer(self, completer: CompleterSpec) -> None:
        if completer.kind == "prompt":
            prompt = self.prompts.get(completer.ref)
            known = [a["name"] for a in prompt.arguments] if prompt is not None else None
        else:
            template = self.resource_templates.get(completer.ref)
            known = list(template.template.variables) if template is not None else None
        if known is None:
            raise ToolDefinitionError(f"completer for {completer.label}: no such {completer.kind}")
        if completer.argument not in known:
            raise ToolDefinitionError(
                f"completer for {completer.label}: it has no such argument "
                f"(it has: {', '.join(known) or 'none'})"
            )


def _describe(
    kind: str, name: str, func: Any, description: str | None, registered: dict[str, Any]
) -> tuple[str, dict[str, str]]:
    """Check a new tool's or prompt's name; return its description and parameter docs."""
    check_name(kind, name)
    if name in registered:
        raise ToolDefinitionError(f"{kind} {name!r} is registered twice")
    summary, param_docs = docstring_parts(func)
    text = description or summary
    if not text:
        raise ToolDefinitionError(f"{kind} {name!r} needs a description (docstring)")
    return text, param_docs
