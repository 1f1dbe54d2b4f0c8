"""Issue 19.7: only access tokens are accepted, never ID tokens (the Cognito option above all).

An Amazon Cognito ID token names the app client in `aud`, and the template lists that client
id as an audience (for access tokens without resource binding, which carry it as `client_id`
and no `aud`). Cognito gives both kinds the same header (no `typ`), so only `token_use` tells
them apart. The token shapes below are Cognito's (claims as its documentation lists them).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from mcp_tasks_aws.edge.apigw import jwt_principal
from mcp_tasks_aws.edge.auth_settings import AuthSettings
from mcp_tasks_aws.edge.gate import Edge
from mcp_tasks_aws.edge.jwks import JwksCache
from mcp_tasks_aws.edge.tokens import (
    TokenRefused,
    TokenVerifier,
    is_cognito_issuer,
    token_type_problem,
)
from mcp_tasks_aws.local.apigw_emulator import build_event
from mcp_tasks_aws.protocol.transport import HttpRequest, HttpResponse
from support.edge import EdgeFront, app
from support.mcp import McpClient
from support.oauth import ISSUER, JWKS_URI, RESOURCE, Issuer, unsigned

POOL = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbC123xyz"
CLIENT = "4tq9example0client0id"
TOOLS_SCOPE = f"{RESOURCE}/tools"


def cognito_access_token(issuer: Issuer, *, bound: bool, **changes: Any) -> str:
    now = int(time.time())
    claims: dict[str, Any] = {
        "sub": "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
        "iss": POOL,
        "aud": RESOURCE if bound else None,  # resource binding (Essentials): the endpoint
        "client_id": CLIENT,
        "origin_jti": "o-1",
        "event_id": "e-1",
        "token_use": "access",
        "scope": f"openid email {TOOLS_SCOPE}",
        "auth_time": now,
        "iat": now,
        "exp": now + 3600,
        "jti": "j-1",
        "username": "alice",
    }
    claims.update(changes)
    return issuer.token(header={"typ": None}, **claims)


def cognito_id_token(issuer: Issuer, **changes: Any) -> str:
    now = int(time.time())
    claims: dict[str, Any] = {
        "sub": "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
        "iss": POOL,
        "aud": CLIENT,
        "client_id": None,
        "scope": None,
        "email_verified": True,
        "token_use": "id",
        "auth_time": now,
        "cognito:username": "alice",
        "iat": now,
        "exp": now + 3600,
        "email": "alice@example.com",
        "at_hash": "h",
        "origin_jti": "o-1",
        "jti": "j-2",
        "event_id": "e-1",
    }
    claims.update(changes)
    return issuer.token(header={"typ": None}, **claims)


@pytest.fixture
def pool_verifier(issuer: Issuer) -> TokenVerifier:
    """What the template configures: the endpoint's URL and the app client id as audiences."""
    keys = JwksCache(issuer=POOL, jwks_uri=JWKS_URI, fetch=issuer.fetch)
    return TokenVerifier(issuer=POOL, audiences=[RESOURCE, CLIENT], keys=keys)


# -- the verifier (AuthMode OAUTH) ------------------------------------------------------------


@pytest.mark.parametrize("bound", [True, False], ids=["resource-bound", "client-id"])
def test_cognito_access_tokens_are_accepted(
    issuer: Issuer, pool_verifier: TokenVerifier, bound: bool
) -> None:
    verified = pool_verifier.verify(cognito_access_token(issuer, bound=bound))
    assert verified.client == CLIENT
    assert TOOLS_SCOPE in verified.scopes


def test_a_cognito_id_token_is_refused(issuer: Issuer, pool_verifier: TokenVerifier) -> None:
    with pytest.raises(TokenRefused, match=r"not an access token \(token_use\)"):
        pool_verifier.verify(cognito_id_token(issuer))


@pytest.mark.parametrize("use", [None, "id", "refresh", "ACCESS", ""])
def test_a_cognito_token_must_say_it_is_an_access_token(
    issuer: Issuer, pool_verifier: TokenVerifier, use: str | None
) -> None:
    with pytest.raises(TokenRefused, match="token_use"):
        pool_verifier.verify(cognito_access_token(issuer, bound=True, token_use=use))


def test_other_issuers_need_no_token_use_but_may_not_say_id(
    issuer: Issuer, verifier: TokenVerifier
) -> None:
    assert verifier.verify(issuer.token()).subject == "alice"
    assert verifier.verify(issuer.token(token_use="access")).subject == "alice"
    with pytest.raises(TokenRefused, match="token_use"):
        verifier.verify(issuer.token(token_use="id"))


@pytest.mark.parametrize(
    "typ", [None, "at+jwt", "application/at+jwt", "AT+JWT", "JWT", "jwt", "application/jwt"]
)
def test_access_token_types_are_accepted(issuer: Issuer, verifier: TokenVerifier, typ: Any) -> None:
    assert verifier.verify(issuer.token(header={"typ": typ})).subject == "alice"


@pytest.mark.parametrize(
    "typ", ["id_token+jwt", "logout+jwt", "secevent+jwt", "dpop+jwt", "JOSE", "JWE", ""]
)
def test_other_token_types_are_refused(issuer: Issuer, verifier: TokenVerifier, typ: str) -> None:
    with pytest.raises(TokenRefused, match=r"not an access token \(typ\)"):
        verifier.verify(issuer.token(header={"typ": typ}))


def test_a_typ_that_is_not_a_string_is_refused() -> None:
    assert token_type_problem(["at+jwt"]) is not None


@pytest.mark.parametrize(
    ("issuer", "cognito"),
    [
        (POOL, True),
        ("https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Pool1", True),
        ("https://cognito-idp.cn-north-1.amazonaws.com.cn/cn-north-1_Pool1", True),
        ("https://cognito-idp-fips.us-east-1.amazonaws.com/us-east-1_Pool1", True),
        ("https://issuer.example", False),
        ("http://cognito-idp.us-east-1.amazonaws.com/us-east-1_Pool1", False),
        ("https://cognito-idp.us-east-1.amazonaws.com.evil.example/us-east-1_Pool1", False),
        ("https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Pool1/extra", False),
    ],
)
def test_cognito_issuers_are_recognised(issuer: str, cognito: bool) -> None:
    assert is_cognito_issuer(issuer) is cognito


# -- through the edge -------------------------------------------------------------------------


def test_the_oauth_edge_refuses_an_id_token_401_and_serves_access_tokens(
    issuer: Issuer, pool_verifier: TokenVerifier
) -> None:
    auth = AuthSettings(mode="oauth", resource=RESOURCE, issuer=POOL, audiences=(RESOURCE, CLIENT))
    transport = app(auth).transport()
    edge = Edge(auth, transport.handle, verifier=pool_verifier)
    refused = McpClient(EdgeFront(edge, cognito_id_token(issuer), jwt_authorizer=False))
    answer = refused.call_tool("status")
    assert answer.status == 401
    assert 'error="invalid_token"' in answer.headers["www-authenticate"]
    assert "token_use" in answer.headers["www-authenticate"]
    for bound in (True, False):
        token = cognito_access_token(issuer, bound=bound)
        served = McpClient(EdgeFront(edge, token, jwt_authorizer=False))
        assert served.tool_result("status")["content"][0]["text"] == "ok"


def jwt_event(claims: dict[str, Any]) -> dict[str, Any]:
    """A request as API Gateway's JWT authorizer passes it on (it accepts ID tokens)."""
    token = unsigned({"alg": "RS256", "kid": "k1"}, claims)
    return build_event(
        method="POST",
        path="/mcp",
        headers={"content-type": "application/json", "authorization": f"Bearer {token}"},
        body=b"{}",
    )


class Served:
    def __init__(self) -> None:
        self.requests: list[HttpRequest] = []

    def __call__(self, request: HttpRequest) -> HttpResponse:
        self.requests.append(request)
        return HttpResponse(200)


def test_the_jwt_edge_refuses_an_id_token_the_authorizer_let_through() -> None:
    served = Served()
    edge = Edge(AuthSettings(mode="jwt"), served)
    id_claims = {"iss": POOL, "sub": "alice", "aud": CLIENT, "token_use": "id"}
    response = edge.handle(jwt_event(id_claims))
    assert response.status == 401
    assert 'error="invalid_token"' in response.headers["www-authenticate"]
    assert served.requests == []
    access = {"iss": POOL, "sub": "alice", "client_id": CLIENT, "token_use": "access"}
    assert edge.handle(jwt_event(access)).status == 200
    assert served.requests[0].principal == jwt_principal(POOL, "alice", CLIENT)
    # Another issuer's tokens need no token_use (most providers send none).
    assert edge.handle(jwt_event({"iss": ISSUER, "sub": "bob"})).status == 200
