"""Names and values fixed by MCP 2026-07-28 and the Tasks extension, shared by server and client.

This module owns the vocabulary both sides must agree on: the `_meta` keys of the per-request
envelope, the extension's identifier, task statuses (which are terminal, which active), and the
timestamp format of `createdAt` / `lastUpdatedAt`. It imports nothing but the standard library,
so the Lambda functions and the SDK-based client can both use it without paying for the other.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final, Literal, TypeAlias

PROTOCOL_VERSION_KEY: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY: Final = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY: Final = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL_KEY: Final = "io.modelcontextprotocol/logLevel"
SERVER_INFO_KEY: Final = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID_KEY: Final = "io.modelcontextprotocol/subscriptionId"
RELATED_TASK_KEY: Final = "io.modelcontextprotocol/related-task"

TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
"""The Tasks extension's identifier, declared in capabilities by both sides."""
TASK_POLICY_META: Final = "io.github.mcp-tasks-aws/taskPolicy"
"""The `_meta` key of a listed tool stating its task policy (`inline`, `optional`, `required`).
2026-07-28 has no field for it (the server alone decides, per request); `mcp-tasks` shows it."""

TaskStatus: TypeAlias = Literal["working", "input_required", "completed", "failed", "cancelled"]
ACTIVE_STATUSES: Final[frozenset[str]] = frozenset({"working", "input_required"})
"""A task in one of these may still change."""
TERMINAL_STATUSES: Final[frozenset[str]] = frozenset({"completed", "failed", "cancelled"})
"""A task in one of these never changes again."""


def format_timestamp(epoch_ms: int) -> str:
    """Epoch milliseconds as the ISO 8601 UTC timestamp tasks carry (`...T12:00:00.250Z`)."""
    moment = datetime.fromtimestamp(epoch_ms / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{epoch_ms % 1000:03d}Z"


def parse_timestamp(text: str) -> datetime | None:
    """A task timestamp as an aware datetime; None when the text is not ISO 8601."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
