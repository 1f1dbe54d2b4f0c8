"""Watching tasks and list versions for a bounded window: the domain side of `subscriptions/listen`.

A :class:`Watch` is opened for one caller with the task ids and lists they asked for; it keeps
only the caller's live tasks (foreign, unknown and expired ids are silently left out) and the
lists a change feed can report.

- :meth:`Watch.snapshot` is each watched task as it is when the watch opens, so a change that
  landed just before the listen is not missed;
- :meth:`Watch.changes` then polls every `poll_ms` (one projected batch read of the watched
  tasks' heads, one read of the list versions) and yields a :class:`TaskChanged` for any write
  to a watched task (its version moved: a new status, a new statusMessage, a new round of input
  under the same status) and a :class:`ListChanged` per changed list, until the window ends,
  something was delivered, or every watched task is terminal with no list watched. Full
  records are read only for the tasks that changed.

`server/listen.py` puts this on the wire.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import NamedTuple

from mcp_tasks_aws.protocol.names import TERMINAL_STATUSES
from mcp_tasks_aws.tasks.model import TaskRecord
from mcp_tasks_aws.tasks.ports import ChangeFeed
from mcp_tasks_aws.tasks.service import TaskService, TaskView


class TaskChanged(NamedTuple):
    """A watched task now shows something else (with its view, result read back)."""

    view: TaskView


class ListChanged(NamedTuple):
    """The `tools` or `prompts` list changed."""

    kind: str


Change = TaskChanged | ListChanged


class Watch:
    """One caller's watch over some tasks and lists, for one window."""

    def __init__(
        self,
        *,
        tasks: TaskService | None,
        feed: ChangeFeed | None,
        owner: str,
        task_ids: list[str],
        lists: list[str],
        window_ms: int,
        poll_ms: int,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._tasks = tasks
        self._feed = feed
        self._owner = owner
        self.lists = lists if feed is not None else []
        self._window_ms = window_ms
        self._poll_ms = poll_ms
        self._clock = clock
        self._sleep = sleep
        self._opened: dict[str, TaskRecord] = {}
        if task_ids and tasks is not None:
            self._opened = tasks.live(owner, task_ids)
        self._watched = {task_id: r.head() for task_id, r in self._opened.items()}
        self._versions = feed.versions() if self.lists and feed is not None else {}

    @property
    def task_ids(self) -> list[str]:
        """The ids this watch honours: the caller's live tasks among those asked for."""
        return list(self._watched)

    def _all_terminal(self) -> bool:
        return all(head.status in TERMINAL_STATUSES for head in self._watched.values())

    def snapshot(self) -> Iterator[TaskChanged]:
        """Each watched task as it stood when the watch opened (sent after the ack)."""
        if self._tasks is not None:
            for record in self._opened.values():
                yield TaskChanged(self._tasks.view(record))

    def changes(self) -> Iterator[Change]:
        deadline = self._clock() + self._window_ms / 1000
        while self.lists or not self._all_terminal():
            remaining = deadline - self._clock()
            if remaining <= 0:
                return
            self._sleep(min(self._poll_ms / 1000, remaining))
            delivered = False
            if self._watched and self._tasks is not None:
                heads = self._tasks.peek(self._owner, list(self._watched))
                moved = [i for i, head in heads.items() if head.version != self._watched[i].version]
                if moved:
                    # Full records (and an offloaded result) only for what is sent.
                    for record in self._tasks.live(self._owner, moved).values():
                        yield TaskChanged(self._tasks.view(record))
                        delivered = True
                # An expired task is gone: stop watching it.
                self._watched = heads
            if self.lists and self._feed is not None:
                current = self._feed.versions()
                for kind in self.lists:
                    if current.get(kind, 0) != self._versions.get(kind, 0):
                        yield ListChanged(kind)
                        delivered = True
                self._versions = current
            if delivered:
                return
