"""The edge in front of the real transport and server, driven with API Gateway events.

`EdgeFront` stands where `HttpTransport` stands for `McpClient` and `LegacyClient`: each
request becomes the payload-v2 event the function receives, carrying one caller's bearer
token, and goes through `Edge.handle`, so a test sees what a deployed client would.
"""

from __future__ import annotations

from typing import Any

import pytest

from mcp_support import SECRET
from mcp_tasks_aws.app import App
from mcp_tasks_aws.config import Settings
from mcp_tasks_aws.edge.auth_settings import AuthSettings
from mcp_tasks_aws.edge.gate import Edge
from mcp_tasks_aws.edge.jwks import JwksCache
from mcp_tasks_aws.edge.tokens import TokenVerifier
from mcp_tasks_aws.local.apigw_emulator import build_event
from mcp_tasks_aws.protocol.transport import HttpRequest, HttpResponse, HttpTransport
from mcp_tasks_aws.tools.context import ToolContext
from mcp_tasks_aws.tools.registry import ToolSet
from oauth_support import ISSUER, JWKS_URI, RESOURCE, Issuer, unsigned

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


@pytest.fixture
def issuer() -> Issuer:
    found = Issuer()
    found.add_key("k1")
    return found


@pytest.fixture
def verifier(issuer: Issuer) -> TokenVerifier:
    """Tokens of `issuer` for this resource (as tests/auth's fixture of the same name)."""
    keys = JwksCache(issuer=ISSUER, jwks_uri=JWKS_URI, fetch=issuer.fetch)
    return TokenVerifier(issuer=ISSUER, audiences=[RESOURCE], keys=keys)


@pytest.fixture
def oauth_front(issuer: Issuer, verifier: TokenVerifier) -> Any:
    """A front for AuthMode OAUTH: `front(scope)` signs a token granting `scope`."""
    the_app = app(OAUTH)
    transport: HttpTransport = the_app.transport()
    edge = Edge(OAUTH, transport.handle, all_scopes=["deploy"], verifier=verifier)

    def front(scope: str) -> EdgeFront:
        return EdgeFront(edge, issuer.token(scope=scope), jwt_authorizer=False)

    return front


@pytest.fixture
def jwt_front() -> Any:
    """A front for AuthMode JWT: API Gateway's authorizer passed the token's claims on."""
    the_app = app(AuthSettings(mode="jwt"))
    edge = the_app.edge(the_app.transport())

    def front(scope: str) -> EdgeFront:
        claims = {"iss": ISSUER, "sub": "alice", "client_id": "app-1", "scope": scope}
        return EdgeFront(edge, unsigned({"alg": "RS256"}, claims), jwt_authorizer=True)

    return front


@pytest.fixture(params=["oauth", "jwt"])
def front(request: pytest.FixtureRequest, oauth_front: Any, jwt_front: Any) -> Any:
    """Either mode's front: tool scopes hold the same whoever verified the token."""
    return oauth_front if request.param == "oauth" else jwt_front
