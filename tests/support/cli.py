"""`mcp-tasks` run in this process, the way a shell would run it, for tests of what it does.

A CLI process costs about a second of imports before it does anything, and the CLI's tests run
it dozens of times; so they call its `main` here instead, with what a process would have: the
command line, scripted input on a real file descriptor (a pipe closed after the input, as a
shell's `<<<` gives it), its own stdout and stderr, and the environment (this process's, less
`MCP_TASKS_TOKEN` and `MCP_TASKS_URL`, plus `env`). An exit (`SystemExit`, as argparse's usage
errors raise it) is its exit code. Runs are one at a time and on the main thread, which the
CLI's Ctrl-C watch needs. The entry point itself (`python -m mcp_tasks_aws.client.cli.main`, real
signals) keeps a few subprocess tests of its own.
"""

from __future__ import annotations

import io
import os
import sys
import threading
from dataclasses import dataclass
from unittest import mock

from mcp_tasks_aws.client.cli.main import URL_ENV, main
from mcp_tasks_aws.client.connect import TOKEN_ENV

# A pipe takes this much without a reader; scripted answers are a few lines.
_MAX_INPUT = 4096
_STDIN_THREAD = "mcp-tasks-stdin"  # terminal.LineReader's reader


@dataclass(frozen=True)
class CliRun:
    """What a finished `mcp-tasks` left: the fields of `subprocess.CompletedProcess` tests read."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


def cli_env(**extra: str) -> dict[str, str]:
    """This process's environment as a fresh shell would hand it to `mcp-tasks`."""
    base = {k: v for k, v in os.environ.items() if k not in (TOKEN_ENV, URL_ENV)}
    return {**base, **extra}


def run_cli(*args: str, stdin: str = "", **env: str) -> CliRun:
    """Run `mcp-tasks ARGS` in this process with `stdin` as its input; `env` adds variables."""
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("run_cli runs on the main thread (the CLI watches for Ctrl-C)")
    data = stdin.encode()
    if len(data) > _MAX_INPUT:
        raise ValueError(f"scripted input over {_MAX_INPUT} bytes")
    before = {t for t in threading.enumerate() if t.name == _STDIN_THREAD}
    read, write = os.pipe()
    os.write(write, data)
    os.close(write)
    out, err = io.StringIO(), io.StringIO()
    try:
        with (
            open(read, encoding="utf-8", closefd=False) as stdin_file,
            mock.patch.dict(os.environ, cli_env(**env), clear=True),
            mock.patch.object(sys, "stdin", stdin_file),
            mock.patch.object(sys, "stdout", out),
            mock.patch.object(sys, "stderr", err),
        ):
            try:
                code = main(list(args))
            except SystemExit as exit_:
                code = _exit_code(exit_, err)
    finally:
        # The reader thread reads the descriptor to its end (the input is all there); wait for
        # it before closing, so that it never reads a descriptor number reused by now.
        for thread in threading.enumerate():
            if thread.name == _STDIN_THREAD and thread not in before:
                thread.join(timeout=10)
        os.close(read)
    return CliRun(args, code, out.getvalue(), err.getvalue())


def _exit_code(exit_: SystemExit, err: io.StringIO) -> int:
    """The status a process ending with `exit_` has (Python's own rules)."""
    if exit_.code is None:
        return 0
    if isinstance(exit_.code, int):
        return exit_.code
    print(exit_.code, file=err)
    return 1
