"""A request's client capabilities are bounded at the edge of the server (a task keeps them on
its item, where unbounded they could make it too large to write): over the bound, -32602 with
HTTP 400 naming them, before anything runs."""

from __future__ import annotations

from mcp_tasks_aws.protocol.errors import INVALID_PARAMS
from mcp_tasks_aws.protocol.models import MAX_CAPABILITIES_CHARS, capabilities_chars
from support.mcp import TASKS_EXTENSION, McpClient


def capabilities_of(chars: int) -> dict[str, object]:
    """Task-enabled capabilities padded to exactly `chars` characters of JSON."""
    padded: dict[str, object] = {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}
    padded["experimental"] = {"pad": ""}
    padded["experimental"] = {"pad": "p" * (chars - capabilities_chars(padded))}
    assert capabilities_chars(padded) == chars
    return padded


def test_capabilities_over_the_bound_are_refused_before_the_tool_runs(client: McpClient) -> None:
    response = client.call_tool(
        "slow_compute",
        {"seconds": 0, "label": "x"},
        capabilities=capabilities_of(MAX_CAPABILITIES_CHARS + 1),
    )
    assert response.status == 400
    error = client.error(response)
    assert error["code"] == INVALID_PARAMS
    assert "io.modelcontextprotocol/clientCapabilities is too large" in error["message"]
    assert f"over {MAX_CAPABILITIES_CHARS} characters" in error["message"]


def test_capabilities_at_the_bound_are_served(client: McpClient) -> None:
    result = client.tool_result(
        "slow_compute",
        {"seconds": 0, "label": "x"},
        capabilities=capabilities_of(MAX_CAPABILITIES_CHARS),
    )
    assert result["resultType"] in ("task", "complete")
