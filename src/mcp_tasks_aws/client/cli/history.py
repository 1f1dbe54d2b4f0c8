"""The tasks this CLI started, per server, with the last status it saw: `mcp-tasks tasks`.

2026-07-28 has no `tasks/list` (a task id is the only handle), so the CLI remembers the ids it
created in one small JSON file, the *history*:

- where: `$MCP_TASKS_STATE_DIR/history.json`, else `$XDG_STATE_HOME/mcp-tasks/history.json`,
  else `~/.local/state/mcp-tasks/history.json` (`%LOCALAPPDATA%\\mcp-tasks` on Windows);
- what: per task the server URL, the id, the tool, when it was created and the last status
  (and status message) a command of this CLI read; never arguments or results;
- how much: the newest `MAX_ENTRIES`; older ones are dropped as new ones come.

Writes are atomic (a reader sees the old file or the new one) and, where `fcntl` exists, one
process at a time, so commands run side by side do not lose each other's entries. A file that
cannot be read or written never fails a command: the history is a convenience.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

__all__ = ["MAX_ENTRIES", "STATE_DIR_ENV", "History", "HistoryEntry", "state_dir"]

STATE_DIR_ENV = "MCP_TASKS_STATE_DIR"
MAX_ENTRIES = 200
logger = logging.getLogger(__name__)


def state_dir(env: dict[str, str] | None = None) -> Path:
    """Where `mcp-tasks` keeps what it remembers between commands (see the module docstring)."""
    env = dict(os.environ if env is None else env)
    if env.get(STATE_DIR_ENV):
        return Path(env[STATE_DIR_ENV])
    if os.name == "nt" and env.get("LOCALAPPDATA"):
        return Path(env["LOCALAPPDATA"]) / "mcp-tasks"
    base = env.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "mcp-tasks"


@dataclass
class HistoryEntry:
    server: str
    task_id: str
    tool: str | None
    created_at: str | None
    status: str
    status_message: str | None = None


class History:
    """The history file; every method reads it afresh (another command may have written)."""

    def __init__(self, directory: Path | None = None) -> None:
        self.path = (directory or state_dir()) / "history.json"

    def _read(self) -> list[HistoryEntry]:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            logger.warning("cannot read %s: %s", self.path, exc)
            return []
        entries = []
        for raw in data.get("tasks", []) if isinstance(data, dict) else []:
            try:
                entries.append(HistoryEntry(**raw))
            except TypeError:
                continue  # an entry of another version: skipped, not fatal
        return entries

    def _write(self, entries: list[HistoryEntry]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        document = {"version": 1, "tasks": [asdict(e) for e in entries[-MAX_ENTRIES:]]}
        fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".history-")
        try:
            os.chmod(temporary, 0o600)
            with os.fdopen(fd, "w") as handle:
                json.dump(document, handle, indent=1)
            os.replace(temporary, self.path)  # readers see the old file or the new, never half
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """One read-modify-write at a time across processes (where `fcntl` exists)."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: last writer wins
            yield
            return
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(self.path.parent / ".history.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def record(self, server: str, task_id: str, status: str, **fields: Any) -> None:
        """Remember `task_id` on `server` (new or seen again) with its status now."""
        try:
            with self._locked():
                entries = self._read()
                found = next(
                    (e for e in entries if e.server == server and e.task_id == task_id), None
                )
                if found is None:
                    found = HistoryEntry(server, task_id, None, None, status)
                    entries.append(found)
                found.status = status
                for name, value in fields.items():
                    if value is not None or name == "status_message":
                        setattr(found, name, value)
                self._write(entries)
        except OSError as exc:  # a convenience: never the reason a command fails
            logger.warning("cannot write %s: %s", self.path, exc)

    def update_known(self, server: str, task_id: str, status: str, message: str | None) -> None:
        """Refresh the status of a task already remembered (nothing for any other task)."""
        if any(e.server == server and e.task_id == task_id for e in self._read()):
            self.record(server, task_id, status, status_message=message)

    def of(self, server: str) -> list[HistoryEntry]:
        """The tasks remembered for `server`, newest first."""
        return [e for e in reversed(self._read()) if e.server == server]
