"""Running a durable tool's task (the durable function's work; the run is `runs.durable`).

A tool registered with `runner="durable"` runs as one Lambda durable execution per task,
named after the task. The execution runs the tool from the top at every invocation, and the
durable operations it made before are replayed from their checkpoints instead of being done
again. This module maps the tool's context onto those operations, through `DurableOps` (the
SDK's side is `aws.durable_sdk`; a test may give a stand-in):

- `ctx.step(name, fn)` is a durable step: `fn` runs once, its result is checkpointed and
  returned on every replay;
- a round of questions (`await ctx.elicit(...)`, `ctx.sample`, `ctx.list_roots`, `ask_all`)
  is a durable callback: the task is parked (`input_required`) holding the callback id as its
  token; `tasks/update` records the answers on the task, then completes the callback with them
  (`SendDurableExecutionCallbackSuccess`), and the execution goes on. Which keys a round asked
  is itself a step, so a replay that finds them answered still makes the same operations;
- `ctx.sleep(seconds)` is a durable wait: no compute is held; the task stays `working`, its
  status message saying until when (a step: not written again on replay);
- progress and status messages are written as in any leg (throttled, fenced by the leg), and a
  refused write means the task ended elsewhere (cancel wins): the tool stops there.

Writes are fenced by the leg the invocation read; the sweeper may move that leg on (`adopt`:
a durable task silent for long, sleeping, is looked at once) and then a refused write reads
the task again and, if it is still active, is made at the new leg.

The task ends when the tool returns (`complete`, through the worker's `LegRunner`: the same
result budget and offload), or fails with the protocol error it raised. An execution that ends
without ending its task (a crash past its retries, its timeout, a stop) is settled by the
reconciler (`runs.durable.DurableRun.settle_lost`).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypeVar

from mcp_tasks_aws.protocol.errors import INTERNAL_ERROR, INVALID_PARAMS, McpError, to_error_object
from mcp_tasks_aws.tasks import transitions
from mcp_tasks_aws.tasks.exceptions import TaskCancelled
from mcp_tasks_aws.tasks.model import TaskRecord
from mcp_tasks_aws.tools.context import PendingInput, ToolContext, TooManyQuestions
from mcp_tasks_aws.tools.context import capabilities_from_json as _capabilities
from mcp_tasks_aws.tools.invoke import run_tool
from mcp_tasks_aws.tools.journal import MAX_QUESTIONS_PER_ROUND, STEP_PREFIX, InputNeeded

if TYPE_CHECKING:
    from mcp_tasks_aws.tasks.legs import LegRunner
    from mcp_tasks_aws.tasks.ports import TaskStore

logger = logging.getLogger(__name__)

T = TypeVar("T")
Outcome = Literal["completed", "failed", "ended", "cancelled"]
NOT_ANSWERED_MESSAGE: Final = "The task's question was not answered before the task's TTL"
MAX_SLEEP_SECONDS: Final = 365 * 24 * 3600
"""A durable wait lasts at most a year (the service's own bound)."""


class CallbackFailed(Exception):
    """A durable callback ended without an answer (it timed out, or was failed)."""


class DurableOps(Protocol):
    """The durable operations a durable tool's context is made of (`aws.durable_sdk` makes
    them from the SDK's `DurableContext`)."""

    def step(self, name: str, fn: Callable[[], T]) -> T:
        """Run `fn` once in the execution; its checkpointed result on every replay."""
        ...

    def wait(self, name: str, seconds: int) -> None:
        """Wait `seconds` without compute (the invocation ends; a later one replays past it)."""
        ...

    def callback(self, name: str, timeout_s: int) -> tuple[str, Callable[[], Any]]:
        """Create a callback: its id, and what returns its result (the JSON text it was
        completed with), suspending the execution until it is completed. The getter raises
        `CallbackFailed` for a callback that timed out or was failed."""
        ...


class _Writer:
    """The task's writes from one invocation, fenced by the leg it read, re-read once when
    refused (the sweeper may have moved the leg on): TaskCancelled when the task ended."""

    def __init__(self, store: TaskStore, record: TaskRecord, clock: Callable[[], int]) -> None:
        self.store = store
        self.record = record
        self.clock = clock

    def write(self, move: Callable[[int], tuple[transitions.Guard, transitions.Changes]]) -> None:
        for _ in range(2):
            outcome = self.store.apply(self.record.task_id, *move(self.record.leg))
            if outcome is not None and outcome.changed:
                self.record = outcome.record
                return
            if outcome is None or outcome.record.is_terminal:
                raise TaskCancelled()
            if outcome.record.leg == self.record.leg:
                break  # refused at the same leg: not ours to write
            self.record = outcome.record
        raise TaskCancelled()


class _Reporter:
    """`ctx.report` for a durable task: throttled status messages, as a leg's."""

    def __init__(self, writer: _Writer, min_interval_ms: int) -> None:
        self._writer = writer
        self._min_interval_ms = min_interval_ms
        self._last = -min_interval_ms

    def __call__(self, message: str, *, force: bool = False) -> None:
        now = self._writer.clock()
        if not force and now - self._last < self._min_interval_ms:
            return
        self._last = now
        self._writer.write(lambda leg: transitions.report(leg, message[:1000], now))


class DurableToolContext(ToolContext):
    """A tool's context in a durable execution: steps, questions and sleeps are durable."""

    def __init__(
        self, *, ops: DurableOps, writer: _Writer, reporter: _Reporter, **kwargs: Any
    ) -> None:
        super().__init__(report=reporter, **kwargs)
        self._ops = ops
        self._writer = writer
        self._reporter = reporter
        self._rounds = 0
        self._sleeps = 0

    def step(self, name: str, fn: Callable[[], T]) -> T:
        key = f"{STEP_PREFIX}{name}"
        if key in self._keys_used:
            raise ValueError(f"step {name!r} is used twice in one run of the tool")
        self._keys_used.add(key)
        return self._ops.step(f"step:{name}", fn)

    def sleep(self, seconds: float) -> None:
        if not 1 <= seconds <= MAX_SLEEP_SECONDS:
            raise ValueError(f"ctx.sleep: give 1 to {MAX_SLEEP_SECONDS} seconds")
        whole = math.ceil(seconds)
        self._sleeps += 1
        number = self._sleeps

        def note() -> str:
            until = datetime.fromtimestamp(self._writer.clock() / 1000 + whole, UTC)
            text = f"sleeping until {until.isoformat(timespec='seconds').replace('+00:00', 'Z')}"
            self._reporter(text, force=True)
            return text

        self._ops.step(f"sleep:{number}:note", note)
        self._ops.wait(f"sleep:{number}", whole)

    async def ask_all(self, *pending: PendingInput[Any]) -> tuple[Any, ...]:
        if len(pending) > MAX_QUESTIONS_PER_ROUND:
            raise TooManyQuestions(len(pending))
        self._rounds += 1
        number = self._rounds
        missing = {p.key: p.as_request() for p in pending if p.key not in self._journal}
        # Which keys this round asks is decided once (a replay finds them answered on the task,
        # yet must make the same durable operations as the first run did).
        asked: list[str] = self._ops.step(f"ask:{number}:keys", lambda: sorted(missing))
        if asked:
            record = self._writer.record
            timeout = record.wait_seconds(self._writer.clock())
            callback_id, result = self._ops.callback(f"ask:{number}", timeout)
            outstanding = {p.key: p.as_request() for p in pending if p.key in missing}
            if outstanding and record.task_token != callback_id:
                now = self._writer.clock()
                self._writer.write(
                    lambda leg: transitions.park(leg, outstanding, callback_id, {}, now)
                )
            try:
                text = result()  # suspends the execution until tasks/update completes it
            except CallbackFailed as exc:
                raise McpError(NOT_ANSWERED_MESSAGE) from exc
            answers = json.loads(text) if isinstance(text, str | bytes) else text
            if isinstance(answers, dict):
                self._journal.update({k: v for k, v in answers.items() if k in asked})
        return await super().ask_all(*pending)


class DurableBody:
    """Runs a durable tool's task in its execution, over the worker's `LegRunner` (the store,
    the tool set, the result budget)."""

    def __init__(self, legs: LegRunner) -> None:
        self.legs = legs

    def run(self, task_id: str, ops: DurableOps) -> Outcome:
        """One invocation of the execution of `task_id`: what became of the task (`ended`: it
        had ended before, or is gone)."""
        legs = self.legs
        store = legs.store
        record = store.get(task_id)
        if record is None or record.is_terminal:
            return "ended"
        clock = legs.clock
        if record.is_expired(clock()):
            return self._fail(record, {"code": INTERNAL_ERROR, "message": "The task expired"})
        spec = legs.toolset.tools.get(record.tool)
        if spec is None or spec.runner != "durable":
            error = {"code": INVALID_PARAMS, "message": f"Unknown durable tool: {record.tool}"}
            return self._fail(record, error)
        writer = _Writer(store, record, clock)
        reporter = _Reporter(writer, legs.report_interval_ms)
        ctx = DurableToolContext(
            ops=ops,
            writer=writer,
            reporter=reporter,
            capabilities=_capabilities(record.capabilities),
            principal=record.owner,
            journal=record.journal,
            task_id=task_id,
            list_changed=legs.list_changed,
        )
        try:
            result = run_tool(spec, record.arguments, ctx)
        except TaskCancelled:
            logger.info("task %s: ended elsewhere (cancelled); the execution ends", task_id)
            return "cancelled"
        except InputNeeded:
            # Not reachable through the durable context; a bug if it is.
            error = {"code": INTERNAL_ERROR, "message": "The tool asked outside a durable round"}
            return self._fail(writer.record, error)
        except McpError as exc:
            error, _ = to_error_object(exc)
            return self._fail(writer.record, error)
        return "completed" if legs.complete(writer.record, result) else "ended"

    def _fail(self, record: TaskRecord, error: dict[str, Any]) -> Outcome:
        store = self.legs.store
        moved = store.apply(record.task_id, *transitions.fail(record.leg, error, self.legs.clock()))
        return "failed" if moved is not None and moved.changed else "ended"
