"""Running one leg of a task (the worker), and settling tasks whose execution was lost.

A leg replays the tool from the top with the task's journal of answers and ends in one of:
- `parked`: the tool asked something new; the requests and the execution's task token are
  stored (move `park`) and the execution waits, holding no compute, until `tasks/update`
  resumes it;
- `done`: the outcome is on the record (`complete`, `fail`), or the task was cancelled, ended
  or is gone; the execution is told to finish.

Ordering: the outcome is written to the record *before* the execution is told; if the worker
dies in between, the execution times out and the reconciler finds a terminal task (its `lose`
move is refused: nothing changes).

Failures: a tool exception or `isError` result is `completed` (see `tools.invoke`); protocol
faults raised by the tool (`McpError`, an answer of the wrong shape, a capability the client
lacks) end `failed` with that JSON-RPC error. Lambda timeouts and crashes surface as failed
executions, which the reconciler turns into `failed` (move `lose`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any, Final, Literal

from mcp_tasks_aws.ports import ResultStore, Runner, TaskStore
from mcp_tasks_aws.protocol.errors import INTERNAL_ERROR, INVALID_PARAMS, McpError, to_error_object
from mcp_tasks_aws.protocol.models import ClientCapabilities
from mcp_tasks_aws.tasks import transitions
from mcp_tasks_aws.tasks.exceptions import TaskCancelled, TaskTooLarge
from mcp_tasks_aws.tasks.model import TaskRecord
from mcp_tasks_aws.tools.context import InputNeeded, ToolContext
from mcp_tasks_aws.tools.invoke import run_tool
from mcp_tasks_aws.tools.registry import ToolSet, text_result

logger = logging.getLogger(__name__)

ITEM_RESULT_BUDGET: Final = 350_000
"""Results larger than this (bytes of JSON) go to the result store; DynamoDB items cap at 400 KB.
The store may say there is less room on a given record (`result_room`): large arguments and
answers take their share of the item."""

MAX_RESULT_BYTES: Final = 4_000_000
"""The largest result a task may return (bytes of JSON). Lambda answers at most 6 MB, and a
`tasks/get` carries the result as JSON inside a JSON string (escaping can grow it), so a larger
result could never be read back: the task completes with a tool error saying so instead."""

LegOutcome = Literal["parked", "done"]
Settled = Literal["failed", "unchanged"]


def _now_ms() -> int:
    return int(time.time() * 1000)


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
        clock: Callable[[], int] = _now_ms,
        report_interval_ms: int = 1000,
        result_budget: int = ITEM_RESULT_BUDGET,
        result_room: Callable[[TaskRecord], int] | None = None,
        list_changed: Callable[[str], None] | None = None,
    ) -> None:
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
        """Run the next leg of `task_id`; returns `parked` or `done`."""
        record = self.store.get(task_id)
        if record is None or record.is_terminal:
            self.runner.end_leg(task_token)
            return "done"
        outcome = self._run_leg(record, task_token)
        if outcome == "done":
            self.runner.end_leg(task_token)
        return outcome

    def _run_leg(self, record: TaskRecord, task_token: str) -> LegOutcome:
        if record.is_expired(self.clock()):
            self._end(record, *transitions.fail(record.leg, _expired(), self.clock()))
            return "done"
        spec = self.toolset.tools.get(record.tool)
        if spec is None:
            error = _error(INVALID_PARAMS, f"Unknown tool: {record.tool}")
            self._end(record, *transitions.fail(record.leg, error, self.clock()))
            return "done"
        ctx = ToolContext(
            capabilities=ClientCapabilities.model_validate(record.capabilities),
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
            return "parked" if parked is not None and parked.changed else "done"
        except TaskCancelled:
            logger.info("task %s stopped cooperatively: cancelled", record.task_id)
            return "done"
        except McpError as exc:
            error, _ = to_error_object(exc)
            self._end(record, *transitions.fail(record.leg, error, self.clock()))
            return "done"
        self._complete(record, result)
        return "done"

    def _complete(self, record: TaskRecord, result: dict[str, Any]) -> None:
        body = json.dumps(result, separators=(",", ":")).encode()
        if len(body) > MAX_RESULT_BYTES:
            logger.warning("task %s: result of %d bytes refused", record.task_id, len(body))
            result = text_result(
                f"Tool {record.tool} returned {len(body) / 1e6:.1f} MB; a task result may be at "
                f"most {MAX_RESULT_BYTES / 1e6:.1f} MB (return a resource link to larger data).",
                is_error=True,
            )
            body = json.dumps(result, separators=(",", ":")).encode()
        budget = self.result_budget
        if self.result_room is not None:
            budget = min(budget, self.result_room(record))
        if len(body) > budget and self.results is not None:
            self._offload(record, body, result)
            return
        try:
            self._end(record, *transitions.complete(record.leg, self.clock(), result=result))
        except TaskTooLarge:
            # The estimate was wrong (the item grew meanwhile): offload after all.
            if self.results is None:
                error = _error(INTERNAL_ERROR, "The task's result is too large to keep")
                self._end(record, *transitions.fail(record.leg, error, self.clock()))
                return
            self._offload(record, body, result)

    def _offload(self, record: TaskRecord, body: bytes, result: dict[str, Any]) -> None:
        assert self.results is not None
        ref = self.results.put(record.task_id, body, record.expires_at)
        tool_error = result.get("isError") is True
        moved = transitions.complete(
            record.leg, self.clock(), result_ref=ref, tool_error=tool_error
        )
        self._end(record, *moved)

    def _end(
        self, record: TaskRecord, guard: transitions.Guard, changes: transitions.Changes
    ) -> None:
        outcome = self.store.apply(record.task_id, guard, changes)
        if outcome is not None and not outcome.changed:
            # Cancelled or ended meanwhile: cancellation wins, the outcome is dropped.
            logger.info("task %s ended elsewhere; outcome dropped", record.task_id)


def _expired() -> dict[str, Any]:
    return _error(INTERNAL_ERROR, "The task expired")


def settle_lost_execution(
    store: TaskStore, task_id: str, execution_status: str, clock: Callable[[], int] = _now_ms
) -> Settled:
    """An execution FAILED, TIMED_OUT or was ABORTED: its task must not stay active.

    One guarded write: an active task fails; a terminal one (completed, failed, or cancelled,
    whose cancel is what ended the execution) is left alone. Returns what happened.
    """
    message = f"The task's execution ended without a result ({execution_status.lower()})"
    outcome = store.apply(task_id, *transitions.lose(_error(INTERNAL_ERROR, message), clock()))
    return "failed" if outcome is not None and outcome.changed else "unchanged"
