"""Fixtures of the edge's tests: an issuer with one key, a test clock, a verifier reading that
issuer's keys, and edges in front of the real server for either token mode (helpers live in
support.oauth and support.edge)."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_tasks_aws.edge.auth_settings import AuthSettings
from mcp_tasks_aws.edge.gate import Edge
from mcp_tasks_aws.edge.jwks import JwksCache
from mcp_tasks_aws.edge.tokens import TokenVerifier
from mcp_tasks_aws.protocol.transport import HttpTransport
from support.clock import Clock
from support.edge import OAUTH, EdgeFront, app
from support.oauth import ISSUER, JWKS_URI, RESOURCE, Issuer, unsigned


@pytest.fixture
def issuer() -> Issuer:
    found = Issuer()
    found.add_key("k1")
    return found


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def verifier(issuer: Issuer, clock: Clock) -> TokenVerifier:
    keys = JwksCache(issuer=ISSUER, jwks_uri=JWKS_URI, fetch=issuer.fetch, clock=clock)
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
