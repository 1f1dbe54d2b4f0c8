"""A -32021 error names the capability it is missing, in its message as well as in
`data.requiredCapabilities` (a person reads the message; "Missing required client capability"
alone does not say which)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mcp_tasks_aws.protocol.errors import MissingClientCapability
from mcp_tasks_aws.toolsets.conformance import tools as conformance
from support.mcp import McpClient


@pytest.mark.parametrize(
    ("required", "named"),
    [
        ({"sampling": {}}, "sampling"),
        (
            {"extensions": {"io.modelcontextprotocol/tasks": {}}},
            "extension io.modelcontextprotocol/tasks",
        ),
        ({"elicitation": {}, "roots": {}}, "elicitation and roots"),
    ],
)
def test_the_message_names_the_capability(required: dict[str, Any], named: str) -> None:
    error = MissingClientCapability(required)
    assert (
        error.message == f"Missing required client capability: {named} (the client must declare it)"
    )
    assert error.data == {"requiredCapabilities": required}


def test_a_tool_that_samples_says_sampling(make_client: Callable[..., McpClient]) -> None:
    client = make_client(conformance)
    response = client.call_tool("test_missing_capability", capabilities={})
    error = client.error(response)
    assert (error["code"], error["message"]) == (
        -32021,
        "Missing required client capability: sampling (the client must declare it)",
    )
