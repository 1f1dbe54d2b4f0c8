"""`mcp-tasks` ends a failure with one line that says the cause and the fix (issue 22.4).

Each test reads that line: a command without its task id or with a URL missing its scheme, a
wrong path (404), a refused token (401/403), a server that does not speak MCP, one that does
not listen, a tool needing a capability the CLI lacks, a closed stdin at a form, an empty
listing, a cancel of a task that has ended, and a reader that goes away (`| head -1`).
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from mcp_tasks_aws.client.cli.display import Output
from mcp_tasks_aws.client.cli.main import URL_ENV, main
from mcp_tasks_aws.client.cli.terminal import Console, LineReader
from mcp_tasks_aws.client.diagnose import first_leaf

CLI = [sys.executable, "-m", "mcp_tasks_aws.client.cli.main"]


def error_line(capsys: pytest.CaptureFixture[str]) -> str:
    """The command's stderr, which must be exactly one line."""
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    return lines[0]


# -- usage: what is missing or wrong on the command line -----------------------------------------


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (
            ["get", "http://127.0.0.1:8000/mcp"],
            "get: which task? give its id after the URL: get http://127.0.0.1:8000/mcp TASK_ID",
        ),
        (
            ["tools", "127.0.0.1:8000/mcp"],
            "'127.0.0.1:8000/mcp' is not a URL: add its scheme, as in http://127.0.0.1:8000/mcp",
        ),
        (
            ["call", "localhost:8000/mcp", "greet"],
            "'localhost:8000/mcp' is not a URL: add its scheme, as in http://localhost:8000/mcp",
        ),
        (
            ["tools"],
            "tools: which server? give the MCP endpoint's URL first (such as "
            "http://127.0.0.1:8000/mcp, what make run serves), or set MCP_TASKS_URL",
        ),
    ],
    ids=["get-without-id", "no-scheme", "no-scheme-call", "no-url"],
)
def test_a_usage_error_says_what_is_missing(
    argv: list[str],
    says: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(URL_ENV, raising=False)
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    assert error_line(capsys) == f"mcp-tasks: error: {says}"


def test_a_url_from_the_environment_without_http_is_named(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(URL_ENV, "ws://127.0.0.1:8000/mcp")
    with pytest.raises(SystemExit):
        main(["tools"])
    assert error_line(capsys) == (
        "mcp-tasks: error: MCP_TASKS_URL=ws://127.0.0.1:8000/mcp is not an http:// or https:// "
        "URL (such as http://127.0.0.1:8000/mcp)"
    )


# -- what the server answered ---------------------------------------------------------------------


class _Stub(BaseHTTPRequestHandler):
    """Answers every request with the server's `answer`: (status, content type, body)."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        status, content_type, body = self.server.answer  # type: ignore[attr-defined]
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def stub() -> Iterator[Any]:
    """A plain HTTP server on 127.0.0.1 that is not MCP; set `.answer` before calling it."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    server.answer = (200, "text/plain", b"")  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _stub_url(stub: Any, path: str = "/mcp") -> str:
    return f"http://127.0.0.1:{stub.server_address[1]}{path}"


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (
            (401, "text/plain", b"no"),
            "the server answered 401 Unauthorized at /mcp: it wants a valid token; check --token "
            "or MCP_TASKS_TOKEN (without a token, mcp-tasks signs in where the server offers "
            "OAuth)",
        ),
        (
            (403, "application/json", b"{}"),
            "the server answered 403 Forbidden at /mcp: it refused this token or this origin; "
            "check --token or MCP_TASKS_TOKEN (its audience and scopes)",
        ),
        (
            (200, "text/html", b"<html></html>"),
            "the server answered HTTP 200 (text/html) at /mcp, which is not MCP: is {url} an MCP "
            "endpoint? (the MCP endpoint is usually /mcp)",
        ),
        (
            (500, "application/json", b'{"message":"Internal Server Error"}'),
            "the server failed: HTTP 500 Internal Server Error at /mcp; the fault is on the "
            "server's side, not in this request: its log says why (make run's terminal; "
            "deployed, the API function's log)",
        ),
        (
            (503, "application/json", b'{"message":"Service Unavailable"}'),
            "the server failed: HTTP 503 Service Unavailable at /mcp; the fault is on the "
            "server's side, not in this request: its log says why (make run's terminal; "
            "deployed, the API function's log)",
        ),
    ],
    ids=["401", "403", "not-mcp", "500", "503"],
)
def test_a_refused_token_is_told_apart_from_a_server_that_is_not_mcp(
    stub: Any, answer: tuple[int, str, bytes], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    stub.answer = answer
    url = _stub_url(stub)
    assert main(["tools", url, "--token", "t0ken"]) == 3
    line = error_line(capsys)
    assert line == "error: " + says.format(url=url)
    assert "t0ken" not in line


def test_a_wrong_path_says_404_there_and_where_mcp_usually_is(
    stack_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    wrong = stack_url.replace("/mcp", "/api")
    assert main(["tools", wrong]) == 3
    right = stack_url
    assert error_line(capsys) == (
        "error: the server answered 404 Not Found at /api: nothing is served there; "
        f"the MCP endpoint is usually /mcp: try {right}"
    )


def test_an_address_nobody_listens_at_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/mcp"
    assert main(["tools", url]) == 3
    assert error_line(capsys) == (
        f"error: cannot reach {url}: nothing answers there; is the server running? "
        "(`make run` serves http://127.0.0.1:8000/mcp)"
    )


def _closed_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_tool_needing_sampling_names_the_capability(
    stack_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["call", stack_url, "test_missing_capability"]) == 3
    assert error_line(capsys) == (
        "error: the tool needs the client capability sampling, which this client did not "
        "declare; mcp-tasks has no model to answer sampling requests: call this tool from a "
        "client that has one"
    )


# -- what the terminal gives and takes ------------------------------------------------------------


def test_a_form_at_the_end_of_input_says_it_answered_cancel(stack_url: str) -> None:
    done = subprocess.run(
        [*CLI, "call", stack_url, "confirm_delete", "filename=x.txt"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={k: v for k, v in os.environ.items() if k != URL_ENV},
    )
    assert "no answer (stdin is closed): answered cancel" in done.stderr.splitlines()


def test_an_empty_listing_says_there_is_none() -> None:
    out, err = io.StringIO(), io.StringIO()
    output = Output(out, Console(err, LineReader(None)), json=False)
    output.resources([])
    output.templates([])
    output.prompts([])
    assert out.getvalue() == ""
    assert err.getvalue().splitlines() == [
        "the server lists no resources (it may have resource templates: mcp-tasks templates)",
        "the server lists no resource templates",
        "the server lists no prompts",
    ]


def test_cancel_of_a_completed_task_says_it_had_completed(
    stack_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["call", stack_url, "slow_compute", "seconds=0", "label=c", "--detach"]) == 0
    task_id = capsys.readouterr().out.strip()
    assert main(["wait", stack_url, task_id, "-q"]) == 0
    capsys.readouterr()
    assert main(["cancel", stack_url, task_id]) == 0
    assert capsys.readouterr().out == f"task {task_id} had already completed: nothing to cancel\n"


def test_a_reader_that_goes_away_ends_the_command_quietly(stack_url: str) -> None:
    # stdout is a pipe whose reader is gone before anything is written: every write is EPIPE.
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [*CLI, "templates", stack_url],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (0, "")


def test_an_unexpected_failure_is_one_line_and_its_traceback_is_behind_debug(
    stack_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_tasks_aws.client.cli.main import Cli

    async def broken(self: Cli, client: Any) -> int:
        raise RuntimeError("boom")

    monkeypatch.setattr(Cli, "cmd_tools", broken)
    assert main(["tools", stack_url]) == 3
    assert error_line(capsys) == (
        "error: mcp-tasks failed: RuntimeError: boom (--debug shows the traceback)"
    )
    for argv, debug in ((["tools", stack_url, "--debug"], ""), (["tools", stack_url], "1")):
        monkeypatch.setenv("MCP_TASKS_DEBUG", debug)
        with pytest.raises(BaseException) as caught:  # the traceback: raised as it is
            main(argv)
        assert repr(first_leaf(caught.value)) == "RuntimeError('boom')"
