"""AuthMode for the embedded stack: for AuthMode OAUTH without an issuer of one's own, the local
authorization server (`local.oauth_server`) started next to the stack, and the variables that
point the API function at it. Authlib and Flask are imported only then.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_tasks_aws.edge.auth_settings import split_list

if TYPE_CHECKING:
    from mcp_tasks_aws.local.oauth_server import LocalAuthorizationServer


AUTH_KEYS = (
    "MCP_TASKS_AUTH_MODE",
    "MCP_TASKS_RESOURCE_URL",
    "MCP_TASKS_OAUTH_ISSUER",
    "MCP_TASKS_OAUTH_AUDIENCE",
    "MCP_TASKS_OAUTH_JWKS_URI",
    "MCP_TASKS_OAUTH_AUTHORIZATION_SERVERS",
    "MCP_TASKS_OAUTH_SCOPES",
)
"""The variables of `edge.auth_settings.AuthSettings`."""


def oauth_for_stack(
    env: dict[str, str], resource: str
) -> tuple[dict[str, str], LocalAuthorizationServer | None]:
    """The auth variables for an embedded stack serving `resource`, and the local
    authorization server started for it (AuthMode OAUTH without an issuer of one's own)."""
    values = {key: env.get(key, "") for key in AUTH_KEYS}
    values["MCP_TASKS_AUTH_MODE"] = (values["MCP_TASKS_AUTH_MODE"] or "none").lower()
    if values["MCP_TASKS_AUTH_MODE"] != "oauth":
        return values, None
    values["MCP_TASKS_RESOURCE_URL"] = values["MCP_TASKS_RESOURCE_URL"] or resource
    if values["MCP_TASKS_OAUTH_ISSUER"]:
        return values, None
    from mcp_tasks_aws.config import load_toolset
    from mcp_tasks_aws.local.oauth_server import DEFAULT_SCOPES, LocalAuthorizationServer

    # The server grants what the resource asks for: its own scopes and every tool's.
    toolset = load_toolset(env.get("MCP_TASKS_TOOLS") or "demo")
    scopes = {*DEFAULT_SCOPES, *split_list(values["MCP_TASKS_OAUTH_SCOPES"])}
    scopes |= {scope for spec in toolset.tools.values() for scope in spec.scopes}
    server = LocalAuthorizationServer(
        values["MCP_TASKS_RESOURCE_URL"], scopes=tuple(sorted(scopes))
    )
    server.start()
    values["MCP_TASKS_OAUTH_ISSUER"] = server.issuer
    values["MCP_TASKS_OAUTH_JWKS_URI"] = f"{server.issuer}/jwks"
    return values, server
