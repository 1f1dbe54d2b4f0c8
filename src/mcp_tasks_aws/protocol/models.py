"""Wire models for what clients send: the per-request envelope and each method's params.

Attributes are snake_case with camelCase aliases; validation accepts wire names only, and
unknown fields are kept (the protocol lets clients add fields we do not know). Results are
built by the methods as plain JSON objects and checked against the published schema in the
contract tests.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

# The envelope's names, re-exported: server code reads them as `models.TASKS_EXTENSION`.
from mcp_tasks_aws.protocol.names import CLIENT_CAPABILITIES_KEY as CLIENT_CAPABILITIES_KEY
from mcp_tasks_aws.protocol.names import CLIENT_INFO_KEY as CLIENT_INFO_KEY
from mcp_tasks_aws.protocol.names import LOG_LEVEL_KEY as LOG_LEVEL_KEY
from mcp_tasks_aws.protocol.names import PROTOCOL_VERSION_KEY as PROTOCOL_VERSION_KEY
from mcp_tasks_aws.protocol.names import SERVER_INFO_KEY as SERVER_INFO_KEY
from mcp_tasks_aws.protocol.names import TASKS_EXTENSION as TASKS_EXTENSION

LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]


class WireModel(BaseModel):
    """Base for inbound wire models: camelCase on the wire, extra fields tolerated."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=False,
        validate_by_alias=True,
        extra="allow",
        frozen=True,
        # Validators are built on first use: a cold start pays only for the models it touches.
        defer_build=True,
    )


class Implementation(WireModel):
    name: str
    version: str


MAX_CAPABILITIES_CHARS = 4096
"""The most a request's client capabilities may take, in characters of compact JSON (either
era: the 2025-11-25 `initialize` and every 2026-07-28 `_meta`). A task keeps them on its item,
next to arguments and answers, so they must not eat the item's 400 KB; real clients declare a
few hundred characters."""


def capabilities_chars(capabilities: Any) -> int:
    """Characters of compact JSON the declared capabilities take (as a task record keeps them)."""
    return len(json.dumps(capabilities, separators=(",", ":")))


class ClientCapabilities(WireModel):
    """What the client can do, declared on each request (never remembered between requests)."""

    elicitation: dict[str, Any] | None = None
    sampling: dict[str, Any] | None = None
    roots: dict[str, Any] | None = None
    extensions: dict[str, dict[str, Any]] | None = None
    experimental: dict[str, Any] | None = None

    def has_extension(self, name: str) -> bool:
        return self.extensions is not None and isinstance(self.extensions.get(name), dict)

    @property
    def tasks(self) -> bool:
        """True when the request opted in to the Tasks extension."""
        return self.has_extension(TASKS_EXTENSION)


class RequestMeta(WireModel):
    """`params._meta` of a 2026-07-28 request."""

    protocol_version: str = Field(alias=PROTOCOL_VERSION_KEY, min_length=1)
    client_capabilities: ClientCapabilities = Field(alias=CLIENT_CAPABILITIES_KEY)
    client_info: Implementation | None = Field(default=None, alias=CLIENT_INFO_KEY)
    log_level: LogLevel | None = Field(default=None, alias=LOG_LEVEL_KEY)
    progress_token: str | int | None = None


class RequestParams(WireModel):
    """Params every request carries."""

    meta: RequestMeta = Field(alias="_meta")


class PaginatedParams(RequestParams):
    cursor: str | None = None


class InputResponseParams(RequestParams):
    """Params of a request that can be retried with answers (multi round-trip)."""

    input_responses: dict[str, Any] | None = None
    request_state: str | None = None


class CallToolParams(InputResponseParams):
    name: str = Field(min_length=1, max_length=128)
    arguments: dict[str, Any] | None = None


class GetPromptParams(InputResponseParams):
    name: str = Field(min_length=1, max_length=128)
    arguments: dict[str, str] | None = None


class ReadResourceParams(RequestParams):
    uri: str = Field(min_length=1, max_length=2048)


class PromptRef(WireModel):
    type: Literal["ref/prompt"]
    name: str = Field(min_length=1, max_length=128)


class ResourceTemplateRef(WireModel):
    type: Literal["ref/resource"]
    uri: str = Field(min_length=1, max_length=2048)


class CompleteArgument(WireModel):
    name: str = Field(min_length=1, max_length=256)
    value: str = Field(max_length=4096)


class CompleteContext(WireModel):
    arguments: dict[str, str] | None = None


class CompleteParams(RequestParams):
    """`completion/complete`: which prompt argument or template variable, and its value so far."""

    ref: PromptRef | ResourceTemplateRef = Field(discriminator="type")
    argument: CompleteArgument
    context: CompleteContext | None = None


class TaskParams(RequestParams):
    task_id: str = Field(min_length=1, max_length=128)


class UpdateTaskParams(TaskParams):
    input_responses: dict[str, Any]


class SubscriptionFilter(WireModel):
    tools_list_changed: bool | None = None
    prompts_list_changed: bool | None = None
    resources_list_changed: bool | None = None
    task_ids: list[str] | None = None


class ListenParams(RequestParams):
    notifications: SubscriptionFilter
