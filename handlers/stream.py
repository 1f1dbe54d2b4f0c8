"""Entry point of the `STREAMING` front door: the ASGI app AWS's Lambda Web Adapter serves.

`handlers/run.sh` (the function's handler under the adapter's `/opt/bootstrap` wrapper)
starts uvicorn on `handlers.stream:asgi`, on 127.0.0.1 at `AWS_LWA_PORT`; the adapter waits
for its readiness path, then forwards each API Gateway REST invocation to it as HTTP and
streams the answer back (`InvokeWithResponseStream`). `asgi` is built from the environment
when uvicorn first reads it, during init, like `handlers/api.handler`; the embedded stack
calls `make_app` with its own `App` and serves the same app.

The same edge and transport as the buffered door's handler, so both doors answer alike, with
these differences: answers stream (`edge.streaming`), inline runs end at
`MCP_TASKS_INLINE_DEADLINE_MS` rather than at API Gateway's 29 s, and listen windows last
`MCP_TASKS_LISTEN_WINDOW_MS` as the template sets it for this door. SnapStart does not apply
(the adapter is the runtime client here): see docs/deploy.md.
"""

from __future__ import annotations

import os
from typing import Any

from mcp_tasks_aws.runtime import init_phase

with init_phase():
    from aws_lambda_powertools import Logger

    from mcp_tasks_aws.app import App
    from mcp_tasks_aws.config import Settings
    from mcp_tasks_aws.edge.streaming import StreamingApp

logger = Logger()
MCP_PATH = "/mcp"
STREAMED_INVOKE_MODE = "response_stream"


def _tag_request(method: str, request_id: Any) -> None:
    # Log lines after this carry the JSON-RPC method and id (never params or answers).
    logger.append_keys(rpc_method=method, rpc_id=request_id)


def make_app(app: App, *, pad_empty_bodies: bool | None = None) -> StreamingApp:
    """The streaming door's ASGI app for `app`. `pad_empty_bodies` defaults to whether the
    adapter streams (`AWS_LWA_INVOKE_MODE`), i.e. whether API Gateway's streamed integration
    is in front (see `edge.streaming`)."""
    if pad_empty_bodies is None:
        pad_empty_bodies = os.environ.get("AWS_LWA_INVOKE_MODE", "") == STREAMED_INVOKE_MODE
    transport = app.transport(on_request=_tag_request)
    edge = app.edge(transport)
    settings = app.settings
    return StreamingApp(
        edge.handle,
        inline_deadline_s=(settings.inline_deadline_ms or 900_000) / 1000,
        paths=frozenset(
            {MCP_PATH, *(settings.auth.metadata_paths if settings.auth.mode == "oauth" else ())}
        ),
        pad_empty_bodies=pad_empty_bodies,
    )


def __getattr__(name: str) -> Any:
    # uvicorn reads `asgi` once, at startup (the adapter's init): the app is built then.
    if name != "asgi":
        raise AttributeError(name)
    with init_phase():
        built = make_app(App(Settings.from_env()))
    globals()["asgi"] = built
    return built
