"""Running one leg of a task (the worker function's work).

A leg replays the tool from the top with the task's journal of answers: the work of the
`direct` and `legs` runs (`tasks.runs`). It runs in one of two ways (see `tasks.transitions`),
told apart by the worker's event (a task token or none):

- **Direct** (`run_direct`, an asynchronous invoke, no state machine): the leg `claim`s the
  task (a duplicated event finds it claimed and does nothing), runs the tool, and either ends
  the task (`done`: no execution ever exists) or parks it without a token and starts its
  execution (`handed_over`).
- **In an execution** (`run`, invoked with a task token): a task waiting for input (parked by
  its direct leg) gets the token `attach`ed and the execution waits; otherwise the leg runs
  and ends in `parked` (the requests and the token are stored, move `park`; the execution
  waits, holding no compute, until `tasks/update` resumes it) or `done` (the outcome is on the
  record, or the task was cancelled, ended or is gone; the execution is told to finish).

Ordering: the outcome is written to the record *before* the execution is told, and a direct
leg parks *before* it starts the execution; if the worker dies in between, the reconciler
(`tasks.reconcile`) finds a terminal task (its `lose` move is refused: nothing changes), or a
task its direct leg still holds (`lose_direct` fails it).

Failures: a tool exception or `isError` result is `completed` (see `tools.invoke`); protocol
faults raised by the tool (`McpError`, an answer of the wrong shape, a capability the client
lacks) end `failed` with that JSON-RPC error. Lambda timeouts and crashes surface as failed
executions or failed direct invokes, which the reconciler settles (`tasks.reconcile`). A leg may
run at most the worker function's timeout, on either path.
"""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Callable
from typing import Any, Final, Literal, NamedTuple, TypeVar

from mcp_tasks_aws.protocol.errors import INTERNAL_ERROR, INVALID_PARAMS, McpError, to_error_object
from mcp_tasks_aws.protocol.jsonrpc import MAX_RESULT_BYTES, encoded_size
from mcp_tasks_aws.tasks import transitions
from mcp_tasks_aws.tasks.exceptions import TaskCancelled, TaskTooLarge
from mcp_tasks_aws.tasks.model import TaskRecord, now_ms
from mcp_tasks_aws.tasks.ports import ResultStore, Runner, TaskStore
from mcp_tasks_aws.tools.context import ToolContext, capabilities_from_json
from mcp_tasks_aws.tools.invoke import run_tool
from mcp_tasks_aws.tools.journal import InputNeeded
from mcp_tasks_aws.tools.registry import ToolSet, text_result

logger = logging.getLogger(__name__)
END_RETRY_DELAYS_S: Final = (0.2, 0.8, 3.2)
"""Backoff between tries of the write that records a leg's outcome (4 tries in all)."""

ITEM_RESULT_BUDGET: Final = 350_000
"""Results larger than this (bytes of JSON) go to the result store; DynamoDB items cap at 400 KB.
The store may say there is less room on a given record (`result_room`): large arguments and
answers take their share of the item."""

LegOutcome = Literal["parked", "done", "handed_over"]


class _Over(NamedTuple):
    """How a leg that did not park ended: `refused` if its write was refused (the task ended
    elsewhere, or another copy of the leg moved it on), else it wrote the task's end."""

    refused: bool


_T = TypeVar("_T")


_ATTACH_ROUNDS: Final = 100
"""Attach attempts per leg: each refusal means an answer removed a key (or the task ended)."""


def _error(code: int, message: str) -> dict[str, Any]:
    return {"code": code, "message": message}


class Reporter:
    """`ctx.report` for a task: throttled status-message writes that notice cancellation."""

    def __init__(
        self,
        store: TaskStore,
        record: TaskRecord,
        clock: Callable[[], int],
        min_interval_ms: int,
    ) -> None:
        self._store = store
        self._record = record
        self._clock = clock
        self._min_interval_ms = min_interval_ms
        self._last_write = -min_interval_ms

    def __call__(self, message: str) -> None:
        now = self._clock()
        if now - self._last_write < self._min_interval_ms:
            return
        self._last_write = now
        guard, changes = transitions.report(self._record.leg, message[:1000], now)
        outcome = self._store.apply(self._record.task_id, guard, changes)
        if outcome is None or not outcome.changed:
            # Cancelled, ended, or this leg no longer owns the task: stop the tool here.
            raise TaskCancelled()


class LegRunner:
    """Runs legs of tasks for one ToolSet."""

    def __init__(
        self,
        store: TaskStore,
        runner: Runner,
        toolset: ToolSet,
        *,
        results: ResultStore | None = None,
        clock: Callable[[], int] = now_ms,
        report_interval_ms: int = 1000,
        result_budget: int = ITEM_RESULT_BUDGET,
        result_room: Callable[[TaskRecord], int] | None = None,
        list_changed: Callable[[str], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.sleep = sleep
        self.store = store
        self.runner = runner
        self.toolset = toolset
        self.results = results
        self.clock = clock
        self.report_interval_ms = report_interval_ms
        self.result_budget = result_budget
        self.result_room = result_room
        self.list_changed = list_changed

    def run(self, task_id: str, task_token: str) -> LegOutcome:
        """Run the next leg of `task_id` in its execution; returns `parked` or `done`.

        Two copies of one leg may run at once: Step Functions retries RunLeg's invoke when its
        answer was lost (a Lambda service fault), while the first copy may still be running,
        and each copy has a token of its own; only the latest one's is live. Their writes are
        fenced by the leg, so one parks or ends the task and the other is refused. A copy
        refused so must not end the execution (the task lives on), nor leave the task waiting
        on a dead token: the copy whose token is live takes the task (`attach`, replacing the
        token the other parked with), and a copy whose token is dead leaves everything alone.
        Whether a token is live is asked (`Runner.is_waiting`) only when another copy's token
        is found, or this copy's write was refused.
        """
        record = self._again(lambda: self.store.get(task_id), task_id, "reading it")
        live: bool | None = None
        for _ in range(_ATTACH_ROUNDS):
            if record is None or record.is_terminal:
                self.runner.end_leg(task_token)
                return "done"
            if record.status == "input_required" and record.input_requests:
                # Waiting for input, nothing to run: the direct leg parked the task, or
                # another copy of this leg did. The execution holds it from now on, with this
                # copy's token if it is the live one.
                if record.task_token == task_token:
                    return "parked"  # this copy's attach (or park) landed unheard
                if record.task_token is not None:
                    live = live if live is not None else self._live(task_id, task_token)
                    if not live:
                        return "done"  # the copy with the live token holds the task
                guard, changes = transitions.attach(
                    record.leg,
                    record.input_requests,
                    task_token,
                    self.clock(),
                    replacing=record.task_token,
                )
                # Safe to repeat: an attach that landed unheard is found holding this token.
                attached = self._again(
                    functools.partial(self.store.apply, task_id, guard, changes),
                    task_id,
                    "attaching",
                )
                if attached is not None and attached.changed:
                    return "parked"
                # Refused: an answer, a cancel, an ending or another copy came first. Look
                # again: with nothing outstanding now, no token was there to resume, so the
                # leg runs here.
                record = attached.record if attached is not None else None
                continue
            ended = self._run_leg(record, task_token)
            if isinstance(ended, TaskRecord):
                return "parked"
            if not ended.refused:
                self.runner.end_leg(task_token)
                return "done"
            # Refused: the task ended elsewhere (a cancel, the reconciler), or another copy
            # of this leg moved it on. Look again: only the copy with the live token goes on.
            record = self._again(lambda: self.store.get(task_id), task_id, "reading it")
            if record is not None and not record.is_terminal:
                live = live if live is not None else self._live(task_id, task_token)
                if not live:
                    return "done"
        raise RuntimeError(f"task {task_id}: could not attach the execution's token")

    def _live(self, task_id: str, task_token: str) -> bool:
        """Whether the execution still waits on this leg's token (a read: safe to repeat)."""
        return self._again(lambda: self.runner.is_waiting(task_token), task_id, "asking it")

    def run_direct(self, task_id: str) -> LegOutcome:
        """Run the first leg of a task its direct leg holds (no execution); `done` or
        `handed_over`.

        `done` also covers a leg with nothing to do: a duplicated event, a task cancelled
        before the leg started, an unknown task.
        """
        claimed = self.store.apply(task_id, *transitions.claim(self.clock()))
        if claimed is None or not claimed.changed:
            logger.info("task %s: first leg not claimed (duplicate, cancelled or gone)", task_id)
            return "done"
        parked = self._run_leg(claimed.record, None)
        if not isinstance(parked, TaskRecord):
            return "done"
        # The tool asked for input: an execution waits for the answers, holding no compute.
        try:
            # Safe to repeat: the execution is named after the task, so a start that landed
            # unheard makes the next one ExecutionAlreadyExists, which is success.
            wait = parked.wait_seconds(self.clock())
            self._again(lambda: self.runner.start(task_id, wait), task_id, "starting it")
        except Exception:
            logger.exception("task %s: its execution could not be started", task_id)
            error = _error(INTERNAL_ERROR, "The task could not be handed over to its execution")
            self._end(parked, *transitions.fail(parked.leg, error, self.clock()))
            return "done"
        return "handed_over"

    def _run_leg(self, record: TaskRecord, task_token: str | None) -> TaskRecord | _Over:
        """Run one leg; the record as parked, or how the leg is over."""
        if record.is_expired(self.clock()):
            return _Over(
                not self._end(record, *transitions.fail(record.leg, _expired(), self.clock()))
            )
        spec = self.toolset.tools.get(record.tool)
        if spec is None:
            error = _error(INVALID_PARAMS, f"Unknown tool: {record.tool}")
            return _Over(not self._end(record, *transitions.fail(record.leg, error, self.clock())))
        ctx = ToolContext(
            capabilities=capabilities_from_json(record.capabilities),
            principal=record.owner,
            journal=record.journal,
            task_id=record.task_id,
            report=Reporter(self.store, record, self.clock, self.report_interval_ms),
            list_changed=self.list_changed,
        )
        try:
            result = run_tool(spec, record.arguments, ctx)
        except InputNeeded as need:
            # Steps done in this leg are recorded, so the replay does not redo them.
            guard, changes = transitions.park(
                record.leg, need.requests, task_token, ctx.new_steps, self.clock()
            )
            parked = self.store.apply(record.task_id, guard, changes)
            return parked.record if parked is not None and parked.changed else _Over(True)
        except TaskCancelled:
            logger.info("task %s stopped cooperatively: cancelled", record.task_id)
            return _Over(True)
        except McpError as exc:
            error, _ = to_error_object(exc)
            return _Over(not self._end(record, *transitions.fail(record.leg, error, self.clock())))
        return _Over(not self.complete(record, result))

    def complete(self, record: TaskRecord, result: dict[str, Any]) -> bool:
        """Complete the task with `result` (offloaded when over the budget); whether it landed.

        Also how a declared workflow's end records its output (`tasks.reconcile`), so a
        workflow's result takes the same budget and S3 path as a leg's."""
        size = encoded_size(result)  # what reading it back takes, not its bytes of JSON
        if size > MAX_RESULT_BYTES:
            logger.warning("task %s: result of %d bytes (encoded) refused", record.task_id, size)
            result = text_result(
                f"Tool {record.tool} returned {size / 1e6:.1f} MB (as encoded in a response); a "
                f"task result may be at most {MAX_RESULT_BYTES / 1e6:.1f} MB (return a resource "
                "link to larger data).",
                is_error=True,
            )
        body = json.dumps(result, separators=(",", ":")).encode()
        budget = self.result_budget
        if self.result_room is not None:
            budget = min(budget, self.result_room(record))
        if len(body) > budget and self.results is not None:
            return self._offload(record, body, result)
        try:
            return self._end(record, *transitions.complete(record.leg, self.clock(), result=result))
        except TaskTooLarge:
            # The estimate was wrong (the item grew meanwhile): offload after all.
            if self.results is None:
                error = _error(INTERNAL_ERROR, "The task's result is too large to keep")
                self._end(record, *transitions.fail(record.leg, error, self.clock()))
                return False
            return self._offload(record, body, result)

    def _offload(self, record: TaskRecord, body: bytes, result: dict[str, Any]) -> bool:
        assert self.results is not None
        ref = self.results.put(record.task_id, body, record.expires_at)
        tool_error = result.get("isError") is True
        moved = transitions.complete(
            record.leg, self.clock(), result_ref=ref, tool_error=tool_error
        )
        return self._end(record, *moved)

    def _again(self, call: Callable[[], _T], task_id: str, what: str) -> _T:
        """`call`, retried with backoff if it fails: only for calls safe to repeat (a read, a
        start named after the task, an attach). A leg must not fail its task for one
        transient fault after the client answered. The claim and the park are not retried:
        one that landed unheard would be refused on a retry, like a duplicate's."""
        for delay in (*END_RETRY_DELAYS_S, None):
            try:
                return call()
            except Exception:
                if delay is None:
                    raise
                logger.warning("task %s: %s failed; retrying", task_id, what)
                self.sleep(delay)
        raise AssertionError("unreachable")

    def _end(
        self, record: TaskRecord, guard: transitions.Guard, changes: transitions.Changes
    ) -> bool:
        """Write the leg's outcome, retrying a failed write with backoff; whether it landed.

        The tool has already run: losing this one write would end the task `failed` ("leg
        crashed") and lose a result that exists. A retry is safe because the move is fenced:
        if a write that seemed to fail did land, the retry finds the task ended and changes
        nothing. An outcome too large for the item is not transient and is not retried.
        """
        for delay in (*END_RETRY_DELAYS_S, None):
            try:
                outcome = self.store.apply(record.task_id, guard, changes)
                break
            except TaskTooLarge:
                raise
            except Exception:
                if delay is None:
                    raise
                logger.warning("task %s: writing its outcome failed; retrying", record.task_id)
                self.sleep(delay)
        if outcome is not None and not outcome.changed:
            # Cancelled or ended meanwhile: cancellation wins, the outcome is dropped.
            logger.info("task %s ended elsewhere; outcome dropped", record.task_id)
        return outcome is not None and outcome.changed


def _expired() -> dict[str, Any]:
    return _error(INTERNAL_ERROR, "The task expired")
