"""What the domain tests share: an in-memory store, a runner that records what it was told, a
clock the test moves, tools with known behaviour, and a way to stop one caller between two
store calls while another goes first. No moto, no threads unless a test asks for a pause.

Its task records are `support.records.make_record` (alice's `echo`, created at START_MS)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from mcp_tasks_aws import TaskPolicy, ToolContext, ToolSet
from mcp_tasks_aws.protocol.errors import InternalError
from mcp_tasks_aws.tasks.exceptions import ResultGone
from mcp_tasks_aws.tasks.legs import LegRunner
from mcp_tasks_aws.tasks.memory import InMemoryTaskStore
from mcp_tasks_aws.tasks.model import TaskRecord, new_task_id
from mcp_tasks_aws.tasks.service import TaskService
from support.clock import Clock

ALICE = "jwt:https://issuer|alice|app"
BOB = "jwt:https://issuer|bob|app"
ELICIT = "elicitation/create"
CAPABILITIES: dict[str, Any] = {
    "elicitation": {},
    "extensions": {"io.modelcontextprotocol/tasks": {}},
}
CONFIRM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
START_MS = 1_700_000_000_000


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


def elicit_request(message: str = "ok?") -> dict[str, Any]:
    return {
        "method": ELICIT,
        "params": {"mode": "form", "message": message, "requestedSchema": CONFIRM},
    }


@dataclass
class RecordingRunner:
    """A Runner that records every call; a token works once, as a Step Functions token does.

    `failing` names calls (`start`, `resume`, `end_leg`, `interrupt`, `stop`) that raise the
    next time they are made, as an AWS fault would.
    """

    calls: list[tuple[str, str]] = field(default_factory=list)
    started: set[str] = field(default_factory=set)
    used_tokens: set[str] = field(default_factory=set)
    retried: set[str] = field(default_factory=set)
    failing: set[str] = field(default_factory=set)
    before_call: Callable[[str, str], None] | None = None

    def _record(self, name: str, subject: str) -> None:
        if self.before_call is not None:
            self.before_call(name, subject)
        self.calls.append((name, subject))
        if name in self.failing:
            self.failing.discard(name)
            raise RuntimeError(f"injected {name} fault")

    def _use(self, token: str) -> bool:
        if token in self.used_tokens or token in self.retried:
            return False
        self.used_tokens.add(token)
        return True

    def retry(self, token: str) -> None:
        """The state waiting on `token` retried its invoke (the answer of the invoke that
        carried the token was lost): a new attempt has a new token, and this one is dead."""
        self.retried.add(token)

    def is_waiting(self, task_token: str) -> bool:
        self._record("is_waiting", task_token)
        return task_token not in self.used_tokens and task_token not in self.retried

    def start(self, task_id: str, wait_seconds: int) -> None:
        self._record("start", task_id)
        self.started.add(task_id)  # a second start of the same task is a no-op

    def resume(self, task_token: str, wait_seconds: int) -> bool:
        self._record("resume", task_token)
        return self._use(task_token)

    def end_leg(self, task_token: str) -> bool:
        self._record("end_leg", task_token)
        return self._use(task_token)

    def interrupt(self, task_token: str) -> bool:
        self._record("interrupt", task_token)
        return self._use(task_token)

    def stop(self, task_id: str) -> None:
        self._record("stop", task_id)

    def is_running(self, task_id: str) -> bool:
        self._record("is_running", task_id)
        return task_id in self.started

    def named(self, name: str) -> list[str]:
        return [subject for call, subject in self.calls if call == name]


@dataclass
class QueuedLegs:
    """DirectLegs that queue each started task id (a test runs the leg when it wants to).

    `failing` makes the next `start` raise (a RuntimeError unless `fault` says otherwise), as a
    refused invoke would.
    """

    queued: list[str] = field(default_factory=list)
    failing: bool = False
    fault: Exception | None = None

    def start(self, task_id: str) -> None:
        if self.failing:
            self.failing = False
            raise self.fault or RuntimeError("injected invoke fault")
        self.queued.append(task_id)


class ResultBucket:
    """A ResultStore in a dict."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self.kept_until: dict[str, int | None] = {}

    def put(self, task_id: str, body: bytes, expires_at: int | None) -> str:
        key = f"results/{task_id}.json"
        self.objects[key] = body
        self.kept_until[key] = expires_at
        return key

    def get(self, ref: str) -> bytes:
        if ref not in self.objects:
            raise ResultGone(ref)
        return self.objects[ref]

    def size(self, ref: str) -> int:
        return len(self.get(ref))


# -- tools with known behaviour ----------------------------------------------------------------

tools = ToolSet(name="domain", version="0")
side_effects: list[str] = []


@tools.tool(task=TaskPolicy.REQUIRED)
def echo(text: str) -> str:
    """Returns its text."""
    return text


@tools.tool(task=TaskPolicy.REQUIRED)
def big(size: int) -> str:
    """Returns `size` characters."""
    return "x" * size


@tools.tool(task=TaskPolicy.REQUIRED)
def quotes(size: int) -> str:
    """Returns `size` double quotes (each escaped once in JSON, twice in a response)."""
    return '"' * size


@tools.tool(task=TaskPolicy.REQUIRED)
async def confirm(name: str, ctx: ToolContext) -> str:
    """Asks once, then answers."""
    answer = await ctx.elicit(f"Delete {name}?", CONFIRM, key="confirm")
    return f"{name}: {(answer.content or {}).get('ok')}"


@tools.tool(task=TaskPolicy.REQUIRED)
async def two_questions(ctx: ToolContext) -> str:
    """Asks two things at once."""
    first, second = await ctx.ask_all(
        ctx.elicit("First?", CONFIRM, key="first"), ctx.elicit("Second?", CONFIRM, key="second")
    )
    return f"{(first.content or {}).get('ok')}/{(second.content or {}).get('ok')}"


@tools.tool(task=TaskPolicy.REQUIRED)
async def charge_then_confirm(label: str, ctx: ToolContext) -> str:
    """A side effect before a question, guarded by a step."""
    receipt = ctx.step("charge", lambda: side_effects.append(label) or f"charged {label}")
    answer = await ctx.elicit("Confirm?", CONFIRM, key="confirm")
    return f"{receipt}; ok={(answer.content or {}).get('ok')}"


@tools.tool(task=TaskPolicy.REQUIRED)
def reporting(ctx: ToolContext) -> str:
    """Reports progress, then finishes."""
    ctx.report("halfway")
    return "done"


@tools.tool(task=TaskPolicy.REQUIRED)
def crashing() -> str:
    """A tool bug: completes with isError."""
    raise ValueError("bug in the tool")


@tools.tool(task=TaskPolicy.REQUIRED)
def protocol_fault() -> str:
    """A protocol-level fault: the task fails."""
    raise InternalError("the backend refused")


@tools.tool
def shout(text: str) -> str:
    """Answers inline, never as a task."""
    return text.upper()


@tools.tool(task=TaskPolicy.OPTIONAL, ttl_ms=120_000)
def maybe(text: str) -> str:
    """A task when the client asks for one (kept two minutes), inline otherwise."""
    return f"maybe {text}"


@tools.tool(task=TaskPolicy.REQUIRED, prelude=True)
async def ask_first(ctx: ToolContext) -> str:
    """Asks a name inline, then runs as a task."""
    answer = await ctx.elicit("Your name?", NAME, key="name")
    await ctx.run_as_task()
    return f"Hello, {(answer.content or {}).get('name')}!"


# -- assembled parts ---------------------------------------------------------------------------


@dataclass
class Domain:
    """A store, a runner, the use cases and the worker, sharing one clock."""

    clock: Clock = field(default_factory=lambda: Clock(START_MS))
    """Epoch milliseconds the test controls."""
    runner: RecordingRunner = field(default_factory=RecordingRunner)
    results: ResultBucket = field(default_factory=ResultBucket)
    direct: bool = False
    """Run first legs directly (`direct_legs` queues them; `run_direct` runs one)."""
    direct_legs: QueuedLegs = field(default_factory=QueuedLegs)
    store: InMemoryTaskStore = field(init=False)
    service: TaskService = field(init=False)
    legs: LegRunner = field(init=False)

    def __post_init__(self) -> None:
        self.store = InMemoryTaskStore(clock=self.clock)
        self.service = TaskService(
            self.store,
            self.runner,
            direct_legs=self.direct_legs if self.direct else None,
            results=self.results,
            default_ttl_ms=3_600_000,
            clock=self.clock,
        )
        self.legs = LegRunner(
            self.store,
            self.runner,
            tools,
            results=self.results,
            clock=self.clock,
            report_interval_ms=0,
        )

    def create(self, tool: str, arguments: dict[str, Any] | None = None, owner: str = ALICE) -> str:
        record = self.service.create(owner, tools.tools[tool], arguments or {}, CAPABILITIES)
        return record.task_id

    def run_leg(self, task_id: str, token: str | None = None) -> str:
        """Run the next leg as the state machine would, with a fresh task token."""
        return self.legs.run(task_id, token or f"token-{new_task_id()[:8]}")

    def run_direct(self, task_id: str) -> str:
        """Run the first leg as the asynchronous invoke would (no token)."""
        return self.legs.run_direct(task_id)

    def record(self, task_id: str) -> TaskRecord:
        record = self.store.get(task_id)
        assert record is not None
        return record


# -- stopping a caller between two store calls -------------------------------------------------


class Paused:
    """A caller held before one store primitive, in its own thread, until released."""

    def __init__(
        self,
        reached: threading.Event,
        release: threading.Event,
        thread: threading.Thread,
        box: dict[str, Any],
    ) -> None:
        self._reached = reached
        self._release = release
        self._thread = thread
        self._box = box

    def resume(self) -> Any:
        """Let it go on; return what it returned (or raise what it raised)."""
        self._release.set()
        self._thread.join(timeout=5)
        assert not self._thread.is_alive(), "the paused caller did not finish"
        if "error" in self._box:
            raise self._box["error"]
        return self._box.get("value")


@contextmanager
def pause_before(
    port: InMemoryTaskStore | RecordingRunner, primitive: str, action: Callable[[], Any]
) -> Iterator[Paused]:
    """Start `action` in a thread and hold it just before its first `primitive` call on `port`.

    Store primitives are `get`, `get_many`, `put_new`, `list_by_owner` and `apply:<move>`;
    runner ones `start`, `resume`, `end_leg`, `interrupt` and `stop`. Inside the block the
    test runs whatever must go first; `Paused.resume()` lets the action finish.
    """
    reached, release = threading.Event(), threading.Event()
    box: dict[str, Any] = {}
    held = threading.local()
    target: list[threading.Thread] = []

    def gate(name: str, _: str) -> None:
        ours = bool(target) and threading.current_thread() is target[0]
        if ours and name == primitive and not getattr(held, "done", False):
            held.done = True
            reached.set()
            assert release.wait(timeout=5), "the test never released the paused caller"

    def run() -> None:
        try:
            box["value"] = action()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    target.append(thread)
    port.before_call = gate
    thread.start()
    try:
        assert reached.wait(timeout=5), f"the caller never reached {primitive}"
        yield Paused(reached, release, thread, box)
    finally:
        release.set()
        thread.join(timeout=5)
        port.before_call = None


@tools.tool(task=TaskPolicy.REQUIRED, direct=False)
def always_on_step_functions(text: str) -> str:
    """Returns its text; its tasks never run directly."""
    return text


@tools.tool(task=TaskPolicy.REQUIRED, poll_interval_ms=1_000, max_poll_interval_ms=4_000)
def paced(text: str) -> str:
    """Returns its text; its tasks are polled every 1 to 4 s."""
    return text
