"""Wire shapes of the Tasks extension (`io.modelcontextprotocol/tasks`) for the SDK client.

This module owns the pydantic models the client sends and parses for tasks: the claimed
`CreateTaskResult` (`resultType: "task"`), the `tasks/get` snapshot (a `DetailedTask`), the
empty acknowledgements of `tasks/update` / `tasks/cancel`, and the three request models.

The request models set `name_param = "taskId"`: the SDK's `ClientSession.send_request` mirrors
that param into the `Mcp-Name` header (the spec's routing requirement for `tasks/*`), and the
session's 2026-07-28 stamp adds `Mcp-Method`, `MCP-Protocol-Version` and the per-request
capabilities (which carry the extension's identifier) to every request.

`mcp_types` ships only the 2025-11-25 task shapes (a nested `task`, `ttl`, `pollInterval`),
which differ from this extension's flat ones; hence these models.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from mcp_types import (
    CallToolResult,
    ErrorData,
    InputRequest,
    Request,
    RequestParams,
    Result,
)
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel

from mcp_tasks_aws.protocol.errors import INTERNAL_ERROR

# The vocabulary both sides share (the extension id, statuses, timestamps).
from mcp_tasks_aws.protocol.names import TASKS_EXTENSION as TASKS_EXTENSION
from mcp_tasks_aws.protocol.names import TERMINAL_STATUSES as TERMINAL_STATUSES
from mcp_tasks_aws.protocol.names import TaskStatus as TaskStatus
from mcp_tasks_aws.protocol.names import parse_timestamp

__all__ = [
    "TASKS_EXTENSION",
    "TERMINAL_STATUSES",
    "CancelTaskRequest",
    "CreateTaskResult",
    "GetTaskRequest",
    "TaskAck",
    "TaskFields",
    "TaskIdParams",
    "TaskSnapshot",
    "TaskStatus",
    "UpdateTaskParams",
    "UpdateTaskRequest",
    "parse_input_request",
]


_INPUT_REQUEST: TypeAdapter[InputRequest] = TypeAdapter(InputRequest)


class TaskFields(BaseModel):
    """The fields every task shape carries (the spec's `Task`)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    task_id: str
    status: TaskStatus
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    def created_at_datetime(self) -> datetime | None:
        """`createdAt` parsed (ISO 8601), or None when the server sent something else."""
        return parse_timestamp(self.created_at)


class CreateTaskResult(Result, TaskFields):
    """What a server answers to `tools/call` when it runs the call as a task."""

    result_type: Literal["task"] = "task"


class TaskSnapshot(Result, TaskFields):
    """A `tasks/get` result: the task with its status-specific payload inlined."""

    result_type: str | None = "complete"
    input_requests: dict[str, dict[str, Any]] | None = None
    """Outstanding requests (status `input_required`), kept raw: see `parse_input_request`."""
    result: dict[str, Any] | None = None
    """The final result (status `completed`): a `CallToolResult` for a tool call."""
    error: dict[str, Any] | None = None
    """The JSON-RPC error (status `failed`)."""

    @property
    def payload_missing(self) -> bool:
        """Whether the payload its status carries (`inputRequests`, `result`, `error`) is
        absent: a notification may be a plain `Task` (a server bounds the bytes of a listen
        window), and `tasks/get` has what it left out."""
        payload = {
            "input_required": self.input_requests,
            "completed": self.result,
            "failed": self.error,
        }
        return self.status in payload and payload[self.status] is None

    def call_tool_result(self) -> CallToolResult:
        """The completed task's result as a `CallToolResult` (raises if it is not one)."""
        if self.status != "completed" or self.result is None:
            raise ValueError(f"task {self.task_id} has no result (status {self.status})")
        return CallToolResult.model_validate(self.result, by_name=False)

    def error_data(self) -> ErrorData:
        """The failed task's JSON-RPC error; a generic one when the server sent none or junk."""
        try:
            return ErrorData.model_validate(self.error or {})
        except ValidationError:
            message = self.status_message or "The task failed without an error object"
            return ErrorData(code=INTERNAL_ERROR, message=message, data=self.error)


def parse_input_request(raw: dict[str, Any]) -> InputRequest | None:
    """One entry of `inputRequests` as the SDK's typed request, or None if it is not one."""
    try:
        return _INPUT_REQUEST.validate_python(raw, by_name=False)
    except ValidationError:
        return None


class TaskAck(Result):
    """The empty acknowledgement of `tasks/update` and `tasks/cancel`."""

    result_type: str | None = None


class TaskIdParams(RequestParams):
    task_id: str


class UpdateTaskParams(RequestParams):
    task_id: str
    input_responses: dict[str, dict[str, Any]]


class GetTaskRequest(Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskIdParams
    name_param = "taskId"


class UpdateTaskRequest(Request[UpdateTaskParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: UpdateTaskParams
    name_param = "taskId"


class CancelTaskRequest(Request[TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskIdParams
    name_param = "taskId"
