"""What the sign-in tests share: an issuer whose tokens are made by another JOSE library
(joserfc, Authlib's), so the project's own verification is checked against an independent
implementation, with an in-memory JWKS endpoint that counts its fetches."""

from __future__ import annotations

import base64
import json
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

from joserfc import jwt
from joserfc.jwk import ECKey, KeySet, OKPKey, RSAKey

from mcp_tasks_aws.edge.jwks import KeysUnavailable

ISSUER = "https://issuer.example"
RESOURCE = "https://mcp.example/mcp"
JWKS_URI = f"{ISSUER}/jwks"


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unsigned(header: dict[str, Any], claims: dict[str, Any], signature: bytes = b"") -> str:
    """A token assembled by hand, for shapes no library will sign (alg none, HS256, ...)."""
    return f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}.{b64(signature)}"


@dataclass
class Issuer:
    """Signing keys, their public JWKS (as served), and a way to mint tokens."""

    keys: dict[str, Any] = field(default_factory=dict)
    published: list[str] = field(default_factory=list)
    fetches: list[str] = field(default_factory=list)
    down: bool = False

    def add_key(self, kid: str, kind: str = "RS256", publish: bool = True) -> Any:
        if kind.startswith(("RS", "PS")):
            key = RSAKey.generate_key(2048, parameters={"kid": kid})
        elif kind == "EdDSA":
            key = OKPKey.generate_key("Ed25519", parameters={"kid": kid})
        else:
            curve = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}[kind]
            key = ECKey.generate_key(curve, parameters={"kid": kid})
        self.keys[kid] = key
        if publish:
            self.published.append(kid)
        return key

    def jwks(self) -> dict[str, Any]:
        keys = KeySet([self.keys[kid] for kid in self.published])
        return dict(keys.as_dict(private=False))

    def fetch(self, url: str) -> dict[str, Any]:
        """Stands in for `jwks.fetch_json`: the JWKS and the issuer's metadata."""
        self.fetches.append(url)
        if self.down:
            raise KeysUnavailable(f"cannot fetch {url}: down")
        if url == JWKS_URI:
            return self.jwks()
        if url in (
            f"{ISSUER}/.well-known/oauth-authorization-server",
            f"{ISSUER}/.well-known/openid-configuration",
        ):
            return {"issuer": ISSUER, "jwks_uri": JWKS_URI}
        raise KeysUnavailable(f"cannot fetch {url}: 404")

    def token(
        self,
        kid: str = "k1",
        alg: str = "RS256",
        header: dict[str, Any] | None = None,
        **claims: Any,
    ) -> str:
        now = int(time.time())
        body: dict[str, Any] = {
            "iss": ISSUER,
            "aud": RESOURCE,
            "sub": "alice",
            "client_id": "app-1",
            "scope": "mcp",
            "iat": now,
            "exp": now + 300,
        }
        body.update(claims)
        for name in [name for name, value in body.items() if value is None]:
            del body[name]
        protected = {"alg": alg, "kid": kid, "typ": "at+jwt", **(header or {})}
        # A header value of None leaves the parameter out (`typ=None`: no typ, as Cognito).
        protected = {name: value for name, value in protected.items() if value is not None}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # joserfc flags EdDSA as deprecated (RFC 9864)
            return jwt.encode(protected, body, self.keys[kid], algorithms=[alg], default_type=None)
