"""Running one leg of a task (the worker), and settling tasks whose execution was lost.

A leg replays the tool from the top with the task's journal of answers and ends in one of:
- `parked`: the tool asked something new; the requests and the execution's task token are
  stored and the execution waits, holding no compute, until `tasks/update` resumes it;
- `done`: the outcome is on the record (completed, failed) or the task was cancelled or is
  gone; the execution is told to finish.

Ordering: the outcome is written to the record *before* the execution is told; if the worker
dies in between, the execution times out and the reconciler finds a terminal task (no-op).

Failures: a tool exception or `isError` result is `completed` (see `tools.invoke`); protocol
faults raised by the tool (`McpError`, an answer of the wrong shape, a capability the client
lacks) end `failed` with that JSON-RPC error. Lambda timeouts and crashes surface as failed
executions, which the reconciler turns into `failed`.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

from mcp_tasks_aws.ports import ResultStore, Runner, TaskStore
from mcp_tasks_aws.protocol.errors import McpError, to_error_object
from mcp_tasks_aws.protocol.models import ClientCapabilities
from mcp_tasks_aws.tasks.exceptions import TaskCancelled, TaskNoLongerActive
from mcp_tasks_aws.tasks.model import TERMINAL, TaskRecord
from mcp_tasks_aws.tools.context import InputNeeded, ToolContext
from mcp_tasks_aws.tools.invoke import run_tool
from mcp_tasks_aws.tools.registry import ToolSet

logger = logging.getLogger(__name__)

ITEM_RESULT_BUDGET = 350_000
"""Results larger than this (bytes of JSON) go to the result store; DynamoDB items cap at 400 KB."""


def _now_ms() -> int:
    return int(time.time() * 1000)


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
        try:
            self._store.set_status_message(
                self._record.task_id, self._record.leg, message[:1000], now
            )
        except TaskNoLongerActive:
            raise TaskCancelled() from None


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
        list_changed: Callable[[str], None] | None = None,
    ) -> None:
        self.list_changed = list_changed
        self.store = store
        self.runner = runner
        self.toolset = toolset
        self.results = results
        self.clock = clock
        self.report_interval_ms = report_interval_ms
        self.result_budget = result_budget

    def run(self, task_id: str, task_token: str) -> str:
        """Run the next leg of `task_id`; returns `parked` or `done`."""
        record = self.store.get(task_id)
        if record is None or record.status in TERMINAL or record.cancel_requested:
            self.runner.end_leg(task_token)
            return "done"
        outcome = self._run_leg(record, task_token)
        if outcome == "done":
            self.runner.end_leg(task_token)
        return outcome

    def _run_leg(self, record: TaskRecord, task_token: str) -> str:
        now = self.clock()
        if record.is_expired(now):
            self._finish(record, status="failed", error=_error(-32603, "The task expired"))
            return "done"
        spec = self.toolset.tools.get(record.tool)
        if spec is None:
            self._finish(
                record, status="failed", error=_error(-32602, f"Unknown tool: {record.tool}")
            )
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
            try:
                self.store.park(
                    record.task_id,
                    record.leg,
                    need.requests,
                    task_token,
                    self.clock(),
                    steps=ctx.new_steps,  # side effects done in this leg are not redone
                )
            except TaskNoLongerActive:
                return "done"
            return "parked"
        except TaskCancelled:
            logger.info("task %s stopped cooperatively: cancelled", record.task_id)
            return "done"
        except McpError as exc:
            error, _ = to_error_object(exc)
            self._finish(record, status="failed", error=error, message=exc.message)
            return "done"
        self._complete(record, result)
        return "done"

    def _complete(self, record: TaskRecord, result: dict[str, Any]) -> None:
        body = json.dumps(result, separators=(",", ":")).encode()
        if len(body) > self.result_budget and self.results is not None:
            ref = self.results.put(record.task_id, body)
            self._finish(record, status="completed", result_ref=ref)
        else:
            self._finish(record, status="completed", result=result)

    def _finish(self, record: TaskRecord, **outcome: Any) -> None:
        try:
            self.store.finish(record.task_id, record.leg, now_ms=self.clock(), **outcome)
        except TaskNoLongerActive:
            # Cancelled or ended meanwhile: cancellation wins, the outcome is dropped.
            logger.info("task %s ended elsewhere; outcome dropped", record.task_id)


def settle_lost_execution(
    store: TaskStore, task_id: str, execution_status: str, clock: Callable[[], int] = _now_ms
) -> str:
    """An execution FAILED, TIMED_OUT or was ABORTED: its task must not stay active.

    Returns what happened: `failed`, `cancelled`, or `unchanged` (already terminal or gone).
    """
    error = _error(
        -32603,
        f"The task's execution ended without a result ({execution_status.lower()})",
    )
    before = store.settle_lost(task_id, error, clock())
    if before is None:
        return "unchanged"
    return "cancelled" if before.cancel_requested else "failed"


def _error(code: int, message: str) -> dict[str, Any]:
    return {"code": code, "message": message}
