"""Fixtures shared by the foundation tests (helpers live in mcp_support)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mcp_support import SECRET, McpClient, conformance_settings
from mcp_tasks_aws.app import build_transport
from mcp_tasks_aws.protocol.request_state import RequestStateCodec
from mcp_tasks_aws.protocol.transport import HttpTransport
from mcp_tasks_aws.server.methods import SUPPORTED_VERSIONS, McpServer
from mcp_tasks_aws.tools.registry import ToolSet


@pytest.fixture(scope="session")
def transport() -> HttpTransport:
    """The conformance tools behind the real transport, as `app.build_transport` assembles it."""
    return build_transport(conformance_settings())


@pytest.fixture
def client(transport: HttpTransport) -> McpClient:
    return McpClient(transport)


@pytest.fixture
def make_client() -> Callable[..., McpClient]:
    """A client for any ToolSet (server options such as `page_size` pass through)."""

    def make(toolset: ToolSet, **server_options: Any) -> McpClient:
        server = McpServer(toolset, state_codec=RequestStateCodec(SECRET), **server_options)
        return McpClient(HttpTransport(server, supported_versions=SUPPORTED_VERSIONS))

    return make
