"""How callers authenticate: `AuthMode` and the OAuth protected resource's settings.

Plain data read from the environment (no imports beyond the standard library), so `config`
can carry it in `Settings` and `edge.gate` can act on it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

AuthModeName = Literal["none", "jwt", "iam", "oauth"]
WELL_KNOWN = "/.well-known/oauth-protected-resource"


def split_list(raw: str) -> tuple[str, ...]:
    """The items of a list variable, separated by commas or white space."""
    return tuple(part for part in re.split(r"[,\s]+", raw) if part)


@dataclass(frozen=True)
class AuthSettings:
    """How callers authenticate (what each mode means: `edge.gate`), from the environment.

    | variable | meaning | default |
    | --- | --- | --- |
    | `MCP_TASKS_AUTH_MODE` | `none`, `jwt`, `iam` or `oauth` | `none` |
    | `MCP_TASKS_RESOURCE_URL` | this endpoint's canonical URL (RFC 8707 resource) | required |
    | `MCP_TASKS_OAUTH_ISSUER` | the authorization server's issuer identifier | required |
    | `MCP_TASKS_OAUTH_AUDIENCE` | accepted `aud` values (comma-separated) | the resource URL |
    | `MCP_TASKS_OAUTH_JWKS_URI` | where the issuer's keys are | from its metadata |
    | `MCP_TASKS_OAUTH_AUTHORIZATION_SERVERS` | advertised authorization servers | the issuer |
    | `MCP_TASKS_OAUTH_SCOPES` | scopes every request needs | none |
    | `MCP_TASKS_OAUTH_JWKS_REFRESH_SECONDS` | least time between two key fetches | 60 |
    | `MCP_TASKS_OAUTH_METADATA_URL` | the metadata URL the challenge names | RFC 9728's |
    """

    mode: AuthModeName = "none"
    resource: str = ""
    issuer: str = ""
    audiences: tuple[str, ...] = ()
    jwks_uri: str = ""
    authorization_servers: tuple[str, ...] = ()
    scopes: tuple[str, ...] = ()
    jwks_refresh_seconds: float = 60.0
    advertised_metadata_url: str = ""
    """Where clients read the metadata when RFC 9728's URL is not routable (a REST API
    serves only under its stage); empty: RFC 9728's URL."""

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> AuthSettings:
        env = dict(os.environ if env is None else env)
        mode = env.get("MCP_TASKS_AUTH_MODE", "none").strip().lower() or "none"
        if mode not in ("none", "jwt", "iam", "oauth"):
            raise RuntimeError(f"MCP_TASKS_AUTH_MODE={mode!r}: use none, jwt, iam or oauth")
        resource = env.get("MCP_TASKS_RESOURCE_URL", "").strip()
        issuer = env.get("MCP_TASKS_OAUTH_ISSUER", "").strip()
        audiences = split_list(env.get("MCP_TASKS_OAUTH_AUDIENCE", "")) or (
            (resource,) if resource else ()
        )
        servers = split_list(env.get("MCP_TASKS_OAUTH_AUTHORIZATION_SERVERS", "")) or (
            (issuer,) if issuer else ()
        )
        settings = cls(
            mode=mode,  # type: ignore[arg-type]  # checked just above
            resource=resource,
            issuer=issuer,
            audiences=audiences,
            jwks_uri=env.get("MCP_TASKS_OAUTH_JWKS_URI", "").strip(),
            authorization_servers=servers,
            scopes=split_list(env.get("MCP_TASKS_OAUTH_SCOPES", "")),
            jwks_refresh_seconds=float(env.get("MCP_TASKS_OAUTH_JWKS_REFRESH_SECONDS", 60)),
            advertised_metadata_url=env.get("MCP_TASKS_OAUTH_METADATA_URL", "").strip(),
        )
        settings.check()
        return settings

    def check(self) -> None:
        """Refuse an OAUTH configuration that could not protect anything."""
        if self.mode != "oauth":
            return
        for name, value in (
            ("MCP_TASKS_RESOURCE_URL", self.resource),
            ("MCP_TASKS_OAUTH_ISSUER", self.issuer),
        ):
            if not value:
                raise RuntimeError(f"AuthMode OAUTH needs {name}")
        if (
            urlsplit(self.resource).scheme not in ("https", "http")
            or urlsplit(self.resource).fragment
        ):
            raise RuntimeError("MCP_TASKS_RESOURCE_URL must be an absolute URL without fragment")

    @property
    def metadata_paths(self) -> frozenset[str]:
        """Where the protected-resource metadata is served: bare and path-suffixed."""
        path = urlsplit(self.resource).path.rstrip("/")
        return frozenset({WELL_KNOWN, f"{WELL_KNOWN}{path}"})

    @property
    def metadata_url(self) -> str:
        """The `resource_metadata` URL of the challenge (RFC 9728 section 3.1 form)."""
        if self.advertised_metadata_url:
            return self.advertised_metadata_url
        parts = urlsplit(self.resource)
        return f"{parts.scheme}://{parts.netloc}{WELL_KNOWN}{parts.path.rstrip('/')}"
