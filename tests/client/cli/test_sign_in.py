"""The whole sign-in on one machine: the embedded stack in AuthMode OAUTH with its local
authorization server, the official SDK client (through `client.cli.sign_in`) and the
`mcp-tasks` CLI.

A person at a browser is played by `scripts/headless_browser.py`: the SDK client calls it as its
redirect handler, the CLI reaches it through `$BROWSER`, as it would reach a real browser.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import anyio
import pytest

from mcp_tasks_aws.client.cli.sign_in import LoopbackCallback, TokenCache, oauth_provider
from mcp_tasks_aws.client.connect import connect
from mcp_tasks_aws.client.errors import TaskNotFoundError
from mcp_tasks_aws.client.handle import TaskHandle, Tasks
from mcp_tasks_aws.edge.apigw import jwt_principal
from mcp_tasks_aws.local.stack import PROJECT_ROOT, EmbeddedStack
from support.cli import CliRun, run_cli

sys.path.insert(0, str(PROJECT_ROOT / "scripts"))
from headless_browser import sign_in

BROWSER = f"{sys.executable} {PROJECT_ROOT / 'scripts' / 'headless_browser.py'} %s"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def stack() -> Iterator[EmbeddedStack]:
    # Every request needs `mcp`; the demo's `release` needs `deploy` on top (step-up).
    saved = dict(os.environ)
    env = {"MCP_TASKS_AUTH_MODE": "oauth", "MCP_TASKS_OAUTH_SCOPES": "mcp"}
    try:
        with EmbeddedStack(env=env) as running:
            yield running
    finally:
        os.environ.clear()
        os.environ.update(saved)


def free_port() -> int:
    """A loopback port free right now, for a sign-in's redirect."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def sdk_auth(url: str, tmp_path: Path, user: str, sign_ins: list[str]) -> Any:
    async def redirect(authorization_url: str) -> None:
        sign_ins.append(authorization_url)
        await anyio.to_thread.run_sync(sign_in, authorization_url, user)

    return oauth_provider(
        url,
        cache=TokenCache(url, tmp_path / user),
        callback=LoopbackCallback(port=free_port(), timeout=30),
        redirect_handler=redirect,
    )


def owner_of(stack: EmbeddedStack, task_id: str) -> str:
    record = stack.worker_app.store.get(task_id)
    assert record is not None
    return str(record.owner)


@pytest.mark.anyio
async def test_the_sdk_client_signs_in_and_runs_a_task_bound_to_the_user(
    stack: EmbeddedStack, tmp_path: Path
) -> None:
    issuer = stack.authorization_server.issuer if stack.authorization_server else ""
    alice_sign_ins: list[str] = []
    # Given alice signs in through the SDK's OAuth client (discovery, registration, PKCE)
    async with connect(stack.url, auth=sdk_auth(stack.url, tmp_path, "alice", alice_sign_ins)) as c:
        # When she calls an inline tool and starts a task
        stats = await c.call_tool("text_stats", {"text": "One. Two."})
        assert not stats.is_error
        started = await Tasks(c).start("checksum_archive", {"files": 2, "seconds_per_file": 0})
        assert isinstance(started, TaskHandle)
        result = await started.wait(timeout=30)
        assert not result.is_error
        client_id = TokenCache(stack.url, tmp_path / "alice").client()
    # Then she signed in once, and the task belongs to her: issuer, subject and client
    assert len(alice_sign_ins) == 1
    assert "code_challenge_method=S256" in alice_sign_ins[0]
    assert client_id is not None
    assert owner_of(stack, started.task_id) == jwt_principal(issuer, "alice", client_id.client_id)

    # And bob, signed in on his own, cannot see it
    async with connect(stack.url, auth=sdk_auth(stack.url, tmp_path, "bob", [])) as bob:
        with pytest.raises(TaskNotFoundError):
            await Tasks(bob).get(started.task_id)


@pytest.mark.anyio
async def test_a_tool_scope_the_token_lacks_is_stepped_up(
    stack: EmbeddedStack, tmp_path: Path
) -> None:
    sign_ins: list[str] = []
    async with connect(stack.url, auth=sdk_auth(stack.url, tmp_path, "carol", sign_ins)) as c:
        await c.list_tools()  # signed in with what every request needs: `mcp`
        assert "scope=mcp" in sign_ins[0]
        # `release` needs `deploy`: the 403 makes the SDK sign in again asking for both
        started = await Tasks(c).start("release", {"service": "api", "version": "1.2"})
    assert len(sign_ins) == 2
    assert "deploy" in sign_ins[1]
    assert "mcp" in sign_ins[1]
    assert isinstance(started, TaskHandle)


# -- the CLI ------------------------------------------------------------------------------------


def cli(stack: EmbeddedStack, config: Path, *args: str, browser: str = BROWSER) -> Any:
    env = {
        **os.environ,
        "MCP_TASKS_CONFIG_DIR": str(config),
        "BROWSER": browser,
        "MCP_TASKS_CALLBACK_PORT": str(free_port()),
        "MCP_TASKS_SIGN_IN_TIMEOUT": "10",
    }
    env.pop("MCP_TASKS_TOKEN", None)
    command = args[0]
    argv = [sys.executable, "-m", "mcp_tasks_aws.client.cli.main", command, stack.url, *args[1:]]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)


def cli_here(stack: EmbeddedStack, config: Path, *args: str) -> CliRun:
    """A command that never opens a browser (`--token`, `logout`), run in this process
    (`support.cli`): a browser it tried to open would fail the run."""
    command = args[0]
    with mock.patch("webbrowser.open", side_effect=AssertionError("no browser for this run")):
        return run_cli(command, stack.url, *args[1:], MCP_TASKS_CONFIG_DIR=str(config))


def cached(config: Path, url: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(TokenCache(url, config).path.read_text())
    return data


def test_the_cli_signs_in_caches_refreshes_and_signs_out(
    stack: EmbeddedStack, tmp_path: Path
) -> None:
    issuer = stack.authorization_server.issuer if stack.authorization_server else ""
    # Given a sign-in through the browser
    login = cli(stack, tmp_path, "login")
    assert login.returncode == 0, login.stderr
    assert "signed in" in login.stderr
    first = cached(tmp_path, stack.url)
    assert oct(TokenCache(stack.url, tmp_path).path.stat().st_mode & 0o777) == "0o600"

    # When a task runs in a later process, no browser is needed (the cached token is used)
    call = cli(stack, tmp_path, "call", "checksum_archive", "files=1", "seconds_per_file=0",
               "--json", browser="false")  # fmt: skip
    assert call.returncode == 0, call.stderr
    task_id = json.loads(call.stdout)["taskId"]
    assert owner_of(stack, task_id) == jwt_principal(issuer, "alice", first["client"]["client_id"])

    # And an expired token is refreshed, not signed in again
    expired = {**first, "expires_at": 0}
    TokenCache(stack.url, tmp_path).path.write_text(json.dumps(expired))
    tools = cli(stack, tmp_path, "tools", browser="false")
    assert tools.returncode == 0, tools.stderr
    refreshed = cached(tmp_path, stack.url)
    assert refreshed["tokens"]["access_token"] != first["tokens"]["access_token"]
    assert refreshed["tokens"]["refresh_token"] != first["tokens"]["refresh_token"]

    # Then logout drops the tokens, and the next command must sign in again
    assert cli_here(stack, tmp_path, "logout").returncode == 0
    assert not TokenCache(stack.url, tmp_path).path.exists()
    again = cli(stack, tmp_path, "tools", browser="false")  # no browser: the sign-in fails
    assert again.returncode != 0


def test_json_without_a_usable_token_fails_at_once_and_the_token_option_skips_sign_in(
    stack: EmbeddedStack, tmp_path: Path
) -> None:
    # Given no sign-in yet, and a browser that would sign in if it were opened
    done = cli(stack, tmp_path, "tools", "--json")
    # Then --json (which never prompts) does not open it: it fails, naming the command to run
    assert done.returncode == 3
    assert json.loads(done.stdout) == {
        "error": {
            "kind": "sign_in",
            "message": f"{stack.url} wants a sign-in, which --json never starts: run "
            f"mcp-tasks login {stack.url} first (or pass --token)",
        }
    }
    assert "tokens" not in cached(tmp_path, stack.url)  # (the client registration is kept)
    # And once signed in, --json uses the cached token
    assert cli(stack, tmp_path, "login").returncode == 0
    assert cli(stack, tmp_path, "tools", "--json", browser="false").returncode == 0

    # And that sign-in's token works as --token (one login for both stories), where nothing is
    # cached and nothing gets cached; a token that is not one is refused
    token = cached(tmp_path, stack.url)["tokens"]["access_token"]
    other = tmp_path / "other"
    done = cli_here(stack, other, "tools", "--token", token)
    assert done.returncode == 0, done.stderr
    assert not TokenCache(stack.url, other).path.exists()
    refused = cli_here(stack, other, "tools", "--token", "not-a-token")
    assert refused.returncode != 0
