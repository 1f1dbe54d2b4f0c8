"""Assembling the API side from settings: tools module, request-state codec, server, transport.

Both the Lambda handler and the embedded stack call :func:`build_transport`, so what runs
locally is what runs deployed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp_tasks_aws.config import Settings, load_toolset
from mcp_tasks_aws.protocol.request_state import RequestStateCodec
from mcp_tasks_aws.protocol.transport import HttpTransport
from mcp_tasks_aws.server import SUPPORTED_VERSIONS, McpServer, TaskBackend


def build_server(settings: Settings, tasks: TaskBackend | None = None) -> McpServer:
    if not settings.state_secret:
        raise RuntimeError("MCP_TASKS_STATE_SECRET is not set (32+ random bytes)")
    return McpServer(
        load_toolset(settings.tools_module),
        state_codec=RequestStateCodec(settings.state_secret),
        page_size=settings.page_size,
        list_ttl_ms=settings.list_ttl_ms,
        tasks=tasks,
    )


def build_transport(
    settings: Settings,
    *,
    tasks: TaskBackend | None = None,
    on_request: Callable[[str, Any], None] | None = None,
) -> HttpTransport:
    return HttpTransport(
        build_server(settings, tasks),
        allowed_origins=settings.allowed_origins,
        max_body_bytes=settings.max_body_bytes,
        supported_versions=SUPPORTED_VERSIONS,
        on_request=on_request,
    )
