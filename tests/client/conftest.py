"""Fixtures of the client tests: the embedded stack serving the conformance tools, per module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_tasks_aws.local.stack import EmbeddedStack


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def stack_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """The MCP endpoint of a fresh embedded stack (moto-backed tasks, real handlers), with the
    module's `STACK_ENV` settings if it has any."""
    env = {"MCP_TASKS_TOOLS": "conformance", **getattr(request.module, "STACK_ENV", {})}
    with EmbeddedStack(env=env) as stack:
        yield stack.url


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Quiet Powertools' "no metrics" warning, which the embedded stack's API handler raises
    around listen windows (the stack's own filter for it is reset by pytest's warning capture)."""
    here = Path(__file__).parent
    quiet = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")
    for item in items:
        if here in item.path.parents:
            item.add_marker(quiet)
