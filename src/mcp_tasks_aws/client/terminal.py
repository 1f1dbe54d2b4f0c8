"""What `mcp-tasks` shows and asks: its output, the live status line, prompts and Ctrl-C.

This module owns the terminal side of the CLI; `cli` decides what a command does and which exit
code it ends with, this module how that looks:

- `Output`: what a command prints. Its result goes to stdout, as human text or, with `--json`,
  as one JSON document; an error goes to stderr as `error: …`, or with `--json` to stdout as
  an `{"error": …}` document, so a script always reads JSON from stdout.
- `Console`: stderr, where the status line and the prompts go. On a terminal the status line
  is rewritten in place (`tick` keeps its elapsed time moving); otherwise each change is written
  once, on its own line. Whatever else is written to stderr clears the status line first, so
  the two never share a line. `quiet` (`-q`, and always with `--json`) hides the status line.
- `LineReader`: stdin for the prompts (elicitation forms, the Ctrl-C question), read by one
  thread, so a prompt abandoned by Ctrl-C never swallows the next line typed.
- `Interrupts` and `confirm_cancel`: SIGINT cancels the current scope instead of raising
  `KeyboardInterrupt` wherever the interpreter happens to be; after an interrupted wait the
  user is asked whether to cancel the task on the server.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import sys
import threading
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TextIO

import anyio
from mcp_types import CallToolResult, Tool
from pydantic import BaseModel

from mcp_tasks_aws.client.handle import TaskHandle
from mcp_tasks_aws.client.wire import TaskFields, TaskSnapshot

__all__ = ["Console", "Interrupts", "LineReader", "Output", "confirm_cancel"]


def _dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


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


class Console:
    """stderr: a status line (live on a terminal, one line per change otherwise) and prompts."""

    def __init__(self, err: TextIO, reader: LineReader, *, quiet: bool = False) -> None:
        self.err = err
        self.reader = reader
        self.quiet = quiet
        self.live = err.isatty()
        self._status: str | None = None
        self._shown = False
        self.echo_answers = not reader.interactive
        self.tracked: TaskFields | None = None
        """The task the live status line follows (re-rendered by `tick` for the elapsed time)."""

    async def tick(self) -> None:
        """Keep a live status line's elapsed time moving."""
        while True:
            await anyio.sleep(0.25)
            if self.live and self.tracked is not None and self._shown:
                self.status(_status_text(self.tracked))

    def follow(self, task: TaskFields) -> None:
        """Show `task` as the status, and keep its elapsed time moving (see `tick`)."""
        self.tracked = task
        self.status(_status_text(task))

    def _clear(self) -> None:
        if self._shown:
            self.err.write("\r\x1b[K")
            self._shown = False

    def status(self, text: str) -> None:
        """Show `text` as the status (a new line per change unless stderr is a terminal)."""
        if self.quiet:
            return
        if self.live:
            self._clear()
            self.err.write(text[: max(20, _columns() - 1)])
            self._shown = True
            self.err.flush()
        elif text != self._status:
            self.err.write(text + "\n")
            self.err.flush()
        self._status = text

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


def _columns() -> int:
    try:
        columns = os.get_terminal_size(sys.stderr.fileno()).columns
    except (OSError, ValueError):
        return 100
    return columns if columns > 0 else 100


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


# -- what the commands print ---------------------------------------------------------------------


@dataclass
class Output:
    """A command's output: human text, or with `json` one JSON document, on `out` (stdout)."""

    out: TextIO
    console: Console
    json: bool

    def emit(self, document: dict[str, Any]) -> None:
        self.out.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
        self.out.flush()

    def error(self, kind: str, message: str, exit_code: int, **extra: Any) -> int:
        """Report an error (JSON on stdout with --json, text on stderr); return `exit_code`."""
        if self.json:
            self.emit({"error": {"kind": kind, "message": message, **extra}})
        else:
            self.console.say(f"error: {message}")
        return exit_code

    def tools(self, tools: list[Tool]) -> None:
        if self.json:
            self.emit({"tools": [_dump(t) for t in tools]})
            return
        for tool in tools:
            self.out.write(f"{tool.name}({_signature(tool)})\n")
            summary = (tool.description or "").strip().splitlines()
            if summary:
                self.out.write(f"    {summary[0]}\n")
        self.out.flush()

    def detached(self, handle: TaskHandle) -> None:
        """A task started with `--detach`: its id (with --json, the whole `CreateTaskResult`)."""
        if self.json:
            created = _dump(handle.created) if handle.created is not None else {}
            self.emit({"taskId": handle.task_id, **created})
        else:
            self.out.write(handle.task_id + "\n")
            self.out.flush()

    def cancel_requested(self, snapshot: TaskSnapshot) -> None:
        if self.json:
            self.emit(
                {"taskId": snapshot.task_id, "cancelRequested": True, "status": snapshot.status}
            )
        else:
            self.out.write(
                f"cancellation requested; task {snapshot.task_id} is {snapshot.status}\n"
            )
            self.out.flush()

    def result(self, task_id: str | None, result: CallToolResult) -> None:
        """A tool's result: its text blocks (placeholders for the others), else its JSON."""
        if self.json:
            self.emit({"taskId": task_id, "result": _dump(result)})
            return
        texts = []
        for block in result.content:
            text = getattr(block, "text", None)
            if isinstance(text, str):
                texts.append(text)
            else:
                mime = getattr(block, "mime_type", None)
                texts.append(f"[{block.type}{' ' + mime if mime else ''}]")
        if not texts and result.structured_content is not None:
            texts.append(json.dumps(result.structured_content, indent=2, ensure_ascii=False))
        self.out.write("\n".join(texts) + ("\n" if texts else ""))
        self.out.flush()
        if result.is_error:
            self.console.say("error: the tool reported an error")

    def snapshot(self, snapshot: TaskSnapshot, resume_hint: str) -> None:
        """A task's state; `resume_hint` is the command that answers its input requests."""
        if self.json:
            self.emit(_dump(snapshot))
            return
        lines = [f"task {snapshot.task_id}", f"status: {snapshot.status}"]
        if snapshot.status_message:
            lines.append(f"message: {snapshot.status_message}")
        lines.append(f"created: {snapshot.created_at}  updated: {snapshot.last_updated_at}")
        if snapshot.status == "input_required":
            for key, request in (snapshot.input_requests or {}).items():
                params = request.get("params") or {}
                lines.append(f"needs: {key}: {request.get('method')}: {params.get('message', '')}")
            lines.append(f"answer with: {resume_hint}")
        if snapshot.status == "failed":
            error = snapshot.error_data()
            lines.append(f"error: {error.message} (code {error.code})")
        self.out.write("\n".join(lines) + "\n")
        if snapshot.status == "completed" and snapshot.result is not None:
            self.out.write("result:\n")
            self.out.flush()
            with suppress(ValueError):
                self.result(snapshot.task_id, snapshot.call_tool_result())
                return
        self.out.flush()


def _signature(tool: Tool) -> str:
    schema = tool.input_schema or {}
    properties: dict[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    parts = []
    for name, prop in properties.items():
        kind = prop.get("type", "any") if isinstance(prop, dict) else "any"
        parts.append(f"{name}: {kind}" + ("" if name in required else "?"))
    return ", ".join(parts)
