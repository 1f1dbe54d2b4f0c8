"""Opening an SDK `Client` on a Streamable HTTP URL with the Tasks extension and a bearer token.

`Client("http://…")` covers the plain case; this module owns the one extra the CLI and most
deployments need: credentials on every request, either a fixed `Authorization: Bearer …`
header (API Gateway's JWT authorizer) or an httpx auth flow (the OAuth sign-in of
`client.cli.sign_in`, AuthMode OAUTH). The SDK's documented way to set headers is
to give `streamable_http_client` a pre-configured HTTP client, which this does, keeping the
SDK's timeouts (30 s to connect and write, 300 s to read).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_tasks_aws.client.extension import TasksExtension

__all__ = ["TOKEN_ENV", "connect"]

TOKEN_ENV = "MCP_TASKS_TOKEN"  # noqa: S105 - the variable's name, not a secret
"""The environment variable the CLI reads a bearer token from."""


@asynccontextmanager
async def connect(
    url: str,
    *,
    token: str | None = None,
    auth: httpx2.Auth | None = None,
    extension: TasksExtension | None = None,
    on_response: Callable[[httpx2.Response], Awaitable[None]] | None = None,
    **client_options: Any,
) -> AsyncIterator[Client]:
    """An entered `Client` for `url` with `extension` (a default `TasksExtension` if None).

    `token` sends a fixed bearer token; `auth` is an httpx auth flow instead, such as the
    OAuth sign-in of `client.cli.sign_in.oauth_provider`. `on_response` sees every HTTP response
    (`diagnose.HttpTrace` keeps the last one that was not MCP). `client_options` go to `Client`
    (callbacks such as `elicitation_callback`, `mode`, …).
    """
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(
            httpx2.AsyncClient(
                headers=headers,
                auth=None if token else auth,
                timeout=httpx2.Timeout(30.0, read=300.0),
                event_hooks={"response": [on_response]} if on_response else None,
            )
        )
        client = Client(
            streamable_http_client(url, http_client=http),
            extensions=[extension or TasksExtension()],
            **client_options,
        )
        yield await stack.enter_async_context(client)
