"""Fixtures of the dual-era tests: the conformance tools behind both eras.

`legacy` drives the real transport (as `app.build_transport` assembles it) through an
initialized 2025-11-25 session; `stack_url` is a full embedded stack (moto behind the same
handlers) for the official clients.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_tasks_aws.local.stack import EmbeddedStack
from mcp_tasks_aws.protocol.transport import HttpTransport
from support.legacy import LegacyClient, legacy_transport
from support.mcp import running_stack


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def transport() -> HttpTransport:
    return legacy_transport()


@pytest.fixture
def legacy(transport: HttpTransport) -> LegacyClient:
    """A client with a fresh 2025-11-25 session that declared elicitation, sampling and roots."""
    client = LegacyClient(transport)
    client.initialize()
    return client


@pytest.fixture(scope="module")
def stack() -> Iterator[EmbeddedStack]:
    with running_stack(
        MCP_TASKS_TOOLS="conformance",
        MCP_TASKS_LISTEN_WINDOW_MS="5000",
        MCP_TASKS_LISTEN_POLL_MS="50",
    ) as running:
        yield running


@pytest.fixture(scope="module")
def stack_url(stack: EmbeddedStack) -> str:
    return stack.url


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Quiet Powertools' "no metrics" warning, which the embedded stack's API handler raises."""
    here = Path(__file__).parent
    quiet = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")
    for item in items:
        if here in item.path.parents:
            item.add_marker(quiet)
