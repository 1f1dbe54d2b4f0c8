"""What `mcp-tasks` shows and asks on stderr: the live status line, prompts and Ctrl-C.

This module owns the interactive side of the CLI (what commands print on stdout is
`display`'s):

- `Console`: stderr, where the status line and the prompts go. On a terminal the status line
  is a `rich` live display: a spinner, the task's status and message, a progress bar when the
  message carries numbers (`"3/10 · …"`, see `mcp_tasks_aws.protocol.progress`) and the
  elapsed time.
  Otherwise each change is written once, on its own line. Whatever else is written to stderr
  stops the live display first, so the two never share a line. `quiet` (`-q`, and always with
  `--json`) hides the status line.
- `LineReader`: stdin for the prompts (elicitation forms, the Ctrl-C question), read by one
  thread, so a prompt abandoned by Ctrl-C never swallows the next line typed.
- `Interrupts` and `confirm_cancel`: SIGINT cancels the current scope instead of raising
  `KeyboardInterrupt` wherever the interpreter happens to be; after an interrupted wait the
  user is asked whether to cancel the task on the server.
"""

from __future__ import annotations

import os
import queue
import signal
import threading
from datetime import UTC, datetime
from typing import TextIO

import anyio
from rich.console import Console as RichConsole
from rich.console import RenderableType
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from mcp_tasks_aws.client.wire import TaskFields
from mcp_tasks_aws.protocol.progress import Progress, parse_status

__all__ = ["Console", "Interrupts", "LineReader", "confirm_cancel"]


# -- stdin and stderr ----------------------------------------------------------------------------


class LineReader:
    """Lines from a file descriptor, read by one background thread, awaited cancel-safely.

    A prompt abandoned by Ctrl-C must not swallow the next line typed, so lines are read by a
    single thread into a queue and every prompt takes the next one from there. The thread
    reads the raw descriptor (`os.read`), never `sys.stdin`'s buffer, so it cannot block the
    interpreter's shutdown.
    """

    def __init__(self, fd: int | None) -> None:
        self._fd = fd
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._eof = False

    def _run(self) -> None:
        assert self._fd is not None
        pending = b""
        while True:
            try:
                chunk = os.read(self._fd, 4096)
            except OSError:
                chunk = b""
            if not chunk:
                if pending:
                    self._lines.put(pending.decode(errors="replace"))
                self._lines.put(None)
                return
            pending += chunk
            while b"\n" in pending:
                line, _, pending = pending.partition(b"\n")
                self._lines.put(line.decode(errors="replace").rstrip("\r"))

    @property
    def interactive(self) -> bool:
        """Whether a person types the lines (a terminal), rather than a script."""
        return self._fd is not None and os.isatty(self._fd)

    async def readline(self) -> str | None:
        if self._eof or self._fd is None:
            return None
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="mcp-tasks-stdin", daemon=True)
            self._thread.start()
        while True:
            try:
                line = self._lines.get_nowait()
            except queue.Empty:
                await anyio.sleep(0.02)
                continue
            if line is None:
                self._eof = True
            return line


class _StatusLine:
    """The live status renderable: spinner, status, a bar when the task reports numbers, and
    the time since the task was created (re-rendered by rich on every refresh)."""

    def __init__(self) -> None:
        self.spinner = Spinner("dots", style="cyan")
        self.task: TaskFields | None = None
        self.text = ""

    def __rich__(self) -> RenderableType:
        if self.task is None:
            return Text(self.text)
        parsed = parse_status(self.task.status_message)
        grid = Table.grid(padding=(0, 1))
        cells: list[RenderableType] = [self.spinner, Text(f"[{self.task.status}]", style="bold")]
        if parsed.fraction is not None:
            cells.append(ProgressBar(total=1.0, completed=parsed.fraction, width=24))
            cells.append(Text(_numbers(parsed), style="cyan"))
        elif parsed.progress is not None:
            cells.append(Text(_numbers(parsed), style="cyan"))
        if parsed.message:
            cells.append(Text(parsed.message, overflow="ellipsis", no_wrap=True))
        elapsed = _elapsed(self.task)
        if elapsed is not None:
            cells.append(Text(f"({elapsed:.1f}s)", style="dim"))
        for _ in cells:
            grid.add_column(no_wrap=True)
        grid.add_row(*cells)
        return grid


def _numbers(parsed: Progress) -> str:
    if parsed.progress is None:
        return ""
    if parsed.total == 100:
        return f"{parsed.progress:g}%"
    if parsed.total is not None:
        return f"{parsed.progress:g}/{parsed.total:g}"
    return f"{parsed.progress:g}"


class Console:
    """stderr: a status line (live on a terminal, one line per change otherwise) and prompts.

    On a terminal the status is a `rich` live display (spinner, a progress bar when the task's
    `statusMessage` carries numbers, elapsed time), stopped while anything else is written to
    stderr so the two never share a line. Off a terminal each change is one plain line.
    """

    def __init__(self, err: TextIO, reader: LineReader, *, quiet: bool = False) -> None:
        self.err = err
        self.reader = reader
        self.quiet = quiet
        self.live = err.isatty()
        self.rich = RichConsole(file=err, highlight=False, markup=False)
        self._line = _StatusLine()
        self._display: Live | None = None
        self._status: str | None = None
        self.echo_answers = not reader.interactive

    def follow(self, task: TaskFields) -> None:
        """Show `task` as the status (with a progress bar when its message carries numbers)."""
        if self.quiet:
            return
        if self.live:
            self._line.task = task
            self._show()
        else:
            self._plain(_status_text(task))

    def status(self, text: str) -> None:
        """Show `text` as the status (a new line per change unless stderr is a terminal)."""
        if self.quiet:
            return
        if self.live:
            self._line.task, self._line.text = None, text
            self._show()
        else:
            self._plain(text)

    def _plain(self, text: str) -> None:
        if text != self._status:
            self.err.write(text + "\n")
            self.err.flush()
        self._status = text

    def _show(self) -> None:
        if self._display is None:
            self._display = Live(
                self._line, console=self.rich, transient=True, refresh_per_second=8
            )
            self._display.start()
        self._display.refresh()

    def _clear(self) -> None:
        if self._display is not None:
            self._display.stop()
            self._display = None

    def say(self, text: str) -> None:
        self._clear()
        self.err.write(text + "\n")
        self.err.flush()

    async def ask(self, prompt: str) -> str | None:
        self._clear()
        self.err.write(prompt)
        self.err.flush()
        answer = await self.reader.readline()
        if self.echo_answers or answer is None:
            self.err.write(("" if answer is None else answer) + "\n")
            self.err.flush()
        return answer

    def done(self) -> None:
        self._clear()
        self.err.flush()


def _elapsed(task: TaskFields) -> float | None:
    created = task.created_at_datetime()
    if created is None:
        return None
    if created.tzinfo is None:
        created = created.replace(tzinfo=UTC)
    return max(0.0, (datetime.now(UTC) - created).total_seconds())


def _status_text(task: TaskFields) -> str:
    elapsed = _elapsed(task)
    parts = [f"[{task.status}]"]
    if task.status_message:
        parts.append(task.status_message)
    if elapsed is not None:
        parts.append(f"({elapsed:.1f}s)")
    return " ".join(parts)


# -- Ctrl-C --------------------------------------------------------------------------------------


class Interrupts:
    """SIGINT cancels the current scope instead of raising `KeyboardInterrupt` anywhere."""

    def __init__(self) -> None:
        self.scope: anyio.CancelScope | None = None
        self.count = 0

    async def watch(self) -> None:
        try:
            receiver = anyio.open_signal_receiver(signal.SIGINT)
        except NotImplementedError:  # pragma: no cover - platforms without signal handlers
            return
        with receiver as signals:
            async for _ in signals:
                self.count += 1
                if self.scope is not None:
                    self.scope.cancel()


async def confirm_cancel(console: Console, interrupts: Interrupts, task_id: str) -> bool:
    """After Ctrl-C: whether the user wants the task cancelled on the server (default: no).

    A second Ctrl-C, or the end of input, answers no.
    """
    cancel = False
    with anyio.CancelScope() as scope:
        # The question gets a scope of its own, so a second Ctrl-C ends the question rather
        # than the command. `interrupts` keeps pointing at it once it is over: a Ctrl-C after
        # the answer cancels nothing.
        interrupts.scope = scope
        answer = await console.ask(
            f"\nInterrupted. Cancel task {task_id} on the server? [y]es / [N]o, leave it running: "
        )
        cancel = (answer or "").strip().casefold() in ("y", "yes")
    if scope.cancelled_caught:
        console.say("")
    return cancel
