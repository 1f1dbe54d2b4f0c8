"""Fixtures of the client tests: the embedded stack serving the conformance tools, per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mcp_tasks_aws.local.server import EmbeddedStack


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def stack_url() -> Iterator[str]:
    """The MCP endpoint of a fresh embedded stack (moto-backed tasks, real handlers)."""
    with EmbeddedStack(env={"MCP_TASKS_TOOLS": "conformance"}) as stack:
        yield stack.url
