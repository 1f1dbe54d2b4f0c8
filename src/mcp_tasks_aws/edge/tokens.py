"""Validating an OAuth access token (a signed JWT) presented to this protected resource.

Owns the decision whether a bearer token is good for this server: its signature against the
issuer's keys (`jwks`), then issuer, token kind (an access token, never an ID token), audience
(RFC 8707: this resource), expiry, not-before and subject; and what a good token grants
(subject, client, scopes).

Invariants:
- the signature is checked before any claim is believed;
- every refusal is a `TokenRefused` whose text is ours and holds nothing of the token, so it
  can go to the client as `error_description` and into the logs;
- a token without a subject is refused: it could not be bound to a caller;
- only access tokens are accepted (`access_token_problem`): an ID token is for the client that
  signed the user in, and its `aud` is that client's id, which an operator may list as an
  audience for access tokens that carry `client_id` instead of `aud` (Amazon Cognito's);
- the token itself is never stored, logged or handed on.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from mcp_tasks_aws.edge import jose
from mcp_tasks_aws.edge.jwks import JwksCache

ACCESS_TOKEN_TYPES = frozenset({"at+jwt", "application/at+jwt", "jwt", "application/jwt"})
"""Header `typ` values an access token may carry (compared case-insensitively; see
`token_type_problem`)."""

_COGNITO_ISSUER = re.compile(
    r"https://cognito-idp(?:-fips)?\.[a-z0-9-]+\.amazonaws\.com(?:\.cn)?/[\w-]+_[0-9A-Za-z]+"
)


def is_cognito_issuer(issuer: str) -> bool:
    """Whether `issuer` names an Amazon Cognito user pool:
    `https://cognito-idp.<region>.amazonaws.com/<pool id>`."""
    return _COGNITO_ISSUER.fullmatch(issuer) is not None


def token_type_problem(typ: Any) -> str | None:
    """Why a JOSE header `typ` says the token is not an access token, or None.

    The rule: no `typ` is accepted (Amazon Cognito, among others, sends none: the claims then
    decide, see `token_use_problem`); so are RFC 9068's `at+jwt` (`application/at+jwt`) and
    the generic `JWT` (`application/jwt`), which most providers put on their access tokens
    (and often on their ID tokens too, so it proves nothing either way). Any other value is
    refused: a `typ` exists to tell kinds of token apart, and one that is neither the generic
    type nor the access-token type names another kind (`id_token+jwt`, `logout+jwt`,
    `secevent+jwt`, `dpop+jwt`, `id-jag+jwt`, a vendor's internal kind, ...).
    """
    if typ is None:
        return None
    if not isinstance(typ, str) or typ.lower() not in ACCESS_TOKEN_TYPES:
        return "the token is not an access token (typ)"
    return None


def token_use_problem(claims: dict[str, Any], issuer: str) -> str | None:
    """Why a token's `token_use` claim says it is not an access token, or None.

    Amazon Cognito marks each token it issues with `token_use` (`access` or `id`) and gives
    both kinds the same header, so for a Cognito issuer the claim is required and must be
    `access`. Other providers rarely send it; where they do, it must say `access` too.
    """
    use = claims.get("token_use")
    if use is None and not is_cognito_issuer(issuer):
        return None
    if use != "access":
        return "the token is not an access token (token_use)"
    return None


class TokenRefused(Exception):
    """The token is not good for this resource; `str(exc)` is the `error_description`."""


@dataclass(frozen=True)
class VerifiedToken:
    """What a valid token vouches for."""

    issuer: str
    subject: str
    client: str
    scopes: frozenset[str]


def scopes_of(claims: dict[str, Any]) -> frozenset[str]:
    """Granted scopes: `scope` (space-separated, RFC 9068) or `scp` (a list or a string)."""
    value = claims.get("scope", claims.get("scp"))
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, list):
        return frozenset(str(item) for item in value)
    return frozenset()


def _number(claims: dict[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TokenRefused(f"the token's {name} claim is not a number")
    return float(value)


class TokenVerifier:
    """Checks bearer tokens for one resource against one issuer."""

    def __init__(
        self,
        *,
        issuer: str,
        audiences: Iterable[str],
        keys: JwksCache,
        leeway_seconds: float = 60.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.issuer = issuer
        self.audiences = frozenset(audiences)
        self.keys = keys
        self.leeway_seconds = leeway_seconds
        self._clock = clock

    def verify(self, token: str) -> VerifiedToken:
        try:
            jws = jose.parse(token)
            problem = token_type_problem(jws.header.get("typ"))
            if problem is not None:
                raise TokenRefused(problem)
            jwk, key = self.keys.key_for(jws.kid, jws.alg)
            jose.verify(jws, jwk, key)
            claims = jws.claims()
        except jose.JoseError as exc:
            raise TokenRefused(str(exc)) from exc
        return self._check_claims(claims)

    def _check_claims(self, claims: dict[str, Any]) -> VerifiedToken:
        if claims.get("iss") != self.issuer:
            raise TokenRefused("the token was issued by another authorization server (iss)")
        # Before the audience: an ID token's `aud` (its client's id) may well be listed.
        problem = token_use_problem(claims, self.issuer)
        if problem is not None:
            raise TokenRefused(problem)
        if not self._audience_matches(claims):
            raise TokenRefused("the token is not meant for this resource (aud)")
        now = self._clock()
        expires = _number(claims, "exp")
        if expires is None:
            raise TokenRefused("the token has no expiry (exp)")
        if now >= expires + self.leeway_seconds:
            raise TokenRefused("the token has expired")
        not_before = _number(claims, "nbf")
        if not_before is not None and now < not_before - self.leeway_seconds:
            raise TokenRefused("the token is not valid yet (nbf)")
        issued = _number(claims, "iat")
        if issued is not None and now < issued - self.leeway_seconds:
            raise TokenRefused("the token is not valid yet (issued in the future)")
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject:
            raise TokenRefused("the token names no subject (sub)")
        client = claims.get("client_id") or claims.get("azp") or ""
        return VerifiedToken(
            issuer=self.issuer,
            subject=subject,
            client=str(client),
            scopes=scopes_of(claims),
        )

    def _audience_matches(self, claims: dict[str, Any]) -> bool:
        audience = claims.get("aud")
        if audience is None:
            # Tokens with no `aud` at all (Amazon Cognito's access tokens without resource
            # binding) match only when the operator listed their client id as an audience,
            # as API Gateway's JWT authorizer does.
            client = claims.get("client_id")
            return isinstance(client, str) and client in self.audiences
        values = [audience] if isinstance(audience, str) else audience
        if not isinstance(values, list):
            return False
        return any(isinstance(value, str) and value in self.audiences for value in values)
