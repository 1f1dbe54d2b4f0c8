"""`mcp-tasks`: a terminal client for MCP servers whose long tools run as tasks.

This module owns the command line: argument parsing, what each command does, and the exit
code it ends with (the commands that browse a server are `browse`'s). What the commands print
and ask (human text or one JSON document per command with `--json`, binary content saved to
files, the live status line with its progress bar on stderr, elicitation forms, the Ctrl-C
question) is `display`'s, `terminal`'s and `forms`'. The protocol work is the library's: an
SDK `Client` with the `TasksExtension` (see `connect`), driven through the handle API (`Tasks`).

    mcp-tasks tools|prompts|resources|templates [URL]
    mcp-tasks prompt [URL] NAME [key=value ...]
    mcp-tasks read [URL] URI
    mcp-tasks call [URL] TOOL [key=value | key:=JSON ...] [--detach]
    mcp-tasks get|wait|cancel [URL] TASK_ID
    mcp-tasks tasks [URL]
    mcp-tasks login|logout [URL]

`tasks` lists tasks: a 2025-11-25 server's `tasks/list`; on 2026-07-28 (no such method) the
tasks this CLI started on that server, remembered in a small history file (`history`; its
directory is `$MCP_TASKS_STATE_DIR`, default `~/.local/state/mcp-tasks`) with the last
status seen, refreshed with `tasks/get` for those still running.

URL defaults to the `MCP_TASKS_URL` environment variable (a first argument with `://` in it
is the URL; anything else is the tool, prompt, resource or task id).

Options (before or after the command): `--json` (machine-readable output on stdout, never
prompts: an input request fails with exit code 5 and leaves the task running), `--token`
(bearer token; default: the `MCP_TASKS_TOKEN` environment variable), `--timeout SECONDS` (give
up waiting; the task keeps running), `--root PATH` (answer roots requests; repeatable),
`--poll` (wait by polling `tasks/get`; by default a wait listens with `subscriptions/listen`
when the server supports it, and polls otherwise), `--save-dir DIR` (where images, audio and
other binary content are saved; default: a new temporary directory), `--debug` (tracebacks
and the SDK's log; also `MCP_TASKS_DEBUG=1`).

Errors are one line on stderr (`error: …`) that says what went wrong and what to do: an
address nobody listens at, a wrong path (404), a refused token (401/403), a server that does
not speak MCP, a client capability the tool needs. Tracebacks only with `--debug`. A reader
that goes away (`mcp-tasks tools URL | head -1`) ends the command quietly.

Signing in: without `--token`, a server that answers 401 with an OAuth challenge is signed in
to in the browser (see `auth`: `--client-id`, `--client-secret`, `--client-metadata-url`,
`--callback-port`); the tokens are cached per server and refreshed. `login` signs in ahead of
time, `logout` drops the cached tokens.

Exit codes: 0 done; 1 the tool reported an error (`isError`); 2 usage or arguments; 3 the
task failed or the server answered an error; 4 the task was cancelled; 5 input was needed
but could not be asked; 6 unknown task; 124 `--timeout` elapsed; 130 interrupted.

Ctrl-C while a task runs asks whether to cancel it on the server or leave it running (a second
Ctrl-C, or end of input, leaves it running); either way the task id is printed to resume with
`mcp-tasks wait`.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, NoReturn, TextIO

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
    ListTasksRequest,
    ListTasksResult,
    PaginatedRequestParams,
    Root,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_tasks_aws.client.cli.browse import BrowseCommands, find_tool, list_all
from mcp_tasks_aws.client.cli.display import MediaSaver, Output, TaskRow
from mcp_tasks_aws.client.cli.forms import (
    ArgumentError,
    confirm_url,
    fill_form,
    parse_arguments,
    unknown_argument_warning,
)
from mcp_tasks_aws.client.cli.history import History
from mcp_tasks_aws.client.cli.sign_in import (
    SIGN_IN_ERRORS,
    SignInNeeded,
    TokenCache,
    add_sign_in_arguments,
    auth_for,
    sign_in_defaults,
)
from mcp_tasks_aws.client.cli.terminal import Console, Interrupts, LineReader, confirm_cancel
from mcp_tasks_aws.client.connect import TOKEN_ENV, connect
from mcp_tasks_aws.client.diagnose import (
    HttpTrace,
    explain_failure,
    first_leaf,
    missing_capabilities,
)
from mcp_tasks_aws.client.errors import (
    TaskCancelledError,
    TaskFailedError,
    TaskInputError,
    TaskNotFoundError,
)
from mcp_tasks_aws.client.extension import TasksExtension
from mcp_tasks_aws.client.handle import TaskHandle, Tasks
from mcp_tasks_aws.client.waiter import TaskProgress
from mcp_tasks_aws.protocol.names import ACTIVE_STATUSES, TERMINAL_STATUSES

__all__ = ["main"]

URL_ENV = "MCP_TASKS_URL"
DEBUG_ENV = "MCP_TASKS_DEBUG"
LOCAL_URL = "http://127.0.0.1:8000/mcp"  # what `make run` serves
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
# What mcp-tasks can do about a capability a tool needs (it declares elicitation and the Tasks
# extension always, roots with --root, and has no model for sampling).
_CAPABILITY_ADVICE = {
    "roots": "offer roots with --root PATH",
    "sampling": "mcp-tasks has no model to answer sampling requests: call this tool from a "
    "client that has one",
}

EXIT_OK, EXIT_TOOL_ERROR, EXIT_USAGE, EXIT_FAILED = 0, 1, 2, 3
EXIT_CANCELLED, EXIT_INPUT, EXIT_NOT_FOUND, EXIT_TIMEOUT, EXIT_INTERRUPTED = 4, 5, 6, 124, 130


# -- the commands ----------------------------------------------------------------------------------


@dataclass
class Cli(BrowseCommands):
    """One `mcp-tasks` command: its client, its callbacks for input requests, its exit code."""

    args: argparse.Namespace
    output: Output
    console: Console
    interrupts: Interrupts
    refused_input: str | None = None
    """The question a --json run refused to ask (the SDK then raises it as an MCPError)."""
    trace: HttpTrace = field(default_factory=HttpTrace)
    """The last HTTP answer that was not MCP, to explain the SDK's stand-in errors."""
    history: History = field(default_factory=History)
    """The tasks this CLI started (`mcp-tasks tasks` on 2026-07-28)."""
    client_mode: ClassVar[str] = "auto"
    """How the SDK client picks the protocol era (tests pin `legacy`)."""
    _form_lock: anyio.Lock = field(default_factory=anyio.Lock)

    @property
    def json(self) -> bool:
        return bool(self.args.json)

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
        # --json never prompts, so it never opens a browser either (`login` is asked for).
        interactive = not (self.json and self.args.command != "login")
        auth = (
            None
            if self.args.token
            else auth_for(self.args, self.console.err, interactive=interactive)
        )
        return connect(
            self.args.url,
            token=self.args.token,
            auth=auth,
            extension=extension,
            on_response=self.trace,
            mode=self.client_mode,
            **options,
        )

    def explain(self, exc: BaseException) -> str | None:
        """One line for a failure the user can fix (see `diagnose`), with mcp-tasks' advice."""
        line = explain_failure(exc, self.args.url, self.trace)
        leaf = first_leaf(exc)
        if line and isinstance(leaf, MCPError) and leaf.code == MISSING_REQUIRED_CLIENT_CAPABILITY:
            advice = [
                _CAPABILITY_ADVICE[n] for n in missing_capabilities(leaf) if n in _CAPABILITY_ADVICE
            ]
            line += "".join(f"; {a}" for a in advice)
        return line

    def protocol_error(self, exc: MCPError, kind: str = "protocol", **extra: Any) -> int:
        """An error the server (or the SDK on its behalf) answered: explained where we can."""
        message = self.explain(exc) or exc.message
        return self.output.error(kind, message, EXIT_FAILED, code=exc.code, data=exc.data, **extra)

    async def run(self) -> int:
        if self.args.command == "logout":  # no connection: only the cache is touched
            dropped = TokenCache(self.args.url).forget()
            return self.signed_in(False, "signed out" if dropped else "was not signed in")
        command: Callable[[Client], Awaitable[int]] = getattr(self, f"cmd_{self.args.command}")
        async with self.client() as client:
            # Inside the client: what escapes `async with Client` comes out in an ExceptionGroup.
            try:
                return await command(client)
            except MCPError as exc:
                if self.refused_input is not None:  # our own --json refusal, before any task
                    return self.output.error("input_required", exc.message, EXIT_INPUT)
                return self.protocol_error(exc)

    def signed_in(self, signed_in: bool, message: str) -> int:
        if self.json:
            self.output.emit({"server": self.args.url, "signedIn": signed_in})
        else:
            self.console.say(f"{message}: {self.args.url}")
        return EXIT_OK

    async def cmd_login(self, client: Client) -> int:
        await client.list_tools()  # any request: a 401 on the way signs in
        return self.signed_in(True, "signed in")

    async def cmd_call(self, client: Client) -> int:
        tool = await find_tool(client, self.args.tool)
        if tool is None:
            return self.output.error(
                "usage", f"the server has no tool {self.args.tool!r}", EXIT_USAGE
            )
        try:
            arguments = parse_arguments(self.args.arguments, tool.input_schema)
        except ArgumentError as exc:
            return self.output.error("usage", f"{tool.name}: {exc}", EXIT_USAGE)
        warning = unknown_argument_warning(tool.name, arguments, tool.input_schema)
        if warning is not None:  # sent anyway: the server may take it, and says so if not
            self.console.say(warning)
        tasks = Tasks(client)
        started = await tasks.start(tool.name, arguments)
        if isinstance(started, CallToolResult):
            return self.finish(None, started)
        created = started.created
        self.history.record(
            self.args.url,
            started.task_id,
            created.status if created is not None else "working",
            tool=tool.name,
            created_at=created.created_at if created is not None else None,
            status_message=created.status_message if created is not None else None,
        )
        if not self.json:
            self.console.say(f"task {started.task_id} started ({tool.name})")
        if self.args.detach:
            self.output.detached(started)
            return EXIT_OK
        return await self.wait(started)

    async def cmd_wait(self, client: Client) -> int:
        return await self.wait(Tasks(client).handle(self.args.task_id))

    async def cmd_get(self, client: Client) -> int:
        try:
            snapshot = await Tasks(client).get(self.args.task_id)
        except TaskNotFoundError as exc:
            self.remember(self.args.task_id, "not found")
            return self.output.error("not_found", str(exc), EXIT_NOT_FOUND, taskId=exc.task_id)
        self.remember(snapshot.task_id, snapshot.status, snapshot.status_message)
        self.output.snapshot(snapshot, self.resume_hint(snapshot.task_id))
        return EXIT_OK

    async def cmd_tasks(self, client: Client) -> int:
        session = client.session
        if session.protocol_version not in MODERN_PROTOCOL_VERSIONS:  # 2025-11-25: the server's

            def page(cursor: str | None) -> Any:
                params = PaginatedRequestParams(cursor=cursor) if cursor else None
                return session.send_request(ListTasksRequest(params=params), ListTasksResult)

            listed = await list_all(page, "tasks")
            rows = [
                TaskRow(t.task_id, t.status, None, t.created_at, t.status_message) for t in listed
            ]
            # A 2025-11-25 listing holds only the tasks of its own session, and every run of
            # this CLI is a new session: the tasks it started earlier come from its history
            # (with the status last seen).
            seen = {row.task_id for row in rows}
            rows += [
                TaskRow(e.task_id, e.status, e.tool, e.created_at, e.status_message)
                for e in self.history.of(self.args.url)
                if e.task_id not in seen
            ]
            self.output.tasks(rows, source="tasks/list+history", where=self.args.url)
            return EXIT_OK
        tasks = Tasks(client)
        for entry in self.history.of(self.args.url):
            if entry.status not in ACTIVE_STATUSES:
                continue  # an ended task never changes: what was seen last is still true
            try:
                snapshot = await tasks.get(entry.task_id)
            except TaskNotFoundError:
                self.remember(entry.task_id, "not found")
            else:
                self.remember(entry.task_id, snapshot.status, snapshot.status_message)
        rows = [
            TaskRow(e.task_id, e.status, e.tool, e.created_at, e.status_message)
            for e in self.history.of(self.args.url)
        ]
        self.output.tasks(rows, source="history", where=str(self.history.path))
        return EXIT_OK

    def remember(self, task_id: str, status: str, message: str | None = None) -> None:
        """The status just seen of a task this CLI started (others are not remembered)."""
        self.history.update_known(self.args.url, task_id, status, message)

    async def cmd_cancel(self, client: Client) -> int:
        tasks = Tasks(client)
        try:
            # Read first: a task that has ended cannot be cancelled, and saying "cancellation
            # requested" of it would be wrong. It may still end between the read and the
            # cancel; the read after says so.
            before = await tasks.get(self.args.task_id)
            if before.status in TERMINAL_STATUSES:
                self.remember(before.task_id, before.status, before.status_message)
                self.output.cancel_requested(before, requested=False)
                return EXIT_OK
            await tasks.cancel(self.args.task_id)
            snapshot = await tasks.get(self.args.task_id)
        except TaskNotFoundError as exc:
            self.remember(self.args.task_id, "not found")
            return self.output.error("not_found", str(exc), EXIT_NOT_FOUND, taskId=exc.task_id)
        self.remember(snapshot.task_id, snapshot.status, snapshot.status_message)
        self.output.cancel_requested(snapshot)
        return EXIT_OK

    # waiting, and what it ends with

    async def wait(self, handle: TaskHandle) -> int:
        task_id = handle.task_id

        def show(progress: TaskProgress) -> None:
            self.console.follow(progress.task)

        outer = self.interrupts.scope
        result: CallToolResult | None = None
        try:
            with anyio.CancelScope() as scope:
                self.interrupts.scope = scope
                result = await handle.wait(
                    on_status=None if self.json else show, timeout=self.args.timeout
                )
        except TimeoutError:
            return self.output.error(
                "timeout",
                f"gave up waiting after {self.args.timeout}s; task {task_id} is still running",
                EXIT_TIMEOUT,
                taskId=task_id,
                resume=self.resume_hint(task_id),
            )
        except TaskFailedError as exc:
            self.remember(task_id, "failed", exc.message)
            return self.protocol_error(exc, "failed", taskId=task_id)
        except TaskCancelledError as exc:
            self.remember(task_id, "cancelled")
            return self.output.error("cancelled", str(exc), EXIT_CANCELLED, taskId=task_id)
        except TaskInputError as exc:
            self.remember(task_id, "input_required")
            message = (
                f"{exc}; the task is still waiting: answer it with {self.resume_hint(task_id)}"
            )
            return self.output.error(
                "input_required",
                message,
                EXIT_INPUT,
                taskId=task_id,
                resume=self.resume_hint(task_id),
            )
        except TaskNotFoundError as exc:
            self.remember(task_id, "not found")
            return self.output.error("not_found", str(exc), EXIT_NOT_FOUND, taskId=task_id)
        finally:
            self.interrupts.scope = outer
            self.console.done()
        if result is None:  # interrupted
            return await self.interrupted(handle)
        self.remember(task_id, "completed")
        return self.finish(task_id, result)

    def finish(self, task_id: str | None, result: CallToolResult) -> int:
        """Print a tool's result; exit with 1 when the tool reported an error."""
        # Files saved from the result are named after the tool, else the task id.
        stem = getattr(self.args, "tool", None) or task_id or "result"
        self.output.result(task_id, result, stem=stem)
        return EXIT_TOOL_ERROR if result.is_error else EXIT_OK

    def resume_hint(self, task_id: str) -> str:
        return f"mcp-tasks wait {self.args.url} {task_id}"

    async def interrupted(self, handle: TaskHandle) -> int:
        task_id = handle.task_id
        cancel = False
        if not self.json:  # --json never prompts: the task is left running
            cancel = await confirm_cancel(self.console, self.interrupts, task_id)
        if cancel:
            with anyio.move_on_after(10):
                await handle.cancel()
                self.console.say(f"cancellation of task {task_id} requested")
                return EXIT_INTERRUPTED
            return self.output.error(
                "interrupted",
                f"could not reach the server to cancel task {task_id}; "
                f"retry with: mcp-tasks cancel {self.args.url} {task_id}",
                EXIT_INTERRUPTED,
                taskId=task_id,
            )
        message = f"task {task_id} left running; resume with: {self.resume_hint(task_id)}"
        if not self.json:  # the user chose this: say it plainly, not as an error
            self.console.say(message)
            return EXIT_INTERRUPTED
        return self.output.error(
            "interrupted",
            message,
            EXIT_INTERRUPTED,
            taskId=task_id,
            resume=self.resume_hint(task_id),
        )


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
        "--save-dir",
        type=Path,
        default=argparse.SUPPRESS,
        metavar="DIR",
        help="where to save images, audio and other binary content (default: a temporary dir)",
    )
    common.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help=f"show tracebacks and the SDK's log (also ${DEBUG_ENV}=1)",
    )
    common.add_argument(
        "--poll",
        action="store_true",
        default=argparse.SUPPRESS,
        help="wait by polling tasks/get instead of listening (subscriptions/listen)",
    )
    add_sign_in_arguments(common)

    parser = argparse.ArgumentParser(
        prog="mcp-tasks",
        description="Call MCP tools that may run as tasks; follow, answer and cancel tasks.",
        parents=[common],
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    url_help = f"the MCP endpoint (default: ${URL_ENV})"
    # Each command takes [URL] then its own positionals, sorted out by `_place_url` (argparse
    # cannot tell an optional leading URL from what follows it).
    for name, text in (
        ("tools", "list the server's tools: arguments, defaults, allowed values, task policy"),
        ("prompts", "list the server's prompts"),
        ("resources", "list the server's resources"),
        ("templates", "list the server's resource templates"),
        ("login", "sign in to the server now (tokens are cached per server)"),
        ("logout", "drop the cached sign-in of the server"),
        (
            "tasks",
            "list tasks: the server's tasks/list (2025-11-25), else the tasks this CLI started "
            "there, with their last status",
        ),
    ):
        sub = commands.add_parser(name, parents=[common], help=text)
        sub.add_argument("positional", nargs="*", metavar="URL", help=url_help)
    prompt = commands.add_parser("prompt", parents=[common], help="get a prompt's messages")
    prompt.add_argument(
        "positional",
        nargs="+",
        metavar="[URL] NAME [key=value ...]",
        help=f"{url_help}; the prompt; its arguments",
    )
    read = commands.add_parser("read", parents=[common], help="read a resource")
    read.add_argument("positional", nargs="+", metavar="[URL] URI", help=url_help)
    call = commands.add_parser("call", parents=[common], help="call a tool and wait for its result")
    call.add_argument(
        "positional",
        nargs="+",
        metavar="[URL] TOOL [key=value ...]",
        help=f"{url_help}; the tool; its arguments, typed by the tool's schema "
        "(key:=JSON for raw JSON)",
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
        sub.add_argument("positional", nargs="+", metavar="[URL] TASK_ID", help=url_help)
    return parser


# A first positional that is an address without its scheme: `127.0.0.1:8000/mcp`, `host/mcp`.
# Tool names, prompt names and task ids never hold `/` or `host:port`.
_ADDRESS = re.compile(
    r"^(localhost|[\w.-]+:\d+|\[[0-9A-Fa-f:]+\](:\d+)?)(/.*)?$|^[^/\s]+\.[^/\s]+/"
)


def _looks_like_address(value: str) -> bool:
    return "://" not in value and _ADDRESS.match(value) is not None


def _usage(parser: argparse.ArgumentParser, message: str) -> NoReturn:
    """A usage error in one line (what is missing or wrong), exit code 2."""
    parser.exit(EXIT_USAGE, f"{parser.prog}: error: {message}\n")


def _place_url(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Split the positionals into the URL and the command's own (a tool and its arguments, a
    prompt and its arguments, a resource URI or a task id); say what is missing or wrong."""
    values: list[str] = list(args.positional)
    del args.positional
    command = args.command
    # A resource URI has "://" too: it is the URL only when another positional follows it.
    takes_one = command in ("read", "get", "wait", "cancel")
    takes_task = command in ("get", "wait", "cancel")
    first = values[0] if values else ""
    from_env = False
    if values and "://" in first and not (takes_one and len(values) == 1):
        args.url = values.pop(0)
    elif takes_task and len(values) == 1 and "://" in first:  # a task id never has "://"
        _usage(
            parser, f"{command}: which task? give its id after the URL: {command} {first} TASK_ID"
        )
    elif values and _looks_like_address(first) and (takes_task or not takes_one or len(values) > 1):
        _usage(parser, f"{first!r} is not a URL: add its scheme, as in http://{first}")
    else:
        args.url = os.environ.get(URL_ENV) or None
        from_env = True
    if args.url is None:
        _usage(
            parser,
            f"{command}: which server? give the MCP endpoint's URL first (such as {LOCAL_URL}, "
            f"what make run serves), or set {URL_ENV}",
        )
    if not args.url.startswith(("http://", "https://")):
        named = f"{URL_ENV}={args.url}" if from_env else repr(args.url)
        _usage(parser, f"{named} is not an http:// or https:// URL (such as {LOCAL_URL})")
    if command in ("call", "prompt"):
        if not values:
            _usage(parser, f"{command}: which {'tool' if command == 'call' else 'prompt'}?")
        head, args.arguments = values[0], values[1:]
        if command == "call":
            args.tool = head
        else:
            args.name = head
    elif takes_one:
        what = "resource URI" if command == "read" else "task id"
        if len(values) != 1:
            _usage(parser, f"{command}: give one {what} (after the URL, if any)")
        if command == "read":
            args.uri = values[0]
        else:
            args.task_id = values[0]
    elif values:
        _usage(parser, f"{command}: unexpected {' '.join(values)}")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = build_parser()
    args = parser.parse_args(argv)
    _place_url(parser, args)
    defaults: dict[str, Any] = {
        "json": False,
        "token": None,
        "timeout": None,
        "root": [],
        "quiet": False,
        "poll": False,
        "save_dir": None,
        "debug": False,
    }
    for key, value in defaults.items():
        if not hasattr(args, key):
            setattr(args, key, value)
    if args.token is None:
        args.token = os.environ.get(TOKEN_ENV) or None
    args.debug = bool(args.debug) or os.environ.get(DEBUG_ENV, "") not in ("", "0")
    sign_in_defaults(args)
    return args


async def _amain(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    interrupts = Interrupts()
    try:
        stdin: int | None = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):  # no usable stdin: every prompt sees its end
        stdin = None
    console = Console(err, LineReader(stdin), quiet=bool(args.quiet or args.json))
    output = Output(out, console, json=bool(args.json), media=MediaSaver(args.save_dir))
    cli = Cli(args, output, console, interrupts)
    code: int | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(interrupts.watch)
        with anyio.CancelScope() as scope:
            interrupts.scope = scope
            try:
                code = await cli.run()
            except Exception as exc:  # connecting failed: the SDK raises it in an ExceptionGroup
                code = _report(cli, exc)
        tg.cancel_scope.cancel()
    if code is None:
        console.done()
        return cli.output.error("interrupted", "interrupted", EXIT_INTERRUPTED)
    return code


def _report(cli: Cli, exc: Exception) -> int:
    """The one line an exception out of a command ends with (re-raised: a closed pipe, and
    with --debug anything unexplained)."""
    leaf = first_leaf(exc)
    if isinstance(leaf, BrokenPipeError):  # our reader went away: not a connection problem
        raise exc
    if isinstance(leaf, MCPError):
        return cli.protocol_error(leaf)
    if isinstance(leaf, SignInNeeded):
        return cli.output.error("sign_in", str(leaf), EXIT_FAILED)
    if isinstance(leaf, SIGN_IN_ERRORS):
        return cli.output.error("sign_in", f"sign-in failed: {leaf}", EXIT_FAILED)
    explained = cli.explain(leaf)
    if explained is not None:
        return cli.output.error("connection", explained, EXIT_FAILED)
    if cli.args.debug:
        raise exc
    message = f"mcp-tasks failed: {type(leaf).__name__}: {leaf} (--debug shows the traceback)"
    if isinstance(leaf, httpx2.HTTPError | OSError):
        message = f"cannot reach {cli.args.url}: {leaf}"
    return cli.output.error("internal", message, EXIT_FAILED)


def _pipe_closed(exc: BaseException) -> bool:
    """Whether the reader of our output went away (`mcp-tasks tools URL | head`)."""
    leaf = first_leaf(exc)
    return isinstance(leaf, BrokenPipeError) or (
        isinstance(leaf, SystemExit) and isinstance(leaf.__context__, BrokenPipeError)
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.debug:
        logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    else:  # the SDK logs what it then raises (or recovers from): the one error line says it
        logging.getLogger("mcp").setLevel(logging.CRITICAL)
    try:
        return anyio.run(_amain, args, sys.stdout, sys.stderr)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BaseException as exc:
        if not _pipe_closed(exc):
            raise
        # Nothing more can be written; point stdout at /dev/null so the interpreter's own
        # final flush does not complain again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
