"""The API side of durable tasks: create on `tools/call`, and `tasks/get|update|cancel`.

Each operation is a few port primitives, in an order chosen so a crash between two of them
leaves a task that still answers and still ends:

- create: conditional put, then start. A `CreateTaskResult` is returned only after both; if the
  start fails the task is marked failed before the error is answered.
- update: one conditional write records the answers; if nothing is outstanding after it, the
  execution is resumed with the stored token (a stale token is ignored: someone else resumed).
- cancel: the durable cancel marker is written first, then the execution is interrupted
  (waiting for input) or stopped (working). A late worker outcome cannot overwrite it.

Unknown, foreign and expired tasks all answer -32602; foreign ones exactly like unknown ones.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable
from typing import Any

from mcp_tasks_aws.ports import Runner, TaskStore
from mcp_tasks_aws.protocol import models as m
from mcp_tasks_aws.protocol.errors import InternalError, InvalidParams, MissingClientCapability
from mcp_tasks_aws.server import Call
from mcp_tasks_aws.tasks.exceptions import (
    TaskAlreadyExists,
    TaskNotFound,
    TaskNotWaiting,
)
from mcp_tasks_aws.tasks.model import TaskRecord, new_task_id
from mcp_tasks_aws.tools.registry import ToolSpec

logger = logging.getLogger(__name__)

_MAX_RESPONSE_KEYS = 64
_MAX_RESPONSES_BYTES = 128 * 1024
_MAX_ARGUMENTS_BYTES = 256 * 1024
_REQUIRED_BY_METHOD = (("action",), ("role", "content"), ("roots",))
_TASK_ID = re.compile(r"[0-9a-f]{32}")  # what new_task_id mints; anything else is unknown


def _now_ms() -> int:
    return int(time.time() * 1000)


def _looks_like_answer(value: Any) -> bool:
    """Whether a response could answer some input request (elicit, sample or roots result)."""
    return isinstance(value, dict) and any(
        all(field in value for field in fields) for fields in _REQUIRED_BY_METHOD
    )


class TaskService:
    """Serves the Tasks extension from a TaskStore and a Runner."""

    def __init__(
        self,
        store: TaskStore,
        runner: Runner,
        *,
        default_ttl_ms: int | None = 24 * 3600 * 1000,
        default_poll_interval_ms: int = 1000,
        resolve_result: Callable[[TaskRecord], dict[str, Any] | None] | None = None,
        clock: Callable[[], int] = _now_ms,
    ) -> None:
        self.store = store
        self.runner = runner
        self.default_ttl_ms = default_ttl_ms
        self.default_poll_interval_ms = default_poll_interval_ms
        self.resolve_result = resolve_result
        self.clock = clock

    def methods(self) -> dict[str, tuple[type[m.RequestParams], Callable[[Call, Any], Any]]]:
        return {
            "tasks/get": (m.TaskParams, self.get),
            "tasks/update": (m.UpdateTaskParams, self.update),
            "tasks/cancel": (m.TaskParams, self.cancel),
        }

    # -- tools/call -> task -------------------------------------------------------------------

    def create(
        self,
        call: Call,
        spec: ToolSpec,
        params: m.CallToolParams,
        journal: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        arguments = params.arguments or {}
        if len(json.dumps(arguments)) > _MAX_ARGUMENTS_BYTES:
            raise InvalidParams("Arguments are too large to run as a task")
        now = self.clock()
        record = TaskRecord(
            task_id=new_task_id(),
            owner=call.principal,
            tool=spec.name,
            arguments=arguments,
            capabilities=call.capabilities.model_dump(mode="json", exclude_none=True),
            status="working",
            created_at=now,
            updated_at=now,
            ttl_ms=spec.ttl_ms if spec.ttl_ms is not None else self.default_ttl_ms,
            poll_interval_ms=spec.poll_interval_ms or self.default_poll_interval_ms,
            answers=dict(journal or {}),
            asked_keys=frozenset(journal or {}),
        )
        try:
            self.store.put_new(record)
        except TaskAlreadyExists as exc:  # 144 random bits: a collision means a broken RNG
            raise InternalError("Could not create the task") from exc
        try:
            self.runner.start(record.task_id, record.wait_seconds(now))
        except Exception as exc:
            # The record exists and a get must resolve: end it rather than leave it working.
            self.store.finish(
                record.task_id,
                record.leg,
                status="failed",
                now_ms=self.clock(),
                error={"code": -32603, "message": "The task could not be started"},
            )
            raise InternalError("The task could not be started") from exc
        return {"resultType": "task", **record.header()}

    # -- tasks/* ------------------------------------------------------------------------------

    @staticmethod
    def _require_opt_in(call: Call) -> None:
        if not call.capabilities.tasks:
            raise MissingClientCapability({"extensions": {m.TASKS_EXTENSION: {}}})

    def _check_id(self, task_id: str) -> None:
        if not _TASK_ID.fullmatch(task_id):
            raise _not_found(TaskNotFound())

    def _load(self, call: Call, task_id: str) -> TaskRecord:
        self._check_id(task_id)
        record = self.store.get(task_id)
        if record is None or record.owner != call.principal:
            raise _not_found(TaskNotFound())
        if record.is_expired(self.clock()):
            raise _not_found(TaskNotFound(expired=True))
        return record

    def detailed(self, record: TaskRecord) -> dict[str, Any]:
        """The DetailedTask of a record, with an offloaded result read back."""
        result = None
        if record.visible_status == "completed" and self.resolve_result is not None:
            result = self.resolve_result(record)
        return record.to_wire(result)

    def get(self, call: Call, params: m.TaskParams) -> dict[str, Any]:
        self._require_opt_in(call)
        return {"resultType": "complete", **self.detailed(self._load(call, params.task_id))}

    def live_records(self, owner: str, task_ids: list[str]) -> dict[str, TaskRecord]:
        """The caller's live tasks among `task_ids` (one consistent batch read)."""
        wanted = [task_id for task_id in task_ids if _TASK_ID.fullmatch(task_id)]
        now = self.clock()
        return {
            task_id: record
            for task_id, record in self.store.get_many(wanted).items()
            if record.owner == owner and not record.is_expired(now)
        }

    def update(self, call: Call, params: m.UpdateTaskParams) -> dict[str, Any]:
        self._require_opt_in(call)
        self._check_id(params.task_id)
        responses = params.input_responses
        if len(responses) > _MAX_RESPONSE_KEYS:
            raise InvalidParams(f"At most {_MAX_RESPONSE_KEYS} input responses per update")
        if len(json.dumps(responses)) > _MAX_RESPONSES_BYTES:
            raise InvalidParams("Input responses are too large")
        # Values that cannot answer any request are ignored like unknown keys.
        answers = {
            k: v for k, v in responses.items() if 0 < len(k) <= 128 and _looks_like_answer(v)
        }
        if not answers:
            self._load(call, params.task_id)  # still -32602 for unknown or foreign tasks
            return {"resultType": "complete"}
        now = self.clock()
        try:
            after = self.store.record_answers(params.task_id, call.principal, answers, now)
        except TaskNotFound as exc:
            raise _not_found(exc) from exc
        except TaskNotWaiting as exc:
            if exc.record.is_expired(now):
                raise _not_found(TaskNotFound(expired=True)) from exc
            return {"resultType": "complete"}  # stale or duplicate: acknowledged, ignored
        if after.is_expired(now):
            raise _not_found(TaskNotFound(expired=True))
        if not after.input_requests and after.task_token:
            # Every outstanding request is answered: resume. Two updates racing here may both
            # resume; the second token use fails and is ignored.
            self.runner.resume(after.task_token, after.wait_seconds(now))
        return {"resultType": "complete"}

    def cancel(self, call: Call, params: m.TaskParams) -> dict[str, Any]:
        self._require_opt_in(call)
        self._check_id(params.task_id)
        now = self.clock()
        try:
            before = self.store.request_cancel(params.task_id, call.principal, now)
        except TaskNotFound as exc:
            raise _not_found(exc) from exc
        except TaskNotWaiting as exc:
            if exc.record.is_expired(now):
                raise _not_found(TaskNotFound(expired=True)) from exc
            if exc.record.status == "cancelled":
                # A retried cancel: the earlier one may have failed after its marker was
                # written, leaving the execution running or parked. Release it again.
                self._release_execution(exc.record)
            return {"resultType": "complete"}  # already terminal: acknowledged
        if before.is_expired(now):
            raise _not_found(TaskNotFound(expired=True))
        # The cancel marker is durable now; what follows only saves compute.
        self._release_execution(before)
        return {"resultType": "complete"}

    def _release_execution(self, record: TaskRecord) -> None:
        """End a cancelled task's execution: fail its wait for input, or stop it.

        The task is already cancelled for good; failing here only leaves compute running
        (a working leg notices at its next report, a parked one waits out its TTL), so it is
        logged, not answered as an error. A retried cancel tries again.
        """
        try:
            waiting = bool(record.input_requests) and record.task_token is not None
            if waiting and record.task_token and self.runner.interrupt(record.task_token):
                return
            self.runner.stop(record.task_id)
        except Exception:
            logger.warning(
                "task %s is cancelled but its execution was not released",
                record.task_id,
                exc_info=True,
            )


def _not_found(exc: TaskNotFound) -> InvalidParams:
    if exc.expired:
        return InvalidParams("Failed to retrieve task: Task has expired")
    return InvalidParams("Failed to retrieve task: Task not found")
