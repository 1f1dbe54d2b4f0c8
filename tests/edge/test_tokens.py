"""edge/tokens.py and edge/jwks.py: what makes an access token good for this resource, and how
the issuer's keys are fetched, cached and refetched."""

from __future__ import annotations

import time
from typing import Any

import pytest

from mcp_tasks_aws.edge import jwks
from mcp_tasks_aws.edge.jwks import JwksCache, KeysUnavailable
from mcp_tasks_aws.edge.tokens import TokenRefused, TokenVerifier, scopes_of
from support.clock import Clock
from support.oauth import ISSUER, JWKS_URI, RESOURCE, Issuer, unsigned

NOW = int(time.time())


def test_a_good_token_names_its_caller_and_scopes(issuer: Issuer, verifier: TokenVerifier) -> None:
    verified = verifier.verify(issuer.token(scope="mcp deploy"))
    assert (verified.issuer, verified.subject, verified.client) == (ISSUER, "alice", "app-1")
    assert verified.scopes == {"mcp", "deploy"}


# The bad tokens of the issue, and their neighbours: each refused with its own reason.
BAD_TOKENS: list[tuple[str, dict[str, Any], str]] = [
    ("wrong-audience", {"aud": "https://other.example/mcp"}, "not meant for this resource"),
    ("audience-list-without-us", {"aud": ["a", "b"]}, "not meant for this resource"),
    ("expired", {"exp": NOW - 3600}, "has expired"),
    ("not-yet-valid", {"nbf": NOW + 3600}, "not valid yet"),
    ("issued-in-the-future", {"iat": NOW + 3600}, "not valid yet"),
    ("other-issuer", {"iss": "https://evil.example"}, "another authorization server"),
    ("no-expiry", {"exp": None}, "no expiry"),
    ("expiry-not-a-number", {"exp": "tomorrow"}, "not a number"),
    ("no-subject", {"sub": None}, "no subject"),
    ("empty-subject", {"sub": ""}, "no subject"),
]


@pytest.mark.parametrize(
    ("claims", "reason"),
    [(claims, reason) for _, claims, reason in BAD_TOKENS],
    ids=[name for name, _, _ in BAD_TOKENS],
)
def test_bad_claims_are_refused_with_a_reason(
    issuer: Issuer, verifier: TokenVerifier, claims: dict[str, Any], reason: str
) -> None:
    with pytest.raises(TokenRefused, match=reason):
        verifier.verify(issuer.token(**claims))


def test_a_wrong_signature_is_refused(issuer: Issuer, verifier: TokenVerifier) -> None:
    issuer.add_key("impostor", publish=False)
    forged = issuer.token("impostor", header={"kid": "k1"})  # claims the published key's id
    with pytest.raises(TokenRefused, match="signature does not verify"):
        verifier.verify(forged)


@pytest.mark.parametrize("alg", ["none", "HS256"])
def test_unsigned_and_symmetric_tokens_are_refused(verifier: TokenVerifier, alg: str) -> None:
    token = unsigned({"alg": alg, "kid": "k1"}, {"iss": ISSUER, "aud": RESOURCE, "sub": "a"})
    with pytest.raises(TokenRefused, match="algorithm is not accepted"):
        verifier.verify(token)


@pytest.mark.parametrize("token", ["not-a-jwt", "a.b.c", "e30.e30.e30"])
def test_a_malformed_token_is_refused(verifier: TokenVerifier, token: str) -> None:
    with pytest.raises(TokenRefused, match="malformed"):
        verifier.verify(token)


def test_a_token_that_is_not_an_access_token_is_refused(
    issuer: Issuer, verifier: TokenVerifier
) -> None:
    with pytest.raises(TokenRefused, match="not an access token"):
        verifier.verify(issuer.token(header={"typ": "id-jag+jwt"}))


def test_clock_skew_within_the_leeway_is_tolerated(issuer: Issuer, verifier: TokenVerifier) -> None:
    now = int(time.time())
    verifier.verify(issuer.token(exp=now - 30, nbf=now + 30, iat=now + 30))


def test_an_unknown_kid_is_refetched_once_then_refused(
    issuer: Issuer, verifier: TokenVerifier, clock: Clock
) -> None:
    # Given the keys were fetched for a first token
    verifier.verify(issuer.token())
    assert issuer.fetches == [JWKS_URI]
    # When a token names a key the issuer does not publish
    issuer.add_key("ghost", publish=False)
    clock.now += 61
    with pytest.raises(TokenRefused, match="unknown"):
        verifier.verify(issuer.token("ghost"))
    # Then the keys were fetched again once, and a second made-up kid soon after fetches nothing
    assert issuer.fetches == [JWKS_URI, JWKS_URI]
    with pytest.raises(TokenRefused, match="unknown"):
        verifier.verify(issuer.token("ghost"))
    assert len(issuer.fetches) == 2


def test_a_rotated_key_is_found_by_the_refetch(
    issuer: Issuer, verifier: TokenVerifier, clock: Clock
) -> None:
    verifier.verify(issuer.token())
    issuer.add_key("k2")  # the issuer rotates: a new key is published
    clock.now += 61
    assert verifier.verify(issuer.token("k2")).subject == "alice"
    assert len(issuer.fetches) == 2


def test_a_failed_refetch_keeps_the_keys_held(
    issuer: Issuer, verifier: TokenVerifier, clock: Clock
) -> None:
    verifier.verify(issuer.token())
    issuer.down = True
    clock.now += 61
    with pytest.raises(TokenRefused, match="unknown"):
        verifier.verify(issuer.token("k1", header={"kid": "k9"}))
    assert verifier.verify(issuer.token()).subject == "alice"


def test_no_keys_at_all_is_an_outage_retried_after_a_pause(issuer: Issuer, clock: Clock) -> None:
    issuer.down = True
    keys = JwksCache(issuer=ISSUER, jwks_uri=JWKS_URI, fetch=issuer.fetch, clock=clock)
    with pytest.raises(KeysUnavailable):
        keys.key_for("k1", "RS256")
    with pytest.raises(KeysUnavailable, match="retry shortly"):
        keys.key_for("k1", "RS256")  # no second fetch right away
    assert len(issuer.fetches) == 1
    issuer.down = False
    clock.now += 5
    assert keys.key_for("k1", "RS256")[0]["kid"] == "k1"


def test_without_kid_only_a_single_fitting_key_is_used(issuer: Issuer, clock: Clock) -> None:
    keys = JwksCache(issuer=ISSUER, jwks_uri=JWKS_URI, fetch=issuer.fetch, clock=clock)
    assert keys.key_for(None, "RS256")[0]["kid"] == "k1"
    issuer.add_key("k2")
    keys = JwksCache(issuer=ISSUER, jwks_uri=JWKS_URI, fetch=issuer.fetch, clock=clock)
    with pytest.raises(jwks.UnknownKey, match="names no signing key"):
        keys.key_for(None, "RS256")


def test_the_jwks_uri_is_discovered_from_the_issuer_metadata(issuer: Issuer) -> None:
    keys = JwksCache(issuer=ISSUER, fetch=issuer.fetch)
    verifier = TokenVerifier(issuer=ISSUER, audiences=[RESOURCE], keys=keys)
    assert verifier.verify(issuer.token()).subject == "alice"
    assert issuer.fetches == [f"{ISSUER}/.well-known/oauth-authorization-server", JWKS_URI]


def test_metadata_naming_another_issuer_is_not_believed() -> None:
    def fetch(url: str) -> dict[str, Any]:
        return {"issuer": "https://evil.example", "jwks_uri": "https://evil.example/jwks"}

    with pytest.raises(KeysUnavailable, match="another issuer"):
        jwks.discover_jwks_uri(ISSUER, fetch)


@pytest.mark.parametrize(
    ("issuer_url", "urls"),
    [
        (
            "https://id.example",
            [
                "https://id.example/.well-known/oauth-authorization-server",
                "https://id.example/.well-known/openid-configuration",
            ],
        ),
        (
            "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_abc",
            [
                "https://cognito-idp.us-east-1.amazonaws.com/.well-known/oauth-authorization-server/us-east-1_abc",
                "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_abc/.well-known/openid-configuration",
            ],
        ),
    ],
)
def test_metadata_urls_follow_rfc_8414_then_oidc(issuer_url: str, urls: list[str]) -> None:
    assert jwks.metadata_urls(issuer_url) == urls


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://id.example/jwks", True),
        ("http://127.0.0.1:9000/jwks", True),
        ("http://localhost:9000/jwks", True),
        ("http://[::1]:9000/jwks", True),
        ("http://id.example/jwks", False),
        ("file:///etc/passwd", False),
        ("ftp://id.example/jwks", False),
    ],
)
def test_keys_come_over_https_or_loopback_http_only(url: str, allowed: bool) -> None:
    if allowed:
        jwks.check_fetchable(url)
    else:
        with pytest.raises(ValueError, match="https only"):
            jwks.check_fetchable(url)


def test_cognito_access_tokens_without_aud_match_a_listed_client_id(
    issuer: Issuer, verifier: TokenVerifier
) -> None:
    token = issuer.token(aud=None, client_id="cognito-app")
    with pytest.raises(TokenRefused, match="aud"):
        verifier.verify(token)
    listed = TokenVerifier(issuer=ISSUER, audiences=["cognito-app"], keys=verifier.keys)
    assert listed.verify(token).client == "cognito-app"


@pytest.mark.parametrize(
    ("claims", "scopes"),
    [
        ({"scope": "a b"}, {"a", "b"}),
        ({"scp": ["a", "b"]}, {"a", "b"}),
        ({"scp": "a"}, {"a"}),
        ({}, set()),
        ({"scope": 7}, set()),
    ],
)
def test_scopes_of_a_token(claims: dict[str, Any], scopes: set[str]) -> None:
    assert scopes_of(claims) == scopes
