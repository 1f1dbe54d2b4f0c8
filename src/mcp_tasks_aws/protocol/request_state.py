"""Sealing and opening `requestState`, the server state a multi round-trip request carries.

The state comes back from the client, so it is integrity-protected with HMAC-SHA256 under a
secret from configuration, and bound to what it was issued for: the method, the tool or prompt
name, a digest of the arguments, and the caller. It expires. Any mismatch is answered as
invalid params, with one message that does not say which check failed.

Format: ``v1.<base64url(json payload)>.<base64url(mac)>``. The payload is not encrypted: it
holds the answers the client itself gave in earlier rounds, nothing it has not seen.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Any

from mcp_tasks_aws.protocol.errors import InvalidParams

_VERSION = "v1"
_MAX_STATE_CHARS = 64 * 1024


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def digest(value: Any) -> str:
    """A short stable digest of a JSON value (arguments, principal) to bind state to it."""
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return _b64(hashlib.sha256(canonical.encode()).digest()[:16])


class RequestStateCodec:
    """Seals and opens request states with one secret."""

    def __init__(self, secret: bytes, max_age_seconds: int = 3600) -> None:
        if len(secret) < 32:
            raise ValueError("the request-state secret must be at least 32 bytes")
        self._secret = secret
        self._max_age = max_age_seconds

    def _mac(self, body: str) -> bytes:
        return hmac.new(self._secret, f"{_VERSION}.{body}".encode(), hashlib.sha256).digest()

    def seal(self, binding: dict[str, Any], data: dict[str, Any]) -> str:
        payload = {"b": binding, "d": data, "iat": int(time.time())}
        body = _b64(json.dumps(payload, separators=(",", ":")).encode())
        return f"{_VERSION}.{body}.{_b64(self._mac(body))}"

    def open(self, token: str, binding: dict[str, Any]) -> dict[str, Any]:
        """Verify and return the data sealed in `token`; -32602 on any mismatch."""
        invalid = InvalidParams("Invalid requestState")
        if len(token) > _MAX_STATE_CHARS:
            raise invalid
        parts = token.split(".")
        if len(parts) != 3 or parts[0] != _VERSION:
            raise invalid
        _, body, mac = parts
        try:
            given = _unb64(mac)
            payload = json.loads(_unb64(body))
        except ValueError as exc:
            raise invalid from exc
        if not hmac.compare_digest(given, self._mac(body)):
            raise invalid
        if not isinstance(payload, dict) or payload.get("b") != binding:
            raise invalid
        issued = payload.get("iat")
        if not isinstance(issued, int) or time.time() - issued > self._max_age:
            raise InvalidParams("requestState has expired; call again without it")
        data = payload.get("d")
        if not isinstance(data, dict):
            raise invalid
        return data
