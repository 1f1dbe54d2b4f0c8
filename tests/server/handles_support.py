"""What the task-handle tests share: both eras over the in-memory task domain (no moto), with
the handle tools on, legs run when a test says so, and waits on a clock the test moves.

`HandleStack.time` is the handles' monotonic clock: each `task_status` poll step sleeps on it,
which advances it and runs the next action a test queued (`time.on_sleep`), so a wait that
sees a change is deterministic.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mcp_tasks_aws.protocol.request_state import RequestStateCodec
from mcp_tasks_aws.protocol.transport import HttpResponse, HttpTransport
from mcp_tasks_aws.server.handles import TaskHandles
from mcp_tasks_aws.server.legacy.endpoint import install_legacy
from mcp_tasks_aws.server.legacy.sessions import InMemoryLegacySessionStore
from mcp_tasks_aws.server.methods import SUPPORTED_VERSIONS, McpServer
from mcp_tasks_aws.server.tasks import TasksEndpoint
from mcp_tasks_aws.tasks.legs import LegRunner
from mcp_tasks_aws.tasks.memory import InMemoryTaskStore
from mcp_tasks_aws.tasks.model import TaskRecord, new_task_id
from mcp_tasks_aws.tasks.service import TaskService
from mcp_tasks_aws.tools.registry import ToolSet
from server.handle_tools import tools as handle_tools
from support.domain import START_MS, Clock, RecordingRunner
from support.legacy import LegacyClient
from support.mcp import SECRET, TASKS_EXTENSION, McpClient

OPTED_IN: dict[str, Any] = {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}
ELICITING: dict[str, Any] = {"elicitation": {}}
NOTHING: dict[str, Any] = {}
RELATED = "io.modelcontextprotocol/related-task"


class FakeTime:
    """Monotonic seconds for the handles' waits: a sleep advances them and runs what the test
    queued for it (one action per sleep, in order)."""

    def __init__(self) -> None:
        self.now = 1_000.0
        self.sleeps: list[float] = []
        self.on_sleep: list[Callable[[], Any]] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        if self.on_sleep:
            self.on_sleep.pop(0)()


@dataclass
class HandleStack:
    """Both eras over one in-memory task service, with task handles."""

    toolset: ToolSet = field(default_factory=lambda: handle_tools)
    enabled: bool = True
    prefix: str = ""
    budget_ms: int = 2_000
    poll_ms: int = 100
    time: FakeTime = field(default_factory=FakeTime)
    clock: Clock = field(default_factory=lambda: Clock(START_MS))
    runner: RecordingRunner = field(default_factory=RecordingRunner)

    def __post_init__(self) -> None:
        self.store = InMemoryTaskStore(clock=self.clock)
        self.service = TaskService(
            self.store, self.runner, default_ttl_ms=3_600_000, clock=self.clock
        )
        self.legs = LegRunner(
            self.store, self.runner, self.toolset, clock=self.clock, report_interval_ms=0
        )
        codec = RequestStateCodec(SECRET)
        self.handles = TaskHandles(
            self.toolset,
            self.service,
            state_codec=codec,
            enabled=self.enabled,
            prefix=self.prefix,
            budget_ms=self.budget_ms,
            poll_ms=self.poll_ms,
            clock=self.time.clock,
            sleep=self.time.sleep,
        )
        server = McpServer(
            self.toolset,
            state_codec=codec,
            tasks=TasksEndpoint(self.service),
            handles=self.handles,
        )
        gate = install_legacy(
            server,
            secret=SECRET,
            sessions=InMemoryLegacySessionStore(),
            tasks=self.service,
            window_ms=300,
            poll_ms=20,
        )
        self.transport: HttpTransport = HttpTransport(
            server, supported_versions=SUPPORTED_VERSIONS, legacy=gate
        )
        self.client = McpClient(self.transport)

    def legacy(
        self, capabilities: dict[str, Any] | None = None, principal: str = "anonymous"
    ) -> LegacyClient:
        """A fresh, initialized 2025-11-25 session (elicitation, sampling, roots by default)."""
        client = LegacyClient(self.transport, principal)
        client.initialize(capabilities)
        return client

    def run_leg(self, task_id: str) -> str:
        """Run the task's next leg, as its execution would."""
        return self.legs.run(task_id, f"token-{new_task_id()[:8]}")

    def record(self, task_id: str) -> TaskRecord:
        record = self.store.get(task_id)
        assert record is not None
        return record

    def call(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        capabilities: dict[str, Any] | None = None,
        principal: str = "anonymous",
        **params: Any,
    ) -> HttpResponse:
        """A 2026-07-28 `tools/call` (all input capabilities, no tasks, unless told)."""
        return self.client.call_tool(
            name,
            arguments,
            capabilities=capabilities,
            principal=principal,
            extra_params=params,
        )

    def result(self, name: str, arguments: dict[str, Any] | None = None, **kwargs: Any) -> Any:
        response = self.call(name, arguments, **kwargs)
        assert response.status == 200, response.body
        message = response.json
        assert "error" not in message, message
        return message["result"]


def text(result: dict[str, Any]) -> str:
    """All text blocks of a result, joined (what a model reads)."""
    return "\n".join(b["text"] for b in result.get("content", []) if b.get("type") == "text")


NEXT = re.compile(r"Next: call `(?P<tool>[\w.-]+)` with ")


def next_call(result_text: str) -> tuple[str, dict[str, Any]] | None:
    """The call a result's text says to make next, read from the text alone: the tool's name
    and the JSON arguments that follow it (None: the text asks for nothing more)."""
    found = NEXT.search(result_text)
    if found is None:
        return None
    arguments, _ = json.JSONDecoder().raw_decode(result_text[found.end() :])
    return found["tool"], arguments
