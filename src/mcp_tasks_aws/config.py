"""Settings read from the environment, and loading the configured tools module.

The deployed functions and the embedded stack read the same variables, `MCP_TASKS_*`: the
table of every one of them, its meaning and its default, is docs/configuration.md (one
place; tests/documentation/test_configuration_page.py holds it to what this module and
`edge.auth_settings` read). `Settings.from_env` below is the code of that table.

Handles (`server.handles`): a client without tasks gets an ordinary result naming the task
of a task-only tool, or of an optional one whose `expected_seconds` exceed the inline budget;
`task_status` waits at most that budget.

`MCP_TASKS_TOOLS` names a module, a `.py` file or a declaration file (`*.yaml`, `*.yml`,
`*.json`: managed tools, see `targets`); `load_toolset` loads each.
One of the two secret variables is required; the ARN wins when both are set. The template gives
the deployed API function only the ARN: the value is read from Secrets Manager on first use.

Authentication (`MCP_TASKS_AUTH_MODE` and the OAuth variables) is `auth`, see
`edge.auth_settings`. `demo` and `conformance` are short names for modules shipped with the
package.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

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
    durable_function: str = ""
    """The durable function (qualified: its alias) that runs durable tools' tasks (empty: none,
    and a durable tool's tasks fail to start, saying so)."""
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
            durable_function=env.get("MCP_TASKS_DURABLE_FUNCTION", ""),
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
    "set MCP_TASKS_TOOLS to a module (package.module[:attribute]), a .py file "
    "(path/to/file.py[:attribute]) or a declaration file (.yaml, .yml, .json)"
)


def is_tools_file(spec: str) -> bool:
    """Whether MCP_TASKS_TOOLS names a `.py` file (a path) rather than a module."""
    location = spec.partition(":")[0]
    return location.endswith(".py") or "/" in location or "\\" in location


def tools_module_name(spec: str) -> str:
    """The module MCP_TASKS_TOOLS names: `demo` -> the built-in module, `path/to/file.py` ->
    the name it is imported under (see `import_tools_file`)."""
    if is_tools_file(spec):
        return file_module(Path(spec.partition(":")[0]))[0]
    return BUILTIN_TOOL_MODULES.get(spec, spec).partition(":")[0]


def file_module(path: Path) -> tuple[str, Path]:
    """The module name a `.py` file is imported under, and the folder that goes on sys.path.

    As Python runs a script: a file is a top-level module of its own folder, so a module
    beside it imports by its plain name. A file inside a package (an `__init__.py` beside it)
    is that package's module, the package imported from the folder above it.
    """
    path = path if path.is_absolute() else Path.cwd() / path
    parts = [] if path.name == "__init__.py" else [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts), folder


def import_tools_file(path: Path, what: str) -> ModuleType:
    """Import the `.py` file at `path` (relative to the current directory) as `file_module`
    names it; ToolsModuleError, in one line starting with `what`, if it cannot be."""
    import importlib.util

    path = path if path.is_absolute() else Path.cwd() / path
    if path.suffix != ".py":
        raise ToolsModuleError(f"{what}: name a .py file, a module or a declaration ({_HOW})")
    if not path.is_file():
        raise ToolsModuleError(f"{what}: no such file ({path})")
    name, folder = file_module(path)
    if not all(part.isidentifier() for part in name.split(".")):
        raise ToolsModuleError(
            f"{what}: {name!r} cannot be a module name: rename the file (letters, digits, _)"
        )
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))  # its neighbours import by their plain names
    loaded = sys.modules.get(name)
    if loaded is not None and _same_file(loaded, path):
        return loaded
    if "." in name or path.name == "__init__.py":  # a package or its module, from `folder`
        module = importlib.import_module(name)
        if not _same_file(module, path):
            raise ToolsModuleError(
                f"{what}: {name} is already imported from {getattr(module, '__file__', '?')}: "
                "rename the package"
            )
        return module
    # A top-level module of its own folder: this very file, even if another folder holds a
    # module of the same name that was imported before.
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ToolsModuleError(f"{what}: cannot be imported ({path})")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _same_file(module: ModuleType, path: Path) -> bool:
    file = getattr(module, "__file__", None)
    return file is not None and Path(file).resolve() == path.resolve()


def load_toolset(spec: str) -> ToolSet:
    """Import the tools module named by `spec` and return its `ToolSet`; or load the
    declaration file it names (`*.yaml`, `*.yml`, `*.json`: managed tools, see `targets`).

    Paths (a declaration, a `.py` file) are relative to the current directory (the function's
    code root when deployed, where `make build` puts them at the same relative path); a
    module name is imported as Python imports it (the current directory on sys.path)."""
    if spec.lower().endswith(DECLARATION_SUFFIXES):
        # Loaded only for a declaration: a tools module's cold start never imports targets.
        from mcp_tasks_aws.targets.declaration import DeclarationError
        from mcp_tasks_aws.targets.tools import declared_tools

        try:
            return declared_tools(spec)
        except DeclarationError as exc:
            raise ToolsModuleError(str(exc)) from None
    if is_tools_file(spec):
        location, _, attribute = spec.partition(":")
        module = import_tools_file(Path(location), f"MCP_TASKS_TOOLS={spec!r}")
        module_name = module.__name__
    else:
        module_name, _, attribute = BUILTIN_TOOL_MODULES.get(spec, spec).partition(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            # Only the module itself (or its package) missing is a typo; a module that exists
            # but imports something missing raises as it is, with its own traceback.
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
