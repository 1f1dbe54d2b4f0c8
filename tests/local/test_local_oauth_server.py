"""local/oauth_server.py: the embedded stack's authorization server refuses what a real one
would (no PKCE, another resource, a reused code or refresh token, a foreign redirect)."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_tasks_aws.local.oauth_server import LocalAuthorizationServer

RESOURCE = "http://127.0.0.1:9/mcp"
REDIRECT = "http://localhost:33418/callback"
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_NO_REDIRECT = urllib.request.build_opener(_NoRedirect, urllib.request.ProxyHandler({}))


@pytest.fixture(scope="module")
def server() -> Iterator[LocalAuthorizationServer]:
    running = LocalAuthorizationServer(RESOURCE, scopes=("deploy", "mcp")).start()
    try:
        yield running
    finally:
        running.stop()


def post(url: str, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url, data=urllib.parse.urlencode(form).encode())
    try:
        with _OPENER.open(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def authorize(
    server: LocalAuthorizationServer,
    client_id: str,
    *,
    redirect_uri: str = REDIRECT,
    challenge: str | None = None,
    resource: str = RESOURCE,
    user: str = "alice",
) -> tuple[int, str]:
    """Submit the sign-in form; (status, Location)."""
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "state": "s1",
        "scope": "mcp",
        "resource": resource,
    }
    if challenge is not None:
        query |= {"code_challenge": challenge, "code_challenge_method": "S256"}
    url = f"{server.issuer}/authorize?{urllib.parse.urlencode(query)}"
    data = urllib.parse.urlencode({"username": user, "decision": "allow"}).encode()
    try:
        with _NO_REDIRECT.open(urllib.request.Request(url, data=data), timeout=10) as response:
            return response.status, ""
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("location") or ""


def code_of(location: str) -> str:
    return urllib.parse.parse_qs(urllib.parse.urlsplit(location).query)["code"][0]


def test_metadata_and_keys_are_published(server: LocalAuthorizationServer) -> None:
    with _OPENER.open(f"{server.issuer}/.well-known/oauth-authorization-server") as response:
        metadata = json.loads(response.read())
    assert metadata["issuer"] == server.issuer
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert metadata["authorization_response_iss_parameter_supported"] is True
    with _OPENER.open(metadata["jwks_uri"]) as response:
        (key,) = json.loads(response.read())["keys"]
    assert key["kty"] == "RSA"
    assert "d" not in key  # the public half only


def test_a_full_code_flow_issues_a_token_for_the_resource_and_rotates_refresh(
    server: LocalAuthorizationServer,
) -> None:
    client = server.register_client([REDIRECT])
    verifier, challenge = pkce()
    status, location = authorize(server, client.client_id, challenge=challenge)
    assert status == 302
    assert f"iss={urllib.parse.quote(server.issuer, safe='')}" in location  # RFC 9207
    form = {
        "grant_type": "authorization_code",
        "code": code_of(location),
        "redirect_uri": REDIRECT,
        "client_id": client.client_id,
        "code_verifier": verifier,
        "resource": RESOURCE,
    }
    status, token = post(f"{server.issuer}/token", form)
    assert status == 200, token
    payload = token["access_token"].split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert (claims["aud"], claims["sub"], claims["client_id"]) == (
        RESOURCE,
        "alice",
        client.client_id,
    )
    # The code is good once
    assert post(f"{server.issuer}/token", form)[0] == 400
    # A refresh token is good once too: each refresh rotates it
    refresh = {"grant_type": "refresh_token", "client_id": client.client_id}
    status, renewed = post(
        f"{server.issuer}/token", refresh | {"refresh_token": token["refresh_token"]}
    )
    assert status == 200, renewed
    assert renewed["refresh_token"] != token["refresh_token"]
    reused = post(f"{server.issuer}/token", refresh | {"refresh_token": token["refresh_token"]})
    assert reused[0] == 400


def test_pkce_is_required(server: LocalAuthorizationServer) -> None:
    client = server.register_client([REDIRECT])
    status, location = authorize(server, client.client_id, challenge=None)
    assert "error=invalid_request" in location or status == 400


def test_a_wrong_code_verifier_is_refused(server: LocalAuthorizationServer) -> None:
    client = server.register_client([REDIRECT])
    _, challenge = pkce()
    _, location = authorize(server, client.client_id, challenge=challenge)
    form = {
        "grant_type": "authorization_code",
        "code": code_of(location),
        "redirect_uri": REDIRECT,
        "client_id": client.client_id,
        "code_verifier": pkce()[0],
    }
    status, answer = post(f"{server.issuer}/token", form)
    assert (status, answer["error"]) == (400, "invalid_grant")


def test_another_resource_is_an_invalid_target(server: LocalAuthorizationServer) -> None:
    client = server.register_client([REDIRECT])
    _, challenge = pkce()
    status, _ = authorize(
        server, client.client_id, challenge=challenge, resource="https://elsewhere/mcp"
    )
    assert status == 400


@pytest.mark.parametrize(
    ("redirect", "accepted"),
    [
        ("http://localhost:40000/callback", True),  # any loopback port (RFC 8252)
        ("http://localhost:40000/other", False),
        ("http://evil.example:33418/callback", False),
    ],
)
def test_loopback_redirects_match_on_any_port_only(
    server: LocalAuthorizationServer, redirect: str, accepted: bool
) -> None:
    client = server.register_client([REDIRECT])
    _, challenge = pkce()
    status, location = authorize(
        server, client.client_id, redirect_uri=redirect, challenge=challenge
    )
    if accepted:
        assert status == 302
        assert location.startswith(redirect)
    else:
        assert not location.startswith(redirect)


def test_dynamic_registration_of_a_public_client(server: LocalAuthorizationServer) -> None:
    body = json.dumps(
        {
            "redirect_uris": [REDIRECT],
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
            "client_name": "test",
        }
    ).encode()
    request = urllib.request.Request(
        f"{server.issuer}/register", data=body, headers={"content-type": "application/json"}
    )
    with _OPENER.open(request) as response:
        registered = json.loads(response.read())
    assert response.status == 201
    assert registered["client_id"]
    assert registered.get("client_secret") is None
