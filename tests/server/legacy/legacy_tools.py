"""Tools with side effects the 2025-11-25 hardening tests count, behind the real transport with
an in-memory session store (no moto), and a way to give requests a deadline."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, cast

from mcp_tasks_aws import ToolContext, ToolSet
from mcp_tasks_aws.protocol.request_state import RequestStateCodec
from mcp_tasks_aws.protocol.transport import HttpRequest, HttpResponse, HttpTransport
from mcp_tasks_aws.server.legacy.endpoint import LegacyEndpoint, install_legacy
from mcp_tasks_aws.server.legacy.sessions import InMemoryLegacySessionStore, LegacySessionStore
from mcp_tasks_aws.server.methods import SUPPORTED_VERSIONS, McpServer
from support.mcp import SECRET

NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
NAME = {"action": "accept", "content": {"name": "Alice"}}

effects: list[str] = []
"""What the tools below did after their question (cleared by each test that counts)."""
after_question: list[Callable[[], None]] = []
"""Hooks `greet_once` runs (once each) after its answer, before its side effect."""

tools = ToolSet(name="legacy-hardening", version="0")


@tools.tool
async def greet_once(ctx: ToolContext) -> str:
    """Asks a name, then does something that must happen once per call."""
    answer = await ctx.elicit("What is your name?", NAME_FORM, key="name")
    name = (answer.content or {}).get("name", "?")
    while after_question:
        after_question.pop(0)()
    effects.append(f"greeted {name}")
    return f"Hello, {name}!"


@tools.tool
def count_once() -> str:
    """Does something that must happen once per call, without asking."""
    effects.append("counted")
    return "counted"


@tools.tool
async def count_then_ask(ctx: ToolContext) -> str:
    """Does something that must happen once per call, then asks a name."""
    effects.append("counted")
    answer = await ctx.elicit("What is your name?", NAME_FORM, key="name")
    return f"Hello, {(answer.content or {}).get('name', '?')}!"


@tools.prompt
async def count_then_ask_prompt(ctx: ToolContext) -> list[dict[str, object]]:
    """Does something that must happen once per call, then asks a name."""
    effects.append("counted")
    answer = await ctx.elicit("What is your name?", NAME_FORM, key="name")
    name = (answer.content or {}).get("name", "?")
    return [{"role": "user", "content": {"type": "text", "text": f"Greet {name}"}}]


@tools.tool
def big_answer(size: int) -> str:
    """Answers `size` characters."""
    return "x" * size


@tools.tool
async def ask_then_answer_big(size: int, ctx: ToolContext) -> str:
    """Asks a name, then answers `size` characters."""
    await ctx.elicit("What is your name?", NAME_FORM, key="name")
    return "x" * size


@tools.tool
async def ask_big_then_greet(size: int, ctx: ToolContext) -> str:
    """Asks a name with a question `size` characters long."""
    answer = await ctx.elicit("Name? " + "x" * size, NAME_FORM, key="name")
    return f"Hello, {(answer.content or {}).get('name', '?')}!"


class DeadlineTransport:
    """Hands every request to `transport` with `deadline` (a `time.monotonic()` value) set."""

    def __init__(self, transport: HttpTransport) -> None:
        self.transport = transport
        self.deadline: float | None = None
        self.server = transport.server

    def handle(self, http: HttpRequest) -> HttpResponse:
        return self.transport.handle(replace(http, deadline=self.deadline))


def hardening_transport(
    sessions: LegacySessionStore | None = None, **options: Any
) -> tuple[HttpTransport, LegacyEndpoint]:
    """Both eras over `tools`, with short resume windows (300 ms, polled every 20 ms); also
    the legacy endpoint. `options` go to `install_legacy`."""
    server = McpServer(tools, state_codec=RequestStateCodec(SECRET))
    values: dict[str, Any] = {"window_ms": 300, "poll_ms": 20, **options}
    store = sessions if sessions is not None else InMemoryLegacySessionStore()
    gate = install_legacy(server, secret=SECRET, sessions=store, **values)
    return HttpTransport(server, supported_versions=SUPPORTED_VERSIONS, legacy=gate), gate


def with_deadline(transport: HttpTransport) -> DeadlineTransport:
    return DeadlineTransport(transport)


def as_transport(transport: DeadlineTransport) -> HttpTransport:
    return cast("HttpTransport", transport)
