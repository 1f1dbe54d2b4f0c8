"""The edge in front of the real transport and server, driven with API Gateway events.

`EdgeFront` stands where `HttpTransport` stands for `McpClient` and `LegacyClient`: each
request becomes the payload-v2 event the function receives, carrying one caller's bearer
token, and goes through `Edge.handle`, so a test sees what a deployed client would.
"""

from __future__ import annotations

from mcp_tasks_aws.app import App
from mcp_tasks_aws.config import Settings
from mcp_tasks_aws.edge.auth_settings import AuthSettings
from mcp_tasks_aws.edge.gate import Edge
from mcp_tasks_aws.local.apigw_emulator import build_event
from mcp_tasks_aws.protocol.transport import HttpRequest, HttpResponse
from mcp_tasks_aws.tools.context import ToolContext
from mcp_tasks_aws.tools.registry import ToolSet
from support.mcp import SECRET
from support.oauth import ISSUER, RESOURCE

SCOPED = ToolSet(name="scoped")
APPROVAL = {
    "type": "object",
    "properties": {"approve": {"type": "boolean"}},
    "required": ["approve"],
}


@SCOPED.tool(scopes=["deploy"])
def release(service: str) -> str:
    """Release a service (needs the `deploy` scope)."""
    return f"released {service}"


@SCOPED.tool(scopes=["deploy"])
async def approved_release(service: str, ctx: ToolContext) -> str:
    """Ask for approval, then release (needs the `deploy` scope)."""
    answer = await ctx.elicit(f"Release {service}?", APPROVAL, key="approval")
    return f"released {service}" if (answer.content or {}).get("approve") else "not released"


@SCOPED.tool
def status() -> str:
    """Say how things are (needs no scope)."""
    return "ok"


OAUTH = AuthSettings(
    mode="oauth",
    resource=RESOURCE,
    issuer=ISSUER,
    audiences=(RESOURCE,),
    authorization_servers=(ISSUER,),
)


class EdgeFront:
    """Sends each request through `edge` as an API Gateway event with `token` on it."""

    def __init__(self, edge: Edge, token: str | None, *, jwt_authorizer: bool) -> None:
        self.edge = edge
        self.token = token
        self.jwt_authorizer = jwt_authorizer

    def handle(self, http: HttpRequest) -> HttpResponse:
        headers = dict(http.headers)
        if self.token is not None:
            headers["authorization"] = f"Bearer {self.token}"
        event = build_event(
            method=http.method,
            path="/mcp",
            headers=headers,
            body=http.body,
            jwt_authorizer=self.jwt_authorizer,
        )
        return self.edge.handle(event)


def app(auth: AuthSettings) -> App:
    # Short resume windows: a resumed 2025-11-25 stream waits for answers that are there.
    settings = Settings(state_secret=SECRET, auth=auth, listen_window_ms=300, listen_poll_ms=20)
    return App(settings, toolset=SCOPED)
