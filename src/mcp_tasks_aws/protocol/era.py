"""Which protocol era a request belongs to, and the versions each era speaks.

The 2026-07-28 versioning page names two eras: *modern* (per-request `_meta`, no handshake:
2026-07-28 and later) and *legacy* (the `initialize` handshake and sessions: 2025-11-25 and
earlier). A *dual-era* server, as this one is, decides per request:

- modern: `params._meta` carries `io.modelcontextprotocol/protocolVersion`, or the
  `MCP-Protocol-Version` header names a modern revision;
- legacy: everything else (`initialize`, requests inside a legacy session, and requests that
  carry neither, which then need a session).

This module only classifies; the method table (`server.methods.McpServer`) is keyed by
(era, method), so no handler ever asks which era it is in.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from mcp_tasks_aws.protocol.names import PROTOCOL_VERSION_KEY

MODERN_VERSIONS = ("2026-07-28",)
LEGACY_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")
"""Newest first: an `initialize` asking for one of these is answered with it."""
LATEST_LEGACY = LEGACY_VERSIONS[0]


class Era(StrEnum):
    MODERN = "modern"
    LEGACY = "legacy"


def negotiate(requested: object) -> str:
    """The legacy version to answer an `initialize` with: the one asked, else the latest."""
    return (
        requested if isinstance(requested, str) and requested in LEGACY_VERSIONS else LATEST_LEGACY
    )


def era_of(params: dict[str, Any] | None, version_header: str | None) -> Era:
    """The era of a message from its params and its `MCP-Protocol-Version` header."""
    meta = (params or {}).get("_meta")
    if isinstance(meta, dict) and PROTOCOL_VERSION_KEY in meta:
        return Era.MODERN
    if version_header is not None and version_header.strip() in MODERN_VERSIONS:
        return Era.MODERN
    return Era.LEGACY
