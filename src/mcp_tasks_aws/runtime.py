"""Our side of a Lambda execution environment's life: its init, with the collector paused, and
with SnapStart, the snapshot (priming before it, fresh state after each restore).

Only the standard library is imported here (and the package root imports nothing eagerly), so
a handler module can enter `init_phase()` before its own imports.

**The collector during init.** A cold start builds hundreds of thousands of objects that live
as long as the environment: modules, classes, pydantic validators, botocore's service data.
With the cyclic garbage collector on, each few hundred allocations trigger a collection, and
the older generations are traversed again and again while they grow: about a fifth of a cold
start's CPU on this project (`make bench`, cold-start section). So the collector is paused
while such objects are built, and what init built is then frozen (`gc.freeze`: moved to a
generation the collector never traverses, since it will not become garbage). Request work
runs with the collector on, as before.

- `init_phase()`: a handler module's imports and the building of its handler; on leaving,
  what exists is frozen (so a process that imports a handler module, as the embedded stack
  does, freezes once per module: what was alive then stays alive).
- `collector_paused(freeze=...)`: other one-off building, inside a request: an AWS client's
  creation, which imports botocore and loads its service data on the first task request.
  Its callers freeze only the first time in a process (`aws.clients`: the first client of
  each service), so a long-lived process making many (the tests) freezes a bounded number of
  times. Without the freeze, the collector's next passes traverse everything the block built
  (on the first task request, about a quarter of a cold start's CPU: `make bench`).

Both nest and may be entered from several threads: the collector is resumed when the last
holder leaves, and only if it was on when the first entered.

**SnapStart.** With the template's `SnapStart=Enabled`, Lambda runs init once per published
version, snapshots the memory, and starts every new execution environment of that version from
the snapshot. `on_snapshot(prime, restore)` registers with the runtime's hooks
(`snapshot_restore_py`, which exists only in Lambda's Python runtimes; the tests stand one in
and fork a primed process to restore it twice):
- `prime` runs before the snapshot: it builds what a first request would otherwise build
  (`App.prime`), and must capture nothing secret or particular to one environment: no AWS
  credentials, no secret values, no open connection;
- `restore` runs in each restored copy, before its first request: it re-seeds what is random
  in process memory (the `random` module; ids and nonces come from the kernel, through
  `secrets` and `os.urandom`, which Lambda re-seeds on restore) and drops what must not be
  shared between copies (`App.after_restore`).
"""

from __future__ import annotations

import gc
import random
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class _CollectorPause:
    """Counts the holders of a pause; the collector's own state is process-wide."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders = 0
        self._resume = False
        self._freeze = False  # asked for by a holder that left while others still held

    def enter(self) -> None:
        with self._lock:
            if self._holders == 0:
                self._resume = gc.isenabled()
                gc.disable()
            self._holders += 1

    def leave(self, *, freeze: bool) -> None:
        with self._lock:
            self._holders -= 1
            self._freeze = self._freeze or freeze
            if self._holders:
                return
            if self._freeze:
                gc.freeze()
                self._freeze = False
            if self._resume:
                gc.enable()

    @property
    def held(self) -> bool:
        return self._holders > 0


_PAUSE = _CollectorPause()


@contextmanager
def collector_paused(*, freeze: bool = False) -> Iterator[None]:
    """The cyclic collector off for the block (one-off building of long-lived objects); with
    `freeze`, what exists when the last holder leaves is frozen."""
    _PAUSE.enter()
    try:
        yield
    finally:
        _PAUSE.leave(freeze=freeze)


@contextmanager
def init_phase() -> Iterator[None]:
    """A handler's init: the collector off for the block, and what exists then frozen."""
    _PAUSE.enter()
    try:
        yield
    finally:
        _PAUSE.leave(freeze=True)


def collector_is_paused() -> bool:
    """Whether some block above holds the collector off (for tests)."""
    return _PAUSE.held


# -- SnapStart -----------------------------------------------------------------------------------

_HOOKED: list[bool] = []  # the re-seeding was registered with the runtime's hooks


def on_snapshot(prime: Callable[[], None], restore: Callable[[], None]) -> bool:
    """Run `prime` before a SnapStart snapshot and `restore` after each restore (after the
    re-seeding), through the Lambda runtime's hooks. False, and nothing kept, where there are
    none (anywhere but Lambda's Python runtimes: the embedded stack, tests)."""
    try:
        import snapshot_restore_py
    except ImportError:
        return False
    if not _HOOKED:  # first: Lambda runs after-restore hooks in the order they were registered
        snapshot_restore_py.register_after_restore(reseed)
        _HOOKED.append(True)
    snapshot_restore_py.register_before_snapshot(prime)
    snapshot_restore_py.register_after_restore(restore)
    return True


def reseed() -> None:
    """Re-seed the `random` module from the kernel: each restored copy of one snapshot would
    otherwise draw the same "random" numbers (tools may use it; our ids and nonces do not)."""
    random.seed()
