"""edge/gate.py: the protected resource at the HTTP edge (metadata, challenge, principals,
scopes), driven with the API Gateway events the function receives."""

from __future__ import annotations

import json
import logging
import re
import time
from typing import Any

import pytest

from mcp_tasks_aws.edge.gate import AuthSettings, Edge, bearer_token
from mcp_tasks_aws.edge.jwks import KeysUnavailable
from mcp_tasks_aws.edge.tokens import TokenVerifier
from mcp_tasks_aws.local.apigw_emulator import build_event
from mcp_tasks_aws.protocol.errors import InsufficientScope
from mcp_tasks_aws.protocol.transport import HttpRequest, HttpResponse
from support.oauth import ISSUER, RESOURCE, Issuer, unsigned

METADATA_URL = "https://mcp.example/.well-known/oauth-protected-resource/mcp"
NOW = int(time.time())
TOOL_SCOPES = {"release": frozenset({"deploy"}), "text_stats": frozenset()}


class Served:
    """The transport's place: records what ran.

    It stands for the server's scope check too (`InlineRunner.run_call`, pinned end to end in
    tests/edge): a call to a tool of `TOOL_SCOPES` (named here by `Mcp-Name`) whose granted
    scopes lack the tool's raises `InsufficientScope`, and nothing runs.
    """

    def __init__(self) -> None:
        self.requests: list[HttpRequest] = []

    def __call__(self, request: HttpRequest) -> HttpResponse:
        tool = request.header("mcp-name") or ""
        needed = TOOL_SCOPES.get(tool, frozenset())
        granted = request.granted_scopes
        if granted is not None and not needed <= granted:
            raise InsufficientScope(tool, needed, needed - granted)
        self.requests.append(request)
        return HttpResponse(200, {"content-type": "application/json"}, b"{}")


def oauth_settings(**changes: Any) -> AuthSettings:
    values: dict[str, Any] = {
        "mode": "oauth",
        "resource": RESOURCE,
        "issuer": ISSUER,
        "audiences": (RESOURCE,),
        "authorization_servers": (ISSUER,),
    }
    values.update(changes)
    return AuthSettings(**values)


@pytest.fixture
def served() -> Served:
    return Served()


@pytest.fixture
def edge(verifier: TokenVerifier, served: Served) -> Edge:
    return Edge(oauth_settings(), served, all_scopes=["deploy"], verifier=verifier)


def event(
    token: str | None = None,
    *,
    path: str = "/mcp",
    method: str = "POST",
    tool: str | None = None,
    authorization: str | None = None,
) -> dict[str, Any]:
    headers = {"content-type": "application/json"}
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    if authorization is not None:
        headers["authorization"] = authorization
    if tool is not None:
        headers |= {"mcp-method": "tools/call", "mcp-name": tool}
    return build_event(method=method, path=path, headers=headers, body=b"{}", jwt_authorizer=False)


def challenge_params(response: HttpResponse) -> dict[str, str]:
    header = response.headers["www-authenticate"]
    assert header.startswith("Bearer")
    return dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', header))


# -- metadata (RFC 9728) ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"]
)
def test_metadata_is_served_at_both_well_known_paths(edge: Edge, path: str) -> None:
    response = edge.handle(event(path=path, method="GET"))
    assert response.status == 200
    assert response.json == {
        "resource": RESOURCE,
        "authorization_servers": [ISSUER],
        "bearer_methods_supported": ["header"],
        "scopes_supported": ["deploy"],
    }
    assert response.headers["access-control-allow-origin"] == "*"


def test_metadata_omits_scopes_when_there_are_none(verifier: TokenVerifier) -> None:
    edge = Edge(oauth_settings(), Served(), verifier=verifier)
    assert "scopes_supported" not in edge.metadata()


def test_metadata_answers_only_get(edge: Edge) -> None:
    response = edge.handle(event(path="/.well-known/oauth-protected-resource", method="POST"))
    assert response.status == 405


def test_the_metadata_url_is_the_path_suffixed_form() -> None:
    assert oauth_settings().metadata_url == METADATA_URL


# -- the challenge ----------------------------------------------------------------------------


def test_no_token_gets_the_challenge_without_error_details(edge: Edge, served: Served) -> None:
    response = edge.handle(event())
    assert response.status == 401
    assert challenge_params(response) == {"resource_metadata": METADATA_URL}
    assert response.json["error_description"]
    assert served.requests == []


def test_the_challenge_names_the_scopes_every_request_needs(verifier: TokenVerifier) -> None:
    edge = Edge(oauth_settings(scopes=("mcp",)), Served(), verifier=verifier)
    assert challenge_params(edge.handle(event()))["scope"] == "mcp"


@pytest.mark.parametrize("header", ["Basic YWxpY2U6cHc=", "Bearer", "Bearer a b", "Bearer\x00x"])
def test_a_malformed_authorization_header_is_invalid_request(edge: Edge, header: str) -> None:
    response = edge.handle(event(authorization=header))
    assert response.status == 401
    assert challenge_params(response)["error"] == "invalid_request"


@pytest.mark.parametrize(
    ("header", "token"),
    [("Bearer abc", "abc"), ("bearer  a.b.c ", "a.b.c"), ("Basic x", ""), (None, None)],
)
def test_bearer_token(header: str | None, token: str | None) -> None:
    headers = {} if header is None else {"authorization": header}
    assert bearer_token(HttpRequest("POST", headers, b"")) == token


# -- the bad tokens of the issue, over HTTP -----------------------------------------------------


def _bad_tokens(issuer: Issuer) -> dict[str, str]:
    issuer.add_key("impostor", publish=False)
    issuer.add_key("ghost", publish=False)
    claims = {"iss": ISSUER, "aud": RESOURCE, "sub": "mallory", "exp": NOW + 300}
    return {
        "wrong audience": issuer.token(aud="https://other.example/mcp"),
        "expired": issuer.token(exp=NOW - 3600),
        "not yet valid": issuer.token(nbf=NOW + 3600),
        "wrong signature": issuer.token("impostor", header={"kid": "k1"}),
        "alg none": unsigned({"alg": "none", "kid": "k1"}, claims),
        "unknown kid": issuer.token("ghost"),
        "other issuer": issuer.token(iss="https://evil.example"),
        "malformed header": "eyJub3QganNvbg.e30.c2ln",
    }


BAD = [
    "wrong audience",
    "expired",
    "not yet valid",
    "wrong signature",
    "alg none",
    "unknown kid",
    "other issuer",
    "malformed header",
]


@pytest.mark.parametrize("case", BAD)
def test_each_bad_token_gets_401_with_a_reason_and_is_never_logged(
    issuer: Issuer,
    edge: Edge,
    served: Served,
    case: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    token = _bad_tokens(issuer)[case]
    with caplog.at_level(logging.DEBUG):
        response = edge.handle(event(token))
    assert response.status == 401
    params = challenge_params(response)
    assert params["error"] == "invalid_token"
    assert params["resource_metadata"] == METADATA_URL
    assert params["error_description"] == response.json["error_description"] != ""
    assert served.requests == []
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert token not in logged
    for segment in token.split("."):
        if len(segment) > 8:
            assert segment not in logged
    # And the server stays up: a good token still goes through
    assert edge.handle(event(issuer.token())).status == 200


# -- a good token -------------------------------------------------------------------------------


def test_a_good_token_reaches_the_transport_as_a_principal_without_the_token(
    issuer: Issuer, edge: Edge, served: Served
) -> None:
    assert edge.handle(event(issuer.token(sub="auth0|alice", client_id="app1"))).status == 200
    (request,) = served.requests
    assert request.principal == f"jwt:{ISSUER}|auth0%7Calice|app1"
    assert "authorization" not in request.headers  # no token passthrough


def test_the_ambiguous_pair_of_the_hardening_issue_gets_two_principals(
    issuer: Issuer, edge: Edge, served: Served
) -> None:
    edge.handle(event(issuer.token(sub="auth0|alice", client_id="app1")))
    edge.handle(event(issuer.token(sub="auth0", client_id="alice|app1")))
    first, second = served.requests
    assert first.principal != second.principal


def test_an_outage_of_the_issuer_keys_is_503_not_401(served: Served, issuer: Issuer) -> None:
    class Down:
        def verify(self, token: str) -> Any:
            raise KeysUnavailable("down")

    edge = Edge(oauth_settings(), served, verifier=Down())
    response = edge.handle(event(issuer.token()))
    assert response.status == 503
    assert served.requests == []


# -- scopes -------------------------------------------------------------------------------------


def test_a_tool_whose_scope_the_token_lacks_gets_403_naming_it(
    issuer: Issuer, edge: Edge, served: Served
) -> None:
    response = edge.handle(event(issuer.token(scope="mcp"), tool="release"))
    assert response.status == 403
    params = challenge_params(response)
    assert params["error"] == "insufficient_scope"
    assert params["scope"] == "deploy"
    assert "deploy" in params["error_description"]
    assert params["resource_metadata"] == METADATA_URL
    assert served.requests == []


def test_a_token_with_the_scope_calls_the_tool(issuer: Issuer, edge: Edge, served: Served) -> None:
    assert edge.handle(event(issuer.token(scope="mcp deploy"), tool="release")).status == 200
    assert edge.handle(event(issuer.token(scope=""), tool="text_stats")).status == 200
    assert len(served.requests) == 2


def test_the_verified_scopes_travel_with_the_request(
    issuer: Issuer, edge: Edge, served: Served
) -> None:
    edge.handle(event(issuer.token(scope="mcp deploy")))
    assert served.requests[0].granted_scopes == {"mcp", "deploy"}


def test_the_step_up_challenge_asks_for_the_endpoints_and_the_tools_scopes(
    issuer: Issuer, verifier: Any
) -> None:
    edge = Edge(oauth_settings(scopes=("mcp",)), Served(), verifier=verifier)
    response = edge.handle(event(issuer.token(scope="mcp"), tool="release"))
    assert response.status == 403
    assert challenge_params(response)["scope"] == "deploy mcp"
    assert response.json["error"] == "insufficient_scope"


def test_scopes_every_request_needs_are_checked_too(issuer: Issuer, verifier: Any) -> None:
    edge = Edge(oauth_settings(scopes=("mcp",)), Served(), verifier=verifier)
    response = edge.handle(event(issuer.token(scope="other")))
    assert response.status == 403
    assert challenge_params(response)["scope"] == "mcp"


def test_jwt_mode_checks_tool_scopes_from_the_gateway_authorizer(served: Served) -> None:
    edge = Edge(AuthSettings(mode="jwt"), served)
    gateway_event = build_event(
        method="POST",
        path="/mcp",
        headers={"mcp-method": "tools/call", "mcp-name": "release"},
        body=b"{}",
    )
    gateway_event["requestContext"]["authorizer"] = {
        "jwt": {"claims": {"iss": ISSUER, "sub": "alice", "scope": "mcp"}, "scopes": None}
    }
    response = edge.handle(gateway_event)
    assert response.status == 403
    assert "resource_metadata" not in challenge_params(response)
    gateway_event["requestContext"]["authorizer"]["jwt"]["claims"]["scope"] = "deploy"
    assert edge.handle(gateway_event).status == 200


def test_jwt_mode_without_an_authorizer_grants_no_scope(served: Served) -> None:
    edge = Edge(AuthSettings(mode="jwt"), served)
    edge.handle(build_event(method="POST", path="/mcp", headers={}, body=b"{}"))
    assert served.requests[0].granted_scopes == frozenset()


def test_jwt_mode_refuses_an_authorizer_without_a_subject(served: Served) -> None:
    edge = Edge(AuthSettings(mode="jwt"), served)
    gateway_event = build_event(method="POST", path="/mcp", headers={}, body=b"{}")
    gateway_event["requestContext"]["authorizer"] = {"jwt": {"claims": {"iss": ISSUER}}}
    response = edge.handle(gateway_event)
    assert response.status == 401
    assert challenge_params(response)["error"] == "invalid_token"
    assert served.requests == []


def test_none_mode_serves_everyone_as_anonymous_and_has_no_metadata(served: Served) -> None:
    edge = Edge(AuthSettings(), served)
    assert edge.handle(event(tool="release")).status == 200
    assert served.requests[0].principal == "anonymous"
    assert served.requests[0].granted_scopes is None  # no token: tools' scopes not enforced
    edge.handle(event(path="/.well-known/oauth-protected-resource", method="GET"))
    assert len(served.requests) == 2  # not the edge's to answer: the transport's 405/404


# -- settings -----------------------------------------------------------------------------------


def test_settings_from_the_environment() -> None:
    settings = AuthSettings.from_env(
        {
            "MCP_TASKS_AUTH_MODE": "OAUTH",
            "MCP_TASKS_RESOURCE_URL": RESOURCE,
            "MCP_TASKS_OAUTH_ISSUER": ISSUER,
            "MCP_TASKS_OAUTH_SCOPES": "mcp, deploy",
        }
    )
    assert settings.mode == "oauth"
    assert settings.audiences == (RESOURCE,)
    assert settings.authorization_servers == (ISSUER,)
    assert settings.scopes == ("mcp", "deploy")
    assert settings.metadata_paths == {
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    }


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"MCP_TASKS_AUTH_MODE": "oauth", "MCP_TASKS_OAUTH_ISSUER": ISSUER}, "RESOURCE_URL"),
        ({"MCP_TASKS_AUTH_MODE": "oauth", "MCP_TASKS_RESOURCE_URL": RESOURCE}, "ISSUER"),
        ({"MCP_TASKS_AUTH_MODE": "cookie"}, "none, jwt, iam or oauth"),
    ],
)
def test_unusable_settings_fail_at_start(env: dict[str, str], message: str) -> None:
    with pytest.raises(RuntimeError, match=message):
        AuthSettings.from_env(env)


def test_a_header_value_from_a_client_cannot_break_the_challenge(edge: Edge) -> None:
    from mcp_tasks_aws.edge.gate import Challenge

    response = Challenge(401, "invalid_token", 'bad "quote"\r\nX-Injected: 1').response()
    header = response.headers["www-authenticate"]
    assert "\r" not in header
    assert "\n" not in header
    assert json.loads(response.body)["error"] == "invalid_token"
