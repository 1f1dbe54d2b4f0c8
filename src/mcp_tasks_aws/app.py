"""Assembling the API side from settings: tools module, request-state codec, server, transport.

Both the Lambda handler and the embedded stack call :func:`build_transport`, so what runs
locally is what runs deployed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp_tasks_aws.config import Settings, load_toolset
from mcp_tasks_aws.listen import Listener
from mcp_tasks_aws.ports import ChangeFeed
from mcp_tasks_aws.protocol.request_state import RequestStateCodec
from mcp_tasks_aws.protocol.transport import HttpTransport
from mcp_tasks_aws.server import SUPPORTED_VERSIONS, McpServer
from mcp_tasks_aws.tasks.service import TaskService


def build_server(
    settings: Settings, tasks: TaskService | None = None, feed: ChangeFeed | None = None
) -> McpServer:
    if not settings.state_secret:
        raise RuntimeError("MCP_TASKS_STATE_SECRET is not set (32+ random bytes)")
    toolset = load_toolset(settings.tools_module)
    listener = Listener(
        tasks=tasks,
        feed=feed,
        has_prompts=bool(toolset.prompts),
        window_ms=settings.listen_window_ms,
        poll_ms=settings.listen_poll_ms,
    )
    return McpServer(
        toolset,
        state_codec=RequestStateCodec(settings.state_secret),
        page_size=settings.page_size,
        list_ttl_ms=settings.list_ttl_ms,
        tasks=tasks,
        listener=listener,
        list_changed=feed.bump if feed is not None else None,
    )


def build_transport(
    settings: Settings,
    *,
    tasks: TaskService | None = None,
    feed: ChangeFeed | None = None,
    on_request: Callable[[str, Any], None] | None = None,
) -> HttpTransport:
    return HttpTransport(
        build_server(settings, tasks, feed),
        allowed_origins=settings.allowed_origins,
        max_body_bytes=settings.max_body_bytes,
        supported_versions=SUPPORTED_VERSIONS,
        on_request=on_request,
    )
