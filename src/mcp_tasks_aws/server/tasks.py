"""The Tasks extension on the wire: `tools/call` → task, and `tasks/get|update|cancel`.

The only task module that knows the protocol's shapes. It checks what the protocol requires
(the per-request opt-in), calls the use cases of `tasks.service` with the caller's principal,
and turns their domain values and errors into wire results through the typed models of
`server.task_results`, serialized in one place (`task_results.to_wire`). Those are imported on
the first task request, not at cold start: defining them costs milliseconds no inline request
needs.

Errors: `task_error` is the one mapping from domain failures to JSON-RPC errors, for both
eras (the 2025-11-25 methods pass their era for its wording): unknown, foreign and expired
tasks are -32602 (foreign exactly like unknown), a backend still throttling is 503 with
Retry-After, an answer of the wrong shape is -32602 naming the key. A `tasks/*` request without
the extension declared is -32021.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Final, NamedTuple

from mcp_tasks_aws.protocol import models as m
from mcp_tasks_aws.protocol.era import Era
from mcp_tasks_aws.protocol.errors import (
    INTERNAL_ERROR,
    InternalError,
    InvalidParams,
    McpError,
    MissingClientCapability,
    ServiceUnavailable,
)
from mcp_tasks_aws.protocol.names import TASKS_EXTENSION, format_timestamp
from mcp_tasks_aws.server.call import Call
from mcp_tasks_aws.tasks.exceptions import (
    TaskAlreadyExists,
    TaskAnswerInvalid,
    TaskArgumentsTooLarge,
    TaskCallTooLarge,
    TaskNotFound,
    TaskNotStarted,
    TaskTooLarge,
)
from mcp_tasks_aws.tasks.model import TaskRecord
from mcp_tasks_aws.tasks.ports import Throttled
from mcp_tasks_aws.tasks.service import TaskService, TaskView
from mcp_tasks_aws.tools.registry import ToolSpec

MAX_RESPONSE_KEYS: Final = 64
MAX_RESPONSES_BYTES: Final = 128 * 1024


def _fields(record: TaskRecord) -> dict[str, Any]:
    return {
        "task_id": record.task_id,
        "status": record.visible_status,
        "status_message": record.status_message or None,
        "created_at": format_timestamp(record.created_at),
        "last_updated_at": format_timestamp(record.updated_at),
        "ttl_ms": record.ttl_ms,
        "poll_interval_ms": record.poll_interval_ms,
    }


def detailed_fields(view: TaskView) -> dict[str, Any]:
    """What a DetailedTask holds for a view, by status (as keyword arguments)."""
    record = view.record
    fields = {**_fields(record), "poll_interval_ms": view.poll_interval_ms}
    status = fields["status"]
    if status == "input_required":
        fields["input_requests"] = record.input_requests
    elif status == "completed" and not view.result_withheld:
        # The result is a 2026-07-28 CallToolResult, whose schema requires resultType (strict
        # clients such as the TypeScript Tasks client reject one without it). A result the
        # view withheld (a listen window out of room) is left out, never shown as empty.
        fields["result"] = {"resultType": "complete", **(view.result or {"content": []})}
    elif status == "failed":
        fields["error"] = record.error or {"code": INTERNAL_ERROR, "message": "Task failed"}
    return fields


def detailed_task(view: TaskView) -> dict[str, Any]:
    """The task as `tasks/get` shows it, less `resultType` (what notifications carry)."""
    from mcp_tasks_aws.server.task_results import DetailedTask, to_wire  # first use, not cold start

    return to_wire(DetailedTask(**detailed_fields(view)))


def require_opt_in(call: Call) -> None:
    if not call.capabilities.tasks:
        raise MissingClientCapability({"extensions": {TASKS_EXTENSION: {}}})


class TasksEndpoint:
    """Serves the Tasks extension for the MCP server (its `TaskBackend`).

    A backend still throttling after the SDK's retries is answered 503 with Retry-After on
    every method; a task whose start was throttled is failed before that answer.
    """

    def __init__(self, service: TaskService) -> None:
        self.service = service

    def methods(self) -> dict[str, tuple[type[m.RequestParams], Callable[[Call, Any], Any]]]:
        return {
            "tasks/get": (m.TaskParams, self.get),
            "tasks/update": (m.UpdateTaskParams, self.update),
            "tasks/cancel": (m.TaskParams, self.cancel),
        }

    def create(
        self,
        call: Call,
        spec: ToolSpec,
        params: m.CallToolParams,
        journal: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        record = create_task(self.service, call, spec, params, journal)
        from mcp_tasks_aws.server.task_results import CreateTaskResult, to_wire  # first use only

        return to_wire(CreateTaskResult(**_fields(record)))

    def get(self, call: Call, params: m.TaskParams) -> dict[str, Any]:
        require_opt_in(call)
        with answered_as_errors():
            view = self.service.get(call.principal, params.task_id)
        from mcp_tasks_aws.server.task_results import GetTaskResult, to_wire

        return to_wire(GetTaskResult(**detailed_fields(view)))

    def update(self, call: Call, params: m.UpdateTaskParams) -> dict[str, Any]:
        require_opt_in(call)
        responses = params.input_responses
        if len(responses) > MAX_RESPONSE_KEYS:
            raise InvalidParams(f"At most {MAX_RESPONSE_KEYS} input responses per update")
        if len(json.dumps(responses)) > MAX_RESPONSES_BYTES:
            raise InvalidParams("Input responses are too large")
        with answered_as_errors():
            self.service.update(call.principal, params.task_id, responses)
        return _acknowledged()

    def cancel(self, call: Call, params: m.TaskParams) -> dict[str, Any]:
        require_opt_in(call)
        with answered_as_errors():
            self.service.cancel(call.principal, params.task_id)
        return _acknowledged()


def _acknowledged() -> dict[str, Any]:
    from mcp_tasks_aws.server.task_results import ACKNOWLEDGED

    return dict(ACKNOWLEDGED)


class Wording(NamedTuple):
    """What differs between the eras' messages for the same domain error."""

    answer_invalid: str
    """A `tasks/update` (or 2025-11-25 answer) of the wrong shape; formatted with key, method."""
    answers_too_large: str
    """Answers the task record has no room left for."""
    call_too_large: str
    """A call whose arguments (with its capabilities and inline answers) no task record holds."""
    content_invalid: str
    """An accepted form whose content does not fit its schema; formatted with key, detail."""


WORDING: Final = {
    Era.MODERN: Wording(
        answer_invalid="Input response {key!r} does not answer its request: expected the "
        "result of {method}; nothing was recorded",
        answers_too_large="These input responses do not fit with the task: send smaller answers",
        call_too_large="The call is too large to run as a task: its arguments, client "
        "capabilities and input responses do not fit in one task; send smaller arguments",
        content_invalid="Input response {key!r} does not answer its request: {detail}; "
        "nothing was recorded",
    ),
    Era.LEGACY: Wording(
        answer_invalid="The answer does not fit its request: expected the result of {method}",
        answers_too_large="The answer does not fit with the task: send a smaller one",
        call_too_large="The call is too large to run as a task: its arguments and client "
        "capabilities do not fit in one task; send smaller arguments",
        content_invalid="The answer to {key!r} does not fit its form: {detail}; nothing was "
        "recorded",
    ),
}


def _not_found(exc: TaskNotFound, words: Wording) -> McpError:
    # Unknown, expired and foreign tasks answer alike (a foreign task is never confirmed).
    if exc.expired:
        return InvalidParams("Failed to retrieve task: Task has expired")
    return InvalidParams("Failed to retrieve task: Task not found")


def _answer_invalid(exc: TaskAnswerInvalid, words: Wording) -> McpError:
    if exc.detail is not None:
        return InvalidParams(words.content_invalid.format(key=exc.key, detail=exc.detail))
    return InvalidParams(words.answer_invalid.format(key=exc.key, method=exc.method))


def _not_started(exc: TaskNotStarted, words: Wording) -> McpError:
    if isinstance(exc.__cause__, Throttled):  # the start was throttled: busy, try again
        return ServiceUnavailable(exc.__cause__.retry_after_s)
    return InternalError("The task could not be started")


_ERRORS: Final[tuple[tuple[type[Exception], Callable[[Any, Wording], McpError]], ...]] = (
    (TaskNotFound, _not_found),
    (Throttled, lambda exc, words: ServiceUnavailable(exc.retry_after_s)),
    (TaskNotStarted, _not_started),
    (TaskAnswerInvalid, lambda exc, words: _answer_invalid(exc, words)),
    (TaskCallTooLarge, lambda exc, words: InvalidParams(words.call_too_large)),
    (TaskTooLarge, lambda exc, words: InvalidParams(words.answers_too_large)),
    (
        TaskArgumentsTooLarge,
        lambda exc, words: InvalidParams("Arguments are too large to run as a task"),
    ),
    (TaskAlreadyExists, lambda exc, words: InternalError("Could not create the task")),
)
"""The one mapping from task-domain failures to JSON-RPC errors, for both eras."""


def task_error(exc: Exception, era: Era = Era.MODERN) -> McpError | None:
    """The JSON-RPC error a task-domain failure answers in `era` (None: not a domain error)."""
    for kind, build in _ERRORS:
        if isinstance(exc, kind):
            return build(exc, WORDING[era])
    return None


@contextmanager
def answered_as_errors(era: Era = Era.MODERN) -> Iterator[None]:
    """Domain failures raised inside answer as their JSON-RPC errors (`task_error`)."""
    try:
        yield
    except McpError:
        raise
    except Exception as exc:
        error = task_error(exc, era)
        if error is None:
            raise
        raise error from exc


def create_task(
    service: TaskService,
    call: Call,
    spec: ToolSpec,
    params: m.CallToolParams,
    journal: dict[str, Any] | None = None,
    *,
    ttl_ms: int | None = None,
    capabilities: dict[str, Any] | None = None,
) -> TaskRecord:
    """Create and start the task of `call` (either era), its failures as JSON-RPC errors.

    `ttl_ms` is a 2025-11-25 client's asked retention (None: the server's default);
    `capabilities` what the task's tool may ask (None: what the call declared).
    """
    if capabilities is None:
        capabilities = call.capabilities.model_dump(mode="json", exclude_none=True)
    with answered_as_errors(call.era):
        return service.create(
            call.principal, spec, params.arguments or {}, capabilities, journal, ttl_ms=ttl_ms
        )
