"""Settings read from the environment, and loading the configured tools module.

The deployed functions and the embedded stack read the same variables:

| variable | meaning | default |
| --- | --- | --- |
| `MCP_TASKS_TOOLS` | tools module, `package.module` or `package.module:attribute` | `demo` |
| `MCP_TASKS_STATE_SECRET` | secret for `requestState` HMAC (32+ bytes) | required |
| `MCP_TASKS_ALLOWED_ORIGINS` | comma-separated Origin allow-list (DNS rebinding) | none |
| `MCP_TASKS_MAX_BODY_BYTES` | largest accepted request body | 1 MiB |
| `MCP_TASKS_PAGE_SIZE` | tools/prompts per `*/list` page | 50 |
| `MCP_TASKS_LIST_TTL_MS` | how long clients may cache list/discover results | 60000 |
| `MCP_TASKS_TABLE` | DynamoDB task table (unset: no tasks, inline tools only) | unset |
| `MCP_TASKS_STATE_MACHINE_ARN` | Step Functions state machine that runs task legs | unset |
| `MCP_TASKS_RESULT_BUCKET` | S3 bucket for results over the item budget | unset |
| `MCP_TASKS_DEFAULT_TTL_MS` | task retention from creation (`none`: unlimited) | 86400000 |
| `MCP_TASKS_MAX_TTL_MS` | longest retention any task gets (`none`: no cap) | 2592000000 |
| `MCP_TASKS_POLL_INTERVAL_MS` | suggested `tasks/get` interval | 1000 |
| `MCP_TASKS_LISTEN_WINDOW_MS` | longest `subscriptions/listen` window (< API timeout) | 20000 |
| `MCP_TASKS_LISTEN_POLL_MS` | how often a listen window reads the store | 500 |
| `MCP_TASKS_SESSION_TTL_S` | lifetime of a 2025-11-25 session (`Mcp-Session-Id`) | 86400 |

Authentication (`MCP_TASKS_AUTH_MODE` and the OAuth variables) is `auth`, see
`edge.auth_settings`. `demo` and `conformance` are short names for modules shipped with the
package.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field

from mcp_tasks_aws.edge.auth_settings import AuthSettings
from mcp_tasks_aws.tools.registry import ToolSet

BUILTIN_TOOL_MODULES = {
    "demo": "mcp_tasks_aws.fixtures.demo",
    "conformance": "mcp_tasks_aws.fixtures.conformance",
}


@dataclass(frozen=True)
class Settings:
    tools_module: str = "demo"
    state_secret: bytes = b""
    allowed_origins: frozenset[str] = field(default_factory=frozenset)
    max_body_bytes: int = 1024 * 1024
    page_size: int = 50
    list_ttl_ms: int = 60_000
    task_table: str = ""
    state_machine_arn: str = ""
    result_bucket: str = ""
    default_ttl_ms: int | None = 24 * 3600 * 1000
    max_ttl_ms: int | None = 30 * 24 * 3600 * 1000
    poll_interval_ms: int = 1000
    listen_window_ms: int = 20_000
    listen_poll_ms: int = 500
    session_ttl_seconds: int = 24 * 3600
    auth: AuthSettings = field(default_factory=AuthSettings)

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        env = dict(os.environ if env is None else env)
        origins = env.get("MCP_TASKS_ALLOWED_ORIGINS", "")
        return cls(
            tools_module=env.get("MCP_TASKS_TOOLS", "demo"),
            state_secret=env.get("MCP_TASKS_STATE_SECRET", "").encode(),
            allowed_origins=frozenset(o.strip() for o in origins.split(",") if o.strip()),
            max_body_bytes=int(env.get("MCP_TASKS_MAX_BODY_BYTES", 1024 * 1024)),
            page_size=int(env.get("MCP_TASKS_PAGE_SIZE", 50)),
            list_ttl_ms=int(env.get("MCP_TASKS_LIST_TTL_MS", 60_000)),
            task_table=env.get("MCP_TASKS_TABLE", ""),
            state_machine_arn=env.get("MCP_TASKS_STATE_MACHINE_ARN", ""),
            result_bucket=env.get("MCP_TASKS_RESULT_BUCKET", ""),
            default_ttl_ms=_optional_int(env.get("MCP_TASKS_DEFAULT_TTL_MS", "86400000")),
            max_ttl_ms=_optional_int(env.get("MCP_TASKS_MAX_TTL_MS", "2592000000")),
            poll_interval_ms=int(env.get("MCP_TASKS_POLL_INTERVAL_MS", 1000)),
            listen_window_ms=int(env.get("MCP_TASKS_LISTEN_WINDOW_MS", 20_000)),
            listen_poll_ms=int(env.get("MCP_TASKS_LISTEN_POLL_MS", 500)),
            session_ttl_seconds=int(env.get("MCP_TASKS_SESSION_TTL_S", 24 * 3600)),
            auth=AuthSettings.from_env(env),
        )


def _optional_int(raw: str) -> int | None:
    return None if raw.strip().lower() in ("", "none", "null", "unlimited") else int(raw)


def load_toolset(spec: str) -> ToolSet:
    """Import the tools module named by `spec` and return its `ToolSet`."""
    module_name, _, attribute = BUILTIN_TOOL_MODULES.get(spec, spec).partition(":")
    module = importlib.import_module(module_name)
    toolset = getattr(module, attribute or "tools", None)
    if not isinstance(toolset, ToolSet):
        raise RuntimeError(
            f"{module_name} has no ToolSet named {attribute or 'tools'!r} "
            "(set MCP_TASKS_TOOLS to package.module or package.module:attribute)"
        )
    return toolset
