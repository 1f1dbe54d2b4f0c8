"""Sealed tokens: small JSON payloads a client carries for the server and hands back unchanged.

The 2025-11-25 era needs server state that travels with the client (the `Mcp-Session-Id`, the
ids of server->client requests, SSE event ids): each is sealed here, so any function instance
can open it without a lookup, and nobody can forge or alter one.

Invariants:
- integrity: a truncated HMAC-SHA256 (128 bits) over the kind and the payload, accepted in
  its one canonical encoding only, under a key derived from the deployment's state secret for
  this use alone (a token sealed here never opens as a `requestState`, nor the other way
  round);
- a token opens only as the kind it was sealed as (a request id is never accepted as a
  session), and only before its expiry;
- payloads are signed, not encrypted: they hold what the client already knows or ids of its
  own, never secrets.

Format: ``<kind>.<base64url(json payload)>.<base64url(mac)>``: visible ASCII only, as an
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
from typing import Any

_MAC_BYTES = 16
_MAX_TOKEN_CHARS = 8 * 1024
_KIND = re.compile(r"[a-z][a-z0-9]{0,7}")


class Unsealable(Exception):
    """The token is malformed, forged, of another kind, or expired (callers do not say which)."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def fingerprint(value: str) -> str:
    """A short one-way digest to bind a token to something (a principal) without showing it."""
    return _b64(hashlib.sha256(value.encode()).digest()[:12])


class Sealer:
    """Seals and opens tokens with one key, derived from the state secret and a purpose."""

    def __init__(self, secret: bytes, purpose: str, clock: Callable[[], float] = time.time) -> None:
        if len(secret) < 32:
            raise ValueError("the state secret must be at least 32 bytes")
        self._key = hmac.new(secret, f"mcp-tasks-aws/{purpose}".encode(), hashlib.sha256).digest()
        self._clock = clock

    def _mac(self, kind: str, body: str) -> bytes:
        return hmac.new(self._key, f"{kind}.{body}".encode(), hashlib.sha256).digest()[:_MAC_BYTES]

    def now(self) -> int:
        return int(self._clock())

    def seal(self, kind: str, payload: dict[str, Any], *, expires_at: int) -> str:
        if not _KIND.fullmatch(kind):
            raise ValueError(f"invalid token kind {kind!r}")
        body = _b64(json.dumps({**payload, "exp": expires_at}, separators=(",", ":")).encode())
        return f"{kind}.{body}.{_b64(self._mac(kind, body))}"

    def open(self, kind: str, token: str) -> dict[str, Any]:
        """The payload sealed as `kind` in `token`, with its expiry as `exp`; Unsealable
        otherwise (malformed, forged, another kind, or expired)."""
        if not isinstance(token, str) or len(token) > _MAX_TOKEN_CHARS:
            raise Unsealable()
        parts = token.split(".")
        if len(parts) != 3 or parts[0] != kind:
            raise Unsealable()
        _, body, mac = parts
        # The MAC is compared in its one canonical spelling: another encoding of the same
        # bytes (different padding bits) would make the token malleable.
        if not hmac.compare_digest(mac.encode(), _b64(self._mac(kind, body)).encode()):
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
