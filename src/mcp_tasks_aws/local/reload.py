"""Reloading the tools module on edit, for `make run`: which files to watch, and a fresh import.

- `tools_files(module_name)`: the files an edit of the tools module touches (named as
  `MCP_TASKS_TOOLS` names it: a module, or a `.py` file, `module_name_of`). A module inside
  a package of the user's own is watched with its whole top-level package (a helper module
  next to it counts); a lone module is its one file; a module of this project (`demo`,
  `conformance`) is its one file.
- `fresh_toolset(spec)`: the `ToolSet` imported anew. The user's modules are dropped from
  `sys.modules` first, so the import runs their code again; if it fails (a syntax error, a
  `ToolDefinitionError`), the old modules are put back and the caller keeps serving the old
  tool set.
- `FileWatcher`: polls those files' size and modification time (no dependency, no inotify;
  an edit shows up within one interval) and calls back once per change.

The embedded stack rebuilds only its functions' `App`s around the new tool set: moto, and so
every task, session and stored result, stays as it was (see `EmbeddedStack.reload_tools`).
"""

from __future__ import annotations

import importlib
import logging
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from mcp_tasks_aws.config import load_toolset, tools_module_name
from mcp_tasks_aws.tools.registry import ToolSet

logger = logging.getLogger("mcp_tasks_aws.local")

_PROJECT_PACKAGE = "mcp_tasks_aws"
Stamp = tuple[int, int]


def module_name_of(spec: str) -> str:
    """The module an `MCP_TASKS_TOOLS` value names (`demo` -> the built-in module; a `.py`
    file -> the name it is imported under)."""
    return tools_module_name(spec)


def _reloaded_prefix(module_name: str) -> str:
    """The module names a reload imports anew: the user's top-level package, else the module."""
    top = module_name.split(".")[0]
    return module_name if top == _PROJECT_PACKAGE else top


def tools_files(module_name: str) -> list[Path]:
    """The source files whose edits reload the tools (the module must be imported already)."""
    prefix = _reloaded_prefix(module_name)
    module = sys.modules.get(prefix)
    if module is None:
        return []
    file = getattr(module, "__file__", None)
    if file is None:
        return []
    path = Path(file)
    if getattr(module, "__path__", None) is not None and path.name == "__init__.py":
        return sorted(path.parent.rglob("*.py"))
    return [path]


def _owned(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def fresh_toolset(spec: str) -> ToolSet:
    """`load_toolset(spec)` with the user's modules imported anew; on failure, as before."""
    prefix = _reloaded_prefix(module_name_of(spec))
    dropped: dict[str, ModuleType] = {
        name: module for name, module in sys.modules.items() if _owned(name, prefix)
    }
    for name in dropped:
        del sys.modules[name]
    importlib.invalidate_caches()  # a file added since the last import must be found
    try:
        return load_toolset(spec)
    except BaseException:
        for name in [n for n in sys.modules if _owned(n, prefix)]:
            del sys.modules[name]  # half-imported leftovers of the failed attempt
        sys.modules.update(dropped)
        raise


def _stamp(path: Path) -> Stamp | None:
    try:
        status = path.stat()
    except OSError:
        return None
    return status.st_mtime_ns, status.st_size


class FileWatcher:
    """Calls `on_change` when any of `files()` changes (polled; one call per change seen)."""

    def __init__(
        self, files: Callable[[], list[Path]], on_change: Callable[[], object], interval_s: float
    ) -> None:
        self._files = files
        self._on_change = on_change
        self.interval_s = interval_s
        self._stamps = self._read()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _read(self) -> dict[Path, Stamp | None]:
        return {path: _stamp(path) for path in self._files()}

    def poll(self) -> bool:
        """Look once; call `on_change` (and answer True) if a file changed since last time."""
        now = self._read()
        if now == self._stamps:
            return False
        self._on_change()
        # The file list itself may have changed with the reload (a module added or removed).
        self._stamps = self._read()
        return True

    def start(self) -> None:
        def loop() -> None:
            while not self._stop.wait(self.interval_s):
                try:
                    self.poll()
                except Exception:  # a watcher that dies would stop reloading without a word
                    logger.exception("the tools watcher failed")

        self._thread = threading.Thread(target=loop, name="tools-watcher", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
