"""Settings read from the environment, and loading the configured tools module.

The deployed functions and the embedded stack read the same variables:

| variable | meaning | default |
| --- | --- | --- |
| `MCP_TASKS_TOOLS` | tools module (`package.module[:attribute]`) or declaration file | `demo` |
| `MCP_TASKS_STATE_SECRET_ARN` | Secrets Manager secret signing `requestState` (deployed) | unset |
| `MCP_TASKS_STATE_SECRET` | that secret's value, 32+ bytes (embedded stack, tests) | unset |
| `MCP_TASKS_DEPLOYMENT_ID` | binds `requestState` to one deployment (the stack id) | empty |
| `MCP_TASKS_ALLOWED_ORIGINS` | comma-separated Origin allow-list (DNS rebinding) | none |
| `MCP_TASKS_MAX_BODY_BYTES` | largest accepted request body | 1 MiB |
| `MCP_TASKS_PAGE_SIZE` | tools/prompts per `*/list` page | 50 |
| `MCP_TASKS_LIST_TTL_MS` | how long clients may cache list/discover results | 60000 |
| `MCP_TASKS_TABLE` | DynamoDB task table (unset: no tasks, inline tools only) | unset |
| `MCP_TASKS_STATE_MACHINE_ARN` | Step Functions state machine that runs task legs | unset |
| `MCP_TASKS_RESULT_BUCKET` | S3 bucket for results over the item budget | unset |
| `MCP_TASKS_DEFAULT_TTL_MS` | task retention from creation (`none`: unlimited) | 86400000 |
| `MCP_TASKS_MAX_TTL_MS` | longest retention any task gets (`none`: no cap) | 2592000000 |
| `MCP_TASKS_POLL_INTERVAL_MS` | suggested `tasks/get` interval for a new task | 500 |
| `MCP_TASKS_MAX_POLL_INTERVAL_MS` | longest suggested interval, as a task ages | 10000 |
| `MCP_TASKS_WORKER_FUNCTION` | worker to invoke for direct first legs (unset: none) | unset |
| `MCP_TASKS_LISTEN_WINDOW_MS` | longest `subscriptions/listen` window (< API timeout) | 20000 |
| `MCP_TASKS_LISTEN_POLL_MS` | how often a listen window reads the store | 500 |
| `MCP_TASKS_SESSION_TTL_S` | lifetime of a 2025-11-25 session (`Mcp-Session-Id`) | 86400 |
| `MCP_TASKS_HANDLES` | task handles for clients without tasks (`on`/`off`) | on |
| `MCP_TASKS_HANDLE_PREFIX` | prefix of the handle tools' names (`task_status`, ...) | none |
| `MCP_TASKS_INLINE_BUDGET_MS` | how long one inline answer may take (see handles) | 20000 |
| `MCP_TASKS_STRANDED_AFTER_S` | idle time after which the sweeper fails a task nothing ran | 1800 |

Handles (`server.handles`): a client without tasks gets an ordinary result naming the task
of a task-only tool, or of an optional one whose `expected_seconds` exceed the inline budget;
`task_status` waits at most that budget.

A declaration file (`*.yaml`, `*.yml`, `*.json`) serves managed tools (see `targets`).
One of the two secret variables is required; the ARN wins when both are set. The template gives
the deployed API function only the ARN: the value is read from Secrets Manager on first use.

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

DECLARATION_SUFFIXES = (".yaml", ".yml", ".json")
"""What MCP_TASKS_TOOLS ends with when it names a declaration file (`targets.declaration`)."""
BUILTIN_TOOL_MODULES = {
    "demo": "mcp_tasks_aws.toolsets.demo",
    "conformance": "mcp_tasks_aws.toolsets.conformance",
}


@dataclass(frozen=True)
class Settings:
    tools_module: str = "demo"
    state_secret: bytes = b""
    state_secret_arn: str = ""
    deployment_id: str = ""
    allowed_origins: frozenset[str] = field(default_factory=frozenset)
    max_body_bytes: int = 1024 * 1024
    page_size: int = 50
    list_ttl_ms: int = 60_000
    task_table: str = ""
    state_machine_arn: str = ""
    result_bucket: str = ""
    default_ttl_ms: int | None = 24 * 3600 * 1000
    max_ttl_ms: int | None = 30 * 24 * 3600 * 1000
    poll_interval_ms: int = 500
    max_poll_interval_ms: int = 10_000
    worker_function: str = ""
    listen_window_ms: int = 20_000
    listen_poll_ms: int = 500
    session_ttl_seconds: int = 24 * 3600
    task_handles: bool = True
    handle_tool_prefix: str = ""
    inline_budget_ms: int = 20_000
    inline_deadline_ms: int = 0
    """The streaming front door's bound on an inline run (0: the function's time left)."""
    stranded_after_s: int = 1800
    auth: AuthSettings = field(default_factory=AuthSettings)

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        env = dict(os.environ if env is None else env)
        origins = env.get("MCP_TASKS_ALLOWED_ORIGINS", "")
        return cls(
            tools_module=env.get("MCP_TASKS_TOOLS", "demo"),
            state_secret=env.get("MCP_TASKS_STATE_SECRET", "").encode(),
            state_secret_arn=env.get("MCP_TASKS_STATE_SECRET_ARN", ""),
            deployment_id=env.get("MCP_TASKS_DEPLOYMENT_ID", ""),
            allowed_origins=frozenset(o.strip() for o in origins.split(",") if o.strip()),
            max_body_bytes=int(env.get("MCP_TASKS_MAX_BODY_BYTES", 1024 * 1024)),
            page_size=int(env.get("MCP_TASKS_PAGE_SIZE", 50)),
            list_ttl_ms=int(env.get("MCP_TASKS_LIST_TTL_MS", 60_000)),
            task_table=env.get("MCP_TASKS_TABLE", ""),
            state_machine_arn=env.get("MCP_TASKS_STATE_MACHINE_ARN", ""),
            result_bucket=env.get("MCP_TASKS_RESULT_BUCKET", ""),
            default_ttl_ms=_optional_int(env.get("MCP_TASKS_DEFAULT_TTL_MS", "86400000")),
            max_ttl_ms=_optional_int(env.get("MCP_TASKS_MAX_TTL_MS", "2592000000")),
            poll_interval_ms=int(env.get("MCP_TASKS_POLL_INTERVAL_MS", 500)),
            max_poll_interval_ms=int(env.get("MCP_TASKS_MAX_POLL_INTERVAL_MS", 10_000)),
            worker_function=env.get("MCP_TASKS_WORKER_FUNCTION", ""),
            listen_window_ms=int(env.get("MCP_TASKS_LISTEN_WINDOW_MS", 20_000)),
            listen_poll_ms=int(env.get("MCP_TASKS_LISTEN_POLL_MS", 500)),
            session_ttl_seconds=int(env.get("MCP_TASKS_SESSION_TTL_S", 24 * 3600)),
            task_handles=_switch("MCP_TASKS_HANDLES", env.get("MCP_TASKS_HANDLES", "on")),
            handle_tool_prefix=env.get("MCP_TASKS_HANDLE_PREFIX", "").strip(),
            inline_budget_ms=int(env.get("MCP_TASKS_INLINE_BUDGET_MS", 20_000)),
            inline_deadline_ms=int(env.get("MCP_TASKS_INLINE_DEADLINE_MS", 0)),
            stranded_after_s=int(env.get("MCP_TASKS_STRANDED_AFTER_S", 1800)),
            auth=AuthSettings.from_env(env),
        )


_ON = ("1", "true", "on", "yes")
_OFF = ("0", "false", "off", "no")


def _switch(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in _ON or value in _OFF:
        return value in _ON
    raise ValueError(f"{name}={raw!r}: give on or off")


def _optional_int(raw: str) -> int | None:
    return None if raw.strip().lower() in ("", "none", "null", "unlimited") else int(raw)


class ToolsModuleError(RuntimeError):
    """MCP_TASKS_TOOLS names nothing that can be served; the message says what to change."""


_HOW = (
    "set MCP_TASKS_TOOLS to package.module, package.module:attribute or a declaration file "
    "(.yaml, .yml, .json)"
)


def load_toolset(spec: str) -> ToolSet:
    """Import the tools module named by `spec` and return its `ToolSet`; or load the
    declaration file it names (`*.yaml`, `*.yml`, `*.json`: managed tools, see `targets`),
    relative to the current directory (the function's code root when deployed)."""
    if spec.lower().endswith(DECLARATION_SUFFIXES):
        # Loaded only for a declaration: a tools module's cold start never imports targets.
        from mcp_tasks_aws.targets.declaration import DeclarationError
        from mcp_tasks_aws.targets.tools import declared_tools

        try:
            return declared_tools(spec)
        except DeclarationError as exc:
            raise ToolsModuleError(str(exc)) from None
    module_name, _, attribute = BUILTIN_TOOL_MODULES.get(spec, spec).partition(":")
    if "/" in module_name or "\\" in module_name or module_name.endswith(".py"):
        suggestion = module_name.removesuffix(".py").replace("\\", "/").strip("./")
        raise ToolsModuleError(
            f"MCP_TASKS_TOOLS={spec!r} is a path; give the module name instead "
            f"(such as {suggestion.replace('/', '.')!r}), importable from the current directory"
        )
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        # Only the module itself (or its package) missing is a typo; a module that exists but
        # imports something missing raises as it is, with its own traceback.
        if exc.name is None or not (module_name + ".").startswith(exc.name + "."):
            raise
        raise ToolsModuleError(
            f"MCP_TASKS_TOOLS={spec!r}: no module named {exc.name!r} "
            f"(the built-in ones are {', '.join(sorted(BUILTIN_TOOL_MODULES))}; {_HOW})"
        ) from None
    toolset = getattr(module, attribute or "tools", None)
    if not isinstance(toolset, ToolSet):
        raise ToolsModuleError(
            f"{module_name} has no ToolSet named {attribute or 'tools'!r} ({_HOW})"
        )
    return toolset
