"""The typed results of the Tasks extension, and the one place they are serialized.

Snake_case attributes with camelCase aliases, absent fields left out (but `ttlMs`, which the
schema requires even when null). `server.tasks` imports this module on the first task request,
not at cold start: defining the models costs a few milliseconds no inline request needs.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final, Literal

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer
from pydantic.alias_generators import to_camel

from mcp_tasks_aws.protocol.names import TaskStatus


class WireResult(BaseModel):
    """Base of the results this module sends: camelCase, absent fields left out."""

    always_present: ClassVar[frozenset[str]] = frozenset({"ttlMs"})
    """Fields the schema requires even when null (an unlimited task's `ttlMs`)."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,  # built here from snake_case names, never parsed from the wire
        serialize_by_alias=True,
        frozen=True,
        defer_build=True,
    )

    @model_serializer(mode="wrap")
    def _without_absent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {k: v for k, v in data.items() if v is not None or k in self.always_present}


class TaskFields(WireResult):
    """The fields every task shape carries (the extension's `Task`)."""

    task_id: str
    status: TaskStatus
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None


class CreateTaskResult(TaskFields):
    result_type: Literal["task"] = "task"


class DetailedTask(TaskFields):
    """A task with what its status carries: requests, result or error."""

    input_requests: dict[str, dict[str, Any]] | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class GetTaskResult(DetailedTask):
    result_type: Literal["complete"] = "complete"


class Acknowledged(WireResult):
    """The empty result of `tasks/update` and `tasks/cancel`."""

    result_type: Literal["complete"] = "complete"


def to_wire(result: WireResult) -> dict[str, Any]:
    """The JSON object of a result (the one place results are serialized)."""
    return result.model_dump(mode="json")


ACKNOWLEDGED: Final = to_wire(Acknowledged())
"""What `tasks/update` and `tasks/cancel` answer."""
