"""`mcp-tasks`: a terminal client for MCP servers whose long tools run as tasks.

This module owns the command line: argument parsing, the terminal (a live status line on
stderr, elicitation forms, the Ctrl-C question), output (human text, or one JSON document per
command with `--json`) and exit codes. The protocol work is the library's: an SDK `Client` with
the `TasksExtension` (see `connect`), driven through the handle API (`Tasks`).

    mcp-tasks tools URL
    mcp-tasks call URL TOOL [key=value | key:=JSON ...] [--detach]
    mcp-tasks get|wait|cancel URL TASK_ID

Options (before or after the command): `--json` (machine-readable output on stdout, never
prompts: an input request fails with exit code 5 and leaves the task running), `--token`
(bearer token; default: the `MCP_TASKS_TOKEN` environment variable), `--timeout SECONDS` (give
up waiting; the task keeps running), `--root PATH` (answer roots requests; repeatable),
`--poll` (wait by polling `tasks/get`; by default a wait listens with `subscriptions/listen`
when the server supports it, and polls otherwise).

Exit codes: 0 done; 1 the tool reported an error (`isError`); 2 usage or arguments; 3 the
task failed or the server answered an error; 4 the task was cancelled; 5 input was needed
but could not be asked; 6 unknown task; 124 `--timeout` elapsed; 130 interrupted.

Ctrl-C while a task runs asks whether to cancel it on the server or leave it running (a second
Ctrl-C, or end of input, leaves it running); either way the task id is printed to resume with
`mcp-tasks wait`.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import anyio
import httpx2
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_REQUEST,
    CallToolResult,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
    ListRootsResult,
    Root,
    Tool,
)
from pydantic import BaseModel

from mcp_tasks_aws.client.connect import TOKEN_ENV, connect
from mcp_tasks_aws.client.errors import (
    TaskCancelledError,
    TaskFailedError,
    TaskInputError,
    TaskNotFoundError,
)
from mcp_tasks_aws.client.extension import TasksExtension
from mcp_tasks_aws.client.forms import ArgumentError, confirm_url, fill_form, parse_arguments
from mcp_tasks_aws.client.handle import TaskHandle, Tasks
from mcp_tasks_aws.client.waiter import TaskProgress
from mcp_tasks_aws.client.wire import TaskFields, TaskSnapshot

__all__ = ["main"]

EXIT_OK, EXIT_TOOL_ERROR, EXIT_USAGE, EXIT_FAILED = 0, 1, 2, 3
EXIT_CANCELLED, EXIT_INPUT, EXIT_NOT_FOUND, EXIT_TIMEOUT, EXIT_INTERRUPTED = 4, 5, 6, 124, 130


def _dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


# -- terminal ------------------------------------------------------------------------------------


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


# -- the commands ----------------------------------------------------------------------------------


@dataclass
class Cli:
    args: argparse.Namespace
    out: TextIO
    console: Console
    interrupts: Interrupts
    refused_input: str | None = None
    """The question a --json run refused to ask (the SDK then raises it as an MCPError)."""
    _form_lock: anyio.Lock = field(default_factory=anyio.Lock)

    @property
    def json(self) -> bool:
        return bool(self.args.json)

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

    # callbacks the session answers input requests with

    async def elicit(
        self, ctx: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        if self.json:
            self.refused_input = params.message
            return ErrorData(
                code=INVALID_REQUEST,
                message=f"--json never prompts (the server asked: {params.message!r})",
            )
        async with self._form_lock:
            if isinstance(params, ElicitRequestFormParams):
                return await fill_form(params, self.console)
            return await confirm_url(params, self.console)

    async def list_roots(self, ctx: ClientRequestContext) -> ListRootsResult | ErrorData:
        roots = [Root(uri=Path(p).resolve().as_uri(), name=Path(p).name) for p in self.args.root]
        return ListRootsResult(roots=roots)

    def client(self) -> AbstractAsyncContextManager[Client]:
        options: dict[str, Any] = {"elicitation_callback": self.elicit}
        if self.args.root:
            options["list_roots_callback"] = self.list_roots
        extension = TasksExtension(
            cancel_if_abandoned=False, wait_mode="poll" if self.args.poll else "listen"
        )
        return connect(self.args.url, token=self.args.token, extension=extension, **options)

    async def run(self) -> int:
        command: Callable[[Client], Awaitable[int]] = getattr(self, f"cmd_{self.args.command}")
        async with self.client() as client:
            # Inside the client: what escapes `async with Client` comes out in an ExceptionGroup.
            try:
                return await command(client)
            except MCPError as exc:
                if self.refused_input is not None:  # our own --json refusal, before any task
                    return self.error("input_required", exc.message, EXIT_INPUT)
                return self.error(
                    "protocol", exc.message, EXIT_FAILED, code=exc.code, data=exc.data
                )

    async def cmd_tools(self, client: Client) -> int:
        tools: list[Tool] = []
        cursor: str | None = None
        while True:
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        if self.json:
            self.emit({"tools": [_dump(t) for t in tools]})
            return EXIT_OK
        for tool in tools:
            self.out.write(f"{tool.name}({_signature(tool)})\n")
            summary = (tool.description or "").strip().splitlines()
            if summary:
                self.out.write(f"    {summary[0]}\n")
        self.out.flush()
        return EXIT_OK

    async def _find_tool(self, client: Client, name: str) -> Tool | None:
        cursor: str | None = None
        while True:
            page = await client.list_tools(cursor=cursor)
            for tool in page.tools:
                if tool.name == name:
                    return tool
            cursor = page.next_cursor
            if cursor is None:
                return None

    async def cmd_call(self, client: Client) -> int:
        tool = await self._find_tool(client, self.args.tool)
        if tool is None:
            return self.error("usage", f"the server has no tool {self.args.tool!r}", EXIT_USAGE)
        try:
            arguments = parse_arguments(self.args.arguments, tool.input_schema)
        except ArgumentError as exc:
            return self.error("usage", f"{tool.name}: {exc}", EXIT_USAGE)
        tasks = Tasks(client)
        started = await tasks.start(tool.name, arguments)
        if isinstance(started, CallToolResult):
            return self.print_result(None, started)
        if not self.json:
            self.console.say(f"task {started.task_id} started ({tool.name})")
        if self.args.detach:
            if self.json:
                self.emit({"taskId": started.task_id, **_dump_task(started.created)})
            else:
                self.out.write(started.task_id + "\n")
                self.out.flush()
            return EXIT_OK
        return await self.wait(started)

    async def cmd_wait(self, client: Client) -> int:
        return await self.wait(Tasks(client).handle(self.args.task_id))

    async def cmd_get(self, client: Client) -> int:
        try:
            snapshot = await Tasks(client).get(self.args.task_id)
        except TaskNotFoundError as exc:
            return self.error("not_found", str(exc), EXIT_NOT_FOUND, taskId=exc.task_id)
        if self.json:
            self.emit(_dump(snapshot))
            return EXIT_OK
        self.print_snapshot(snapshot)
        return EXIT_OK

    async def cmd_cancel(self, client: Client) -> int:
        tasks = Tasks(client)
        try:
            await tasks.cancel(self.args.task_id)
            snapshot = await tasks.get(self.args.task_id)
        except TaskNotFoundError as exc:
            return self.error("not_found", str(exc), EXIT_NOT_FOUND, taskId=exc.task_id)
        if self.json:
            self.emit(
                {"taskId": snapshot.task_id, "cancelRequested": True, "status": snapshot.status}
            )
        else:
            self.out.write(
                f"cancellation requested; task {snapshot.task_id} is {snapshot.status}\n"
            )
            self.out.flush()
        return EXIT_OK

    # waiting, and what it ends with

    async def wait(self, handle: TaskHandle) -> int:
        task_id = handle.task_id

        def show(progress: TaskProgress) -> None:
            self.console.tracked = progress.task
            self.console.status(_status_text(progress.task))

        outer = self.interrupts.scope
        result: CallToolResult | None = None
        try:
            with anyio.CancelScope() as scope:
                self.interrupts.scope = scope
                result = await handle.wait(
                    on_status=None if self.json else show, timeout=self.args.timeout
                )
        except TimeoutError:
            return self.error(
                "timeout",
                f"gave up waiting after {self.args.timeout}s; task {task_id} is still running",
                EXIT_TIMEOUT,
                taskId=task_id,
                resume=self.resume_hint(task_id),
            )
        except TaskFailedError as exc:
            return self.error(
                "failed", exc.message, EXIT_FAILED, taskId=task_id, code=exc.code, data=exc.data
            )
        except TaskCancelledError as exc:
            return self.error("cancelled", str(exc), EXIT_CANCELLED, taskId=task_id)
        except TaskInputError as exc:
            message = (
                f"{exc}; the task is still waiting: answer it with {self.resume_hint(task_id)}"
            )
            return self.error(
                "input_required",
                message,
                EXIT_INPUT,
                taskId=task_id,
                resume=self.resume_hint(task_id),
            )
        except TaskNotFoundError as exc:
            return self.error("not_found", str(exc), EXIT_NOT_FOUND, taskId=task_id)
        finally:
            self.interrupts.scope = outer
            self.console.tracked = None
            self.console.done()
        if result is None:  # interrupted
            return await self.interrupted(handle)
        return self.print_result(task_id, result)

    def resume_hint(self, task_id: str) -> str:
        return f"mcp-tasks wait {self.args.url} {task_id}"

    async def interrupted(self, handle: TaskHandle) -> int:
        task_id = handle.task_id
        cancel = False
        if not self.json:
            with anyio.CancelScope() as scope:
                self.interrupts.scope = scope
                answer = await self.console.ask(
                    f"\nInterrupted. Cancel task {task_id} on the server?"
                    " [y]es / [N]o, leave it running: "
                )
                cancel = (answer or "").strip().casefold() in ("y", "yes")
            if scope.cancelled_caught:
                self.console.say("")
        if cancel:
            with anyio.move_on_after(10):
                await handle.cancel()
                self.console.say(f"cancellation of task {task_id} requested")
                return EXIT_INTERRUPTED
            return self.error(
                "interrupted",
                f"could not reach the server to cancel task {task_id}; "
                f"retry with: mcp-tasks cancel {self.args.url} {task_id}",
                EXIT_INTERRUPTED,
                taskId=task_id,
            )
        return self.error(
            "interrupted",
            f"task {task_id} left running; resume with: {self.resume_hint(task_id)}",
            EXIT_INTERRUPTED,
            taskId=task_id,
            resume=self.resume_hint(task_id),
        )

    def print_result(self, task_id: str | None, result: CallToolResult) -> int:
        code = EXIT_TOOL_ERROR if result.is_error else EXIT_OK
        if self.json:
            self.emit({"taskId": task_id, "result": _dump(result)})
            return code
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
        return code

    def print_snapshot(self, snapshot: TaskSnapshot) -> None:
        lines = [f"task {snapshot.task_id}", f"status: {snapshot.status}"]
        if snapshot.status_message:
            lines.append(f"message: {snapshot.status_message}")
        lines.append(f"created: {snapshot.created_at}  updated: {snapshot.last_updated_at}")
        if snapshot.status == "input_required":
            for key, request in (snapshot.input_requests or {}).items():
                params = request.get("params") or {}
                lines.append(f"needs: {key}: {request.get('method')}: {params.get('message', '')}")
            lines.append(f"answer with: {self.resume_hint(snapshot.task_id)}")
        if snapshot.status == "failed":
            error = snapshot.error_data()
            lines.append(f"error: {error.message} (code {error.code})")
        self.out.write("\n".join(lines) + "\n")
        if snapshot.status == "completed" and snapshot.result is not None:
            self.out.write("result:\n")
            self.out.flush()
            with suppress(ValueError):
                self.print_result(snapshot.task_id, snapshot.call_tool_result())
                return
        self.out.flush()


def _first_leaf(exc: BaseException) -> BaseException:
    """The first non-group exception inside (possibly nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _dump_task(task: TaskFields | None) -> dict[str, Any]:
    return _dump(task) if task is not None else {}


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


def _signature(tool: Tool) -> str:
    schema = tool.input_schema or {}
    properties: dict[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    parts = []
    for name, prop in properties.items():
        kind = prop.get("type", "any") if isinstance(prop, dict) else "any"
        parts.append(f"{name}: {kind}" + ("" if name in required else "?"))
    return ", ".join(parts)


# -- entry point -----------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS,
        help="machine-readable output; never prompt",
    )
    common.add_argument(
        "--token", default=argparse.SUPPRESS, help=f"bearer token (default: ${TOKEN_ENV})"
    )
    common.add_argument(
        "--timeout",
        type=float,
        default=argparse.SUPPRESS,
        help="stop waiting after SECONDS (the task keeps running)",
    )
    common.add_argument(
        "--root",
        action="append",
        default=argparse.SUPPRESS,
        metavar="PATH",
        help="a root to offer the server (repeatable)",
    )
    common.add_argument(
        "-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help="no status line"
    )
    common.add_argument(
        "--poll",
        action="store_true",
        default=argparse.SUPPRESS,
        help="wait by polling tasks/get instead of listening (subscriptions/listen)",
    )

    parser = argparse.ArgumentParser(
        prog="mcp-tasks",
        description="Call MCP tools that may run as tasks; follow, answer and cancel tasks.",
        parents=[common],
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    tools = commands.add_parser("tools", parents=[common], help="list the server's tools")
    tools.add_argument("url")
    call = commands.add_parser("call", parents=[common], help="call a tool and wait for its result")
    call.add_argument("url")
    call.add_argument("tool")
    call.add_argument(
        "arguments",
        nargs="*",
        metavar="key=value",
        help="arguments, typed by the tool's schema (key:=JSON for raw JSON)",
    )
    call.add_argument(
        "--detach", action="store_true", help="print the task id and exit without waiting"
    )
    for name, text in (
        ("get", "show a task's current state"),
        ("wait", "wait for a task (answering its questions) and print its result"),
        ("cancel", "request a task's cancellation"),
    ):
        sub = commands.add_parser(name, parents=[common], help=text)
        sub.add_argument("url")
        sub.add_argument("task_id")
    return parser


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    args = build_parser().parse_args(argv)
    defaults: dict[str, Any] = {
        "json": False,
        "token": None,
        "timeout": None,
        "root": [],
        "quiet": False,
        "poll": False,
    }
    for key, value in defaults.items():
        if not hasattr(args, key):
            setattr(args, key, value)
    if args.token is None:
        args.token = os.environ.get(TOKEN_ENV) or None
    return args


async def _amain(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    interrupts = Interrupts()
    try:
        stdin: int | None = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):  # no usable stdin: every prompt sees its end
        stdin = None
    console = Console(err, LineReader(stdin), quiet=bool(args.quiet or args.json))
    cli = Cli(args, out, console, interrupts)
    code: int | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(interrupts.watch)
        tg.start_soon(console.tick)
        with anyio.CancelScope() as scope:
            interrupts.scope = scope
            try:
                code = await cli.run()
            except Exception as exc:  # connecting failed: the SDK raises it in an ExceptionGroup
                leaf = _first_leaf(exc)
                if isinstance(leaf, MCPError):
                    code = cli.error(
                        "protocol", leaf.message, EXIT_FAILED, code=leaf.code, data=leaf.data
                    )
                elif isinstance(leaf, httpx2.HTTPError | OSError):
                    code = cli.error("connection", f"cannot reach {args.url}: {leaf}", EXIT_FAILED)
                else:
                    raise
        tg.cancel_scope.cancel()
    if code is None:
        console.done()
        return cli.error("interrupted", "interrupted", EXIT_INTERRUPTED)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        return anyio.run(_amain, args, sys.stdout, sys.stderr)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    raise SystemExit(main())
