"""The 2025-11-25 (legacy) wire: sessions as sealed tokens, the handshake's params, result shapes.

A legacy session is stateless on the server: its `Mcp-Session-Id` is a sealed token (see
`protocol.sealing`) carrying the negotiated version, the capabilities the client declared at
`initialize` and a fingerprint of the caller. Any function instance opens it; only what must
change after `initialize` (the log level, the end of the session) is stored, by
`server.legacy.sessions`.

Invariants:
- a session opens only for the caller it was issued to; for anyone else it is unknown (404),
  exactly like a forged, expired or ended one;
- the capabilities that govern a session are the ones declared at `initialize`, never a
  later request's;
- results sent to a legacy client carry no 2026-07-28-only fields (`resultType`, `ttlMs`,
  `cacheScope`).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from mcp_tasks_aws.protocol.errors import InvalidParams, SessionNotFound
from mcp_tasks_aws.protocol.models import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    LOG_LEVEL_KEY,
    MAX_CAPABILITIES_CHARS,
    PROTOCOL_VERSION_KEY,
    Implementation,
    LogLevel,
    WireModel,
    capabilities_chars,
)
from mcp_tasks_aws.protocol.sealing import Sealer, Unsealable, fingerprint

_SESSION_KIND = "s1"
_MODERN_ONLY_FIELDS = ("resultType", "ttlMs", "cacheScope")
_ENVELOPE_KEYS = (PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, LOG_LEVEL_KEY)
_SESSION_CAPABILITIES = ("elicitation", "sampling", "roots", "tasks", "experimental")


@dataclass(frozen=True)
class LegacySession:
    """What a legacy session's token carries."""

    sid: str
    version: str
    capabilities: dict[str, Any]
    caller: str
    """Fingerprint of the principal the session was issued to."""
    expires_at: int


class SessionCodec:
    """Issues and opens `Mcp-Session-Id` tokens."""

    def __init__(self, sealer: Sealer, ttl_seconds: int = 24 * 3600) -> None:
        self.sealer = sealer
        self.ttl_seconds = ttl_seconds

    def issue(
        self, version: str, capabilities: dict[str, Any], principal: str
    ) -> tuple[str, LegacySession]:
        if capabilities_chars(capabilities) > MAX_CAPABILITIES_CHARS:
            raise InvalidParams(
                f"capabilities are too large (over {MAX_CAPABILITIES_CHARS} characters)"
            )
        session = LegacySession(
            sid=secrets.token_urlsafe(16),
            version=version,
            capabilities=capabilities,
            caller=fingerprint(principal),
            expires_at=self.sealer.now() + self.ttl_seconds,
        )
        payload = {"i": session.sid, "v": version, "c": capabilities, "p": session.caller}
        return self.sealer.seal(_SESSION_KIND, payload, expires_at=session.expires_at), session

    def open(self, token: str, principal: str) -> LegacySession:
        """The session `token` names, for `principal`; SessionNotFound (404) otherwise."""
        try:
            payload = self.sealer.open(_SESSION_KIND, token.strip())
            session = LegacySession(
                sid=str(payload["i"]),
                version=str(payload["v"]),
                capabilities=dict(payload["c"]),
                caller=str(payload["p"]),
                expires_at=int(payload["exp"]),
            )
        except (Unsealable, KeyError, TypeError, ValueError) as exc:
            raise SessionNotFound("Session not found: initialize a new session") from exc
        # Another caller's session answers exactly like an unknown one.
        if session.caller != fingerprint(principal):
            raise SessionNotFound("Session not found: initialize a new session")
        return session


# -- params of the methods only the legacy era has ---------------------------------------------


class InitializeParams(WireModel):
    protocol_version: str = Field(min_length=1, max_length=64)
    capabilities: dict[str, Any]
    client_info: Implementation


class SetLevelParams(WireModel):
    level: LogLevel


class SubscribeParams(WireModel):
    uri: str = Field(min_length=1, max_length=2048)


def session_capabilities(declared: dict[str, Any]) -> dict[str, Any]:
    """What a session keeps of the capabilities declared at `initialize`: the 2025-11-25 ones.

    `extensions` is a 2026-07-28 field: a legacy client cannot opt in to one through it.
    """
    return {k: v for k, v in declared.items() if k in _SESSION_CAPABILITIES and isinstance(v, dict)}


def envelope(
    session: LegacySession | None,
    client_meta: Any,
    *,
    log_level: str | None = None,
    version: str,
) -> dict[str, Any]:
    """The 2026-07-28 `_meta` a legacy request is served with: what its session declared.

    The client's own `_meta` keys (a `progressToken`) are kept; envelope keys it may have
    sent are replaced, so capabilities always come from the session.
    """
    meta = client_meta_of(client_meta)
    meta[PROTOCOL_VERSION_KEY] = session.version if session is not None else version
    meta[CLIENT_CAPABILITIES_KEY] = session.capabilities if session is not None else {}
    if log_level is not None:
        meta[LOG_LEVEL_KEY] = log_level
    return meta


def client_meta_of(meta: Any) -> dict[str, Any]:
    """A request's `_meta` without the envelope keys (what the client itself put there)."""
    if not isinstance(meta, dict):
        return {}
    return {k: v for k, v in meta.items() if k not in _ENVELOPE_KEYS}


# -- shapes -------------------------------------------------------------------------------------


def legacy_result(result: dict[str, Any]) -> dict[str, Any]:
    """A 2026-07-28 result as a 2025-11-25 client expects it (modern-only fields dropped)."""
    return {k: v for k, v in result.items() if k not in _MODERN_ONLY_FIELDS}


def legacy_capabilities(modern: dict[str, Any]) -> dict[str, Any]:
    """The `initialize` capabilities for what `server/discover` advertises.

    Extensions are a 2026-07-28 concept, and list-changed notifications would need a
    standalone GET stream, which this server does not keep open: both are left out.
    """
    capabilities: dict[str, Any] = {}
    for name, value in modern.items():
        if name == "extensions":
            continue
        if isinstance(value, dict):
            value = {k: v for k, v in value.items() if k != "listChanged"}
        capabilities[name] = value
    return capabilities
