"""Sealed tokens: small JSON payloads a client carries for the server and hands back unchanged.

The 2025-11-25 era needs server state that travels with the client (the `Mcp-Session-Id`, the
ids of server->client requests, SSE event ids): each is sealed here, so any function instance
can open it without a lookup, and nobody can forge or alter one.

Invariants:
- integrity: a truncated HMAC-SHA256 (128 bits) over the kind and the payload, accepted in
  its one canonical encoding only, under a key derived from the deployment's state secret for
  this use alone (a token sealed here never opens as a `requestState`, nor the other way
  round);
- binding to the deployment (`audience`, in the MAC): a token one stack sealed does not open
  on another that shares its secret;
- a token opens only as the kind it was sealed as (a request id is never accepted as a
  session), and only before its expiry;
- rotation: tokens are sealed with the current secret and open under any secret the source
  still accepts (the current and the previous one during a rotation). Each token names the key
  that sealed it (`kid`, derived from the secret and the purpose); an unknown `kid` makes the
  sealer ask its source once more (another function may have seen the rotation first), as
  `request_state` does;
- payloads are signed, not encrypted: they hold what the client already knows or ids of its
  own, never secrets.

Format: ``<kind>.<kid>.<base64url(json payload)>.<base64url(mac)>``: visible ASCII only, as an
`Mcp-Session-Id` must be.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp_tasks_aws.protocol.request_state import DerivedKeys, SecretSource

_MAC_BYTES = 16
_MAX_TOKEN_CHARS = 8 * 1024
_KIND = re.compile(r"[a-z][a-z0-9]{0,7}")
_KID_CHARS = 8


class Unsealable(Exception):
    """The token is malformed, forged, of another kind, or expired (callers do not say which)."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def fingerprint(value: str) -> str:
    """A short one-way digest to bind a token to something (a principal) without showing it."""
    return _b64(hashlib.sha256(value.encode()).digest()[:12])


@dataclass(frozen=True)
class _Key:
    kid: str
    mac: bytes


def _derive(secret: bytes, purpose: str) -> _Key:
    mac = hmac.new(secret, f"mcp-tasks-aws/{purpose}".encode(), hashlib.sha256).digest()
    kid = hmac.new(secret, f"mcp-tasks-aws/{purpose}/kid".encode(), hashlib.sha256).digest()
    return _Key(kid=_b64(kid)[:_KID_CHARS], mac=mac)


class Sealer:
    """Seals and opens tokens with keys derived from the state secrets and a purpose, for one
    deployment (`audience`)."""

    def __init__(
        self,
        secrets: SecretSource | bytes,
        purpose: str,
        clock: Callable[[], float] = time.time,
        *,
        audience: str = "",
    ) -> None:
        self._keys = DerivedKeys(secrets, lambda secret: _derive(secret, purpose))
        self._audience = audience
        self._clock = clock

    def _mac(self, key: _Key, kind: str, body: str) -> str:
        message = f"{self._audience}\x00{kind}.{key.kid}.{body}".encode()
        return _b64(hmac.new(key.mac, message, hashlib.sha256).digest()[:_MAC_BYTES])

    def now(self) -> int:
        return int(self._clock())

    def seal(self, kind: str, payload: dict[str, Any], *, expires_at: int) -> str:
        if not _KIND.fullmatch(kind):
            raise ValueError(f"invalid token kind {kind!r}")
        key = self._keys.current()[0]
        body = _b64(json.dumps({**payload, "exp": expires_at}, separators=(",", ":")).encode())
        return f"{kind}.{key.kid}.{body}.{self._mac(key, kind, body)}"

    def open(self, kind: str, token: str) -> dict[str, Any]:
        """The payload sealed as `kind` in `token`, with its expiry as `exp`; Unsealable
        otherwise (malformed, forged, another kind, or expired)."""
        if not isinstance(token, str) or len(token) > _MAX_TOKEN_CHARS:
            raise Unsealable()
        parts = token.split(".")
        if len(parts) != 4 or parts[0] != kind or len(parts[1]) != _KID_CHARS:
            raise Unsealable()
        _, kid, body, mac = parts
        key = self._keys.named(kid)
        # The MAC is compared in its one canonical spelling: another encoding of the same
        # bytes (different padding bits) would make the token malleable.
        if key is None or not hmac.compare_digest(
            mac.encode(), self._mac(key, kind, body).encode()
        ):
            raise Unsealable()
        try:
            payload = json.loads(_unb64(body))
        except (ValueError, binascii.Error) as exc:
            raise Unsealable() from exc
        if not isinstance(payload, dict):
            raise Unsealable()
        expires = payload.get("exp")
        if not isinstance(expires, int) or self.now() >= expires:
            raise Unsealable()
        return payload
