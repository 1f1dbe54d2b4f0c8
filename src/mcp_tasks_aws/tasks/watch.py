"""Watching tasks and list versions for a bounded window: the domain side of `subscriptions/listen`.

A :class:`Watch` is opened for one caller with the task ids and lists they asked for; it keeps
only the caller's live tasks (foreign, unknown and expired ids are silently left out) and the
lists a change feed can report.

- :meth:`Watch.snapshot` is each watched task as it is when the watch opens, so a change that
  landed just before the listen is not missed;
- :meth:`Watch.changes` then polls every `poll_ms` (one projected batch read of the watched
  tasks' heads, one read of the list versions) and yields a :class:`TaskChanged` for any write
  to a watched task (its version moved: a new status, a new statusMessage, a new round of input
  under the same status) and a :class:`ListChanged` per changed list. Full records are read
  only for the tasks that changed.

With `result_room`, an offloaded result is read back only when it is no larger than the room
it returns when the change is built (`TaskService.view`'s `result_limit`): the wire side
bounds a window's bytes (`server/listen.py`) and says how much is left.

When a window ends: always at its time limit, or once every watched task is terminal with no
list watched (nothing more can happen). Beyond that it depends on delivery:
- `keep_open` (the answer streams to the client as it is made): never because of what was
  sent. The Tasks extension keeps a listen open until the client cancels it, and the official
  TypeScript client does not listen again after the server closes the stream.
- buffered (API Gateway delivers the window whole, once it ends): once a change the client must
  see promptly was sent: a new status, a new round of input, a list change. A progress write
  (statusMessage only) is sent but does not end the window: it can wait for the next event.
  And a buffered window holds (waits for a change, billing the function all along) only as
  long as it pays, so that listening costs about what polling does:
  - not at all when every watched task is terminal or parked for input (nothing changes until
    the client answers): it ends after the snapshot;
  - while the youngest working task is young, i.e. still polled at its floor interval (the
    first 10 s with a 500 ms floor), and no longer: a task that may end any moment gets its
    news within a poll step; an older one gets a window that ends after the snapshot, and the
    client looks again after the task's `pollIntervalMs` (which grows with its age). So no
    notification is later than the poll step in force: 500 ms while a window holds, the
    task's poll interval otherwise, as for a polling client.
  Windows watching a list hold for their whole length, as before.

:class:`PollWindow` is the timing every long answer that waits for a change shares (this
watch, a 2025-11-25 `tasks/result` window, a resumed 2025-11-25 inline stream): sleep a poll
step, look, until the window's time is up. `server/listen.py` puts a watch on the wire.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import NamedTuple

from mcp_tasks_aws.protocol.names import TERMINAL_STATUSES
from mcp_tasks_aws.tasks.model import TaskRecord
from mcp_tasks_aws.tasks.ports import ChangeFeed
from mcp_tasks_aws.tasks.service import TaskService, TaskView


@dataclass(frozen=True)
class PollWindow:
    """A bounded stretch of polling: `window_ms` long, looking every `poll_ms`."""

    window_ms: int
    poll_ms: int
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep

    def polls(self) -> Iterator[bool]:
        """Yield (True) once per poll step, each after its sleep, until the window's time is up.

        The caller looks once per step and stops iterating when it has what it waits for; the
        last step is cut short so the window never overruns. `next(polls, False)` is False
        once the window is over.
        """
        deadline = self.clock() + self.window_ms / 1000
        while (remaining := deadline - self.clock()) > 0:
            self.sleep(min(self.poll_ms / 1000, remaining))
            yield True


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
        window: PollWindow,
        keep_open: bool = False,
        result_room: Callable[[], int] | None = None,
    ) -> None:
        self._tasks = tasks
        self._feed = feed
        self._owner = owner
        self.lists = lists if feed is not None else []
        self._window = window
        self._keep_open = keep_open
        self._result_room = result_room
        self._opened: dict[str, TaskRecord] = {}
        if task_ids and tasks is not None:
            self._opened = tasks.live(owner, task_ids)
        self._watched = {task_id: r.head() for task_id, r in self._opened.items()}
        self._shown = {task_id: _prompting(r) for task_id, r in self._opened.items()}
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
                yield TaskChanged(self._view(record))

    def _view(self, record: TaskRecord) -> TaskView:
        # Asked when the change is built, so the room reflects what was sent before it.
        assert self._tasks is not None
        limit = self._result_room() if self._result_room is not None else None
        return self._tasks.view(record, result_limit=limit)

    def _open(self) -> bool:
        if self.lists:
            return True
        if self._keep_open:
            return not self._all_terminal()
        return any(head.status not in _SETTLED for head in self._watched.values())

    def _holding(self) -> PollWindow:
        """This window's polling: the whole window, or (buffered, no list watched) only while
        the youngest watched working task is polled at its floor interval."""
        if self._keep_open or self.lists or self._tasks is None:
            return self._window
        working = [r for r in self._opened.values() if r.visible_status == "working"]
        until = [r.polled_at_the_floor_until() for r in working]
        if not until or None in until:  # nothing working, or an interval that never grows
            return self._window
        left_ms = max(u for u in until if u is not None) - self._tasks.clock()
        return replace(self._window, window_ms=max(0, min(self._window.window_ms, left_ms)))

    def changes(self) -> Iterator[Change]:
        if not self._open():
            return
        for _ in self._holding().polls():
            prompting = False  # sent something a buffered window must deliver now
            if self._watched and self._tasks is not None:
                heads = self._tasks.peek(self._owner, list(self._watched))
                moved = [i for i, head in heads.items() if head.version != self._watched[i].version]
                if moved:
                    # Full records (and an offloaded result) only for what is sent.
                    for task_id, record in self._tasks.live(self._owner, moved).items():
                        yield TaskChanged(self._view(record))
                        shown = _prompting(record)
                        prompting = prompting or shown != self._shown.get(task_id)
                        self._shown[task_id] = shown
                # An expired task is gone: stop watching it.
                self._watched = heads
            if self.lists and self._feed is not None:
                current = self._feed.versions()
                for kind in self.lists:
                    if current.get(kind, 0) != self._versions.get(kind, 0):
                        yield ListChanged(kind)
                        prompting = True
                self._versions = current
            if (prompting and not self._keep_open) or not self._open():
                return


_SETTLED = frozenset({*TERMINAL_STATUSES, "input_required"})
"""Statuses in which a task changes only when the client acts (or never)."""


def _prompting(record: TaskRecord) -> tuple[str, tuple[str, ...]]:
    """What of a task a client must hear without waiting: its status and the questions it
    asks (a statusMessage alone is progress)."""
    return record.visible_status, tuple(sorted(record.input_requests or {}))
