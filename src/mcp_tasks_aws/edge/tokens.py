"""Validating an OAuth access token (a signed JWT) presented to this protected resource.

Owns the decision whether a bearer token is good for this server: its signature against the
issuer's keys (`jwks`), then issuer, audience (RFC 8707: this resource), expiry, not-before,
subject and token type; and what a good token grants (subject, client, scopes).

Invariants:
- the signature is checked before any claim is believed;
- every refusal is a `TokenRefused` whose text is ours and holds nothing of the token, so it
  can go to the client as `error_description` and into the logs;
- a token without a subject is refused: it could not be bound to a caller;
- the token itself is never stored, logged or handed on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from mcp_tasks_aws.edge import jose
from mcp_tasks_aws.edge.jwks import JwksCache

# RFC 9068 access tokens say `at+jwt`; plain `JWT` (or no typ) is what most providers send.
_ACCEPTED_TYPES = {"jwt", "at+jwt", "application/at+jwt"}


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
            typ = jws.header.get("typ")
            if typ is not None and str(typ).lower() not in _ACCEPTED_TYPES:
                raise TokenRefused("the token is not an access token (typ)")
            jwk, key = self.keys.key_for(jws.kid, jws.alg)
            jose.verify(jws, jwk, key)
            claims = jws.claims()
        except jose.JoseError as exc:
            raise TokenRefused(str(exc)) from exc
        return self._check_claims(claims)

    def _check_claims(self, claims: dict[str, Any]) -> VerifiedToken:
        if claims.get("iss") != self.issuer:
            raise TokenRefused("the token was issued by another authorization server (iss)")
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
