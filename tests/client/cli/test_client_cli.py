"""`mcp-tasks` driven against the embedded stack, with scripted stdin.

Each scenario (a short sequence of runs) runs when the first test that checks it asks for it,
the CLI in this process (`support.cli.run_cli`: its own stdin, stdout, stderr and environment,
as a shell would give them; a process would cost about a second of imports per run). Ctrl-C
needs the real entry point: those scenarios run `python -m mcp_tasks_aws.client.cli.main` (what
the `mcp-tasks` console script calls) as a process and send it SIGINT, both side by side. Task
states are checked with the library.
"""

from __future__ import annotations

import base64
import json
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_tasks_aws.client import Tasks, TaskSnapshot, connect
from mcp_tasks_aws.client.cli.main import URL_ENV, main, parse_args
from support.cli import cli_env
from support.cli import run_cli as run

CLI = [sys.executable, "-m", "mcp_tasks_aws.client.cli.main"]

# Bounds on a hang, not on speed: `make test` runs its parts side by side on 2 cores, where a
# CLI process (about a second of imports alone) may wait for a core for a while.
RUN_TIMEOUT_S = 60
SCENARIO_TIMEOUT_S = 300


def task_state(
    url: str, task_id: str, status: str | None = None, token: str | None = None
) -> TaskSnapshot:
    """The task now, or once it reaches `status` (within 10 s)."""

    async def get() -> TaskSnapshot:
        async with connect(url, token=token) as client:
            tasks = Tasks(client)
            with anyio.fail_after(10):
                while (current := await tasks.get(task_id)).status != (status or current.status):
                    await anyio.sleep(0.05)
                return current

    return anyio.run(get)


def interrupt(url: str, answer: bytes, *arguments: str) -> tuple[int, str, str]:
    """`call slow_compute`, Ctrl-C once it runs, answer the question: (code, stderr, task id)."""
    process = subprocess.Popen(
        [*CLI, "call", url, "slow_compute", *arguments],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
    )
    assert process.stderr is not None
    assert process.stdin is not None
    # The reads below have no timeout of their own: a CLI that never says it is working is
    # killed, which ends them (a blocked read would hold the module's pool, and the run, forever).
    bound = threading.Timer(RUN_TIMEOUT_S, process.kill)
    bound.start()
    try:
        lines: list[bytes] = []
        while not any(line.startswith(b"[working]") for line in lines):
            line = process.stderr.readline()
            assert line, b"".join(lines)
            lines.append(line)
        process.send_signal(signal.SIGINT)
        process.stdin.write(answer)
        process.stdin.flush()
        _, rest = process.communicate(timeout=RUN_TIMEOUT_S)
    finally:
        bound.cancel()
        process.kill()
    task_id = lines[0].decode().split()[1]  # "task ID started (slow_compute)"
    return process.returncode, b"".join(lines).decode() + rest.decode(), task_id


def fake_jwt(subject: str) -> str:
    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none'})}.{part({'sub': subject})}.sig"


# -- the scenarios ---------------------------------------------------------------------------------


def tools(url: str) -> dict[str, Any]:
    return {"text": run("tools", url), "json": run("tools", url, "--json")}


def call_json(url: str) -> dict[str, Any]:
    return {
        "inline": run("--json", "call", url, "greet", "name=Bob"),
        "task": run("call", "--json", url, "slow_compute", "seconds=1", "label=n"),
    }


def form(url: str) -> dict[str, Any]:
    return {
        "accept": run("call", url, "confirm_delete", "filename=x.txt", stdin="y\n"),
        "decline": run("call", url, "confirm_delete", "filename=y.txt", stdin="d\n"),
        "before_task": run("call", url, "test_tool_with_task", stdin="a\nAda\n"),
    }


def json_input(url: str) -> dict[str, Any]:
    in_task = run("call", "--json", url, "confirm_delete", "filename=z.txt", stdin="y\n")
    task_id = json.loads(in_task.stdout)["error"]["taskId"] if in_task.returncode == 5 else None
    return {
        "in_task": in_task,
        "state": task_state(url, task_id) if task_id else None,
        "before_task": run("call", "--json", url, "test_tool_with_task"),
    }


def lifecycle(url: str) -> dict[str, Any]:
    detached = run("call", url, "slow_compute", "seconds=0.5", "label=d", "--detach")
    task_id = detached.stdout.strip()
    runs: dict[str, Any] = {"task_id": task_id, "detach": detached, "get": run("get", url, task_id)}
    runs["wait"] = run("wait", url, task_id)
    runs["get_json"] = run("get", "--json", url, task_id)
    long_id = run("call", url, "slow_compute", "seconds=60", "label=l", "--detach").stdout.strip()
    runs["cancel"] = run("cancel", url, long_id)
    runs["cancelled"] = task_state(url, long_id, "cancelled")
    runs["wait_cancelled"] = run("wait", "--json", url, long_id)
    return runs


def failures(url: str) -> dict[str, Any]:
    return {
        "protocol": run("call", "--json", url, "protocol_error_job"),
        "tool": run("call", url, "failing_job"),
    }


def ctrl_c_cancel(url: str) -> dict[str, Any]:
    code, stderr, task_id = interrupt(url, b"y\n", "seconds=60", "label=c")
    return {
        "code": code,
        "stderr": stderr,
        "task_id": task_id,
        "state": task_state(url, task_id, "cancelled"),
    }


def ctrl_c_leave(url: str) -> dict[str, Any]:
    code, stderr, task_id = interrupt(url, b"\n", "seconds=4", "label=r")
    return {"code": code, "stderr": stderr, "task_id": task_id}


def token(url: str) -> dict[str, Any]:
    secret = fake_jwt("carol")
    detached = run(
        "call", url, "slow_compute", "seconds=1", "label=t", "--detach", MCP_TASKS_TOKEN=secret
    )
    task_id = detached.stdout.strip()
    return {
        "detach": detached,
        "anonymous": run("get", url, task_id),
        "option": run("wait", url, task_id, "--token", secret),
    }


def browse(url: str) -> dict[str, Any]:
    saved = tempfile.mkdtemp(prefix="cli-test-")
    return {
        "save_dir": Path(saved),
        "prompts": run("prompts", url),
        "prompt": run("prompt", url, "test_prompt_with_arguments", "arg1=hello", "arg2=big world"),
        "prompt_missing": run("prompt", url, "test_prompt_with_arguments", "arg1=x"),
        "prompt_image": run("prompt", url, "test_prompt_with_image", "--save-dir", saved),
        "prompt_json": run("prompt", "--json", url, "test_simple_prompt"),
        "resources": run("resources", url),
        "templates": run("templates", url),
        "read_text": run("read", url, "test://template/42/data"),
        "read_binary": run("read", url, "test://static-binary", "--save-dir", saved),
        "read_missing": run("read", url, "test://missing"),
        "image": run("call", url, "test_image_content", "--save-dir", saved),
        "mixed": run("call", url, "test_multiple_content_types", "--save-dir", saved),
        "audio": run("call", url, "test_audio_content", "--save-dir", saved),
        "header": run("call", url, "route_by_region", "region=São Paulo", "query=q"),
        "schema_refused": run("call", url, "json_schema_2020_12_tool", "contactMethod=phone"),
    }


SCENARIOS: dict[str, Callable[[str], dict[str, Any]]] = {
    "lifecycle": lifecycle,
    "token": token,
    "form": form,
    "json_input": json_input,
    "call_json": call_json,
    "failures": failures,
    "tools": tools,
    "browse": browse,
}
# Real processes, interrupted: they run side by side, started by the first of their tests.
INTERRUPTED: dict[str, Callable[[str], dict[str, Any]]] = {
    "ctrl_c_cancel": ctrl_c_cancel,
    "ctrl_c_leave": ctrl_c_leave,
}


@pytest.fixture(scope="module")
def outcomes() -> dict[str, dict[str, Any]]:
    """The in-process scenarios' outcomes, each run once for the module's tests."""
    return {}


@pytest.fixture
def outcome_of(
    stack_url: str, outcomes: dict[str, dict[str, Any]]
) -> Callable[[str], dict[str, Any]]:
    """The outcome of a scenario, by name (run on first use)."""

    def outcome(name: str) -> dict[str, Any]:
        if name not in outcomes:
            outcomes[name] = SCENARIOS[name](stack_url)
        return outcomes[name]

    return outcome


@pytest.fixture(scope="module")
def interrupted(stack_url: str) -> Iterator[dict[str, Future[dict[str, Any]]]]:
    # Both end before the first test that asked goes on: a process still running while a later,
    # in-process test runs would be charged to that test (support.tiers.Guard).
    with ThreadPoolExecutor(max_workers=len(INTERRUPTED)) as pool:
        futures = {name: pool.submit(run, stack_url) for name, run in INTERRUPTED.items()}
        wait(futures.values(), timeout=SCENARIO_TIMEOUT_S)
        yield futures


@pytest.fixture
def outcome(
    request: pytest.FixtureRequest, outcome_of: Callable[[str], dict[str, Any]]
) -> dict[str, Any]:
    """The outcome of the scenario named like the test (`test_<scenario>`)."""
    return outcome_of(request.node.name.removeprefix("test_"))


# -- the checks ------------------------------------------------------------------------------------


def test_tools(outcome: dict[str, Any]) -> None:
    text, as_json = outcome["text"], outcome["json"]
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    # Each tool: its signature and task policy, its summary, one line per argument.
    assert "slow_compute(seconds: number, label: string)  [task when allowed]" in lines
    assert "failing_job()  [task only]" in lines
    assert "greet(name: string?)  [inline]" in lines
    assert "    Sleeps for a while, then reports; a task when the client opts in." in lines
    assert any(
        line.split() == ["seconds", "number", "required", "How", "long", "to", "work."]
        for line in lines
    )
    assert any('default "World"' in line and "Who to greet." in line for line in lines)
    assert any("contactMethod" in line and "one of phone, email" in line for line in lines)
    assert any("header Mcp-Param-Region" in line for line in lines)
    assert all(line == line.rstrip() for line in lines)
    names = {tool["name"] for tool in json.loads(as_json.stdout)["tools"]}
    assert {"greet", "confirm_delete", "slow_compute"} <= names


def test_call_json(outcome: dict[str, Any]) -> None:
    inline, task = outcome["inline"], outcome["task"]
    assert inline.returncode == 0, inline.stderr
    document = json.loads(inline.stdout)
    assert document["taskId"] is None
    assert document["result"]["content"][0]["text"] == "Hello, Bob!"
    assert task.returncode == 0, task.stderr
    document = json.loads(task.stdout)
    assert document["taskId"]
    assert document["result"]["content"][0]["text"] == "Computed n after 1.0s."
    assert task.stderr == ""  # no status line, no prompt


def test_bad_arguments(stack_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    # In-process: the arguments are refused before anything but the tool listing is sent.
    code = main(["call", stack_url, "slow_compute", "seconds=soon", "label=x"])
    assert code == 2
    assert "seconds: 'soon' is not a number" in capsys.readouterr().err


def test_roots_option_answers_roots_requests(
    stack_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = main(
        ["call", stack_url, "test_input_required_result_list_roots", "--root", str(tmp_path)]
    )
    assert code == 0
    assert capsys.readouterr().out == f"Roots: {tmp_path.as_uri()}\n"


def test_form(outcome: dict[str, Any]) -> None:
    accept = outcome["accept"]
    assert accept.returncode == 0, accept.stderr
    assert accept.stdout == "Deleted x.txt.\n"
    assert "The server asks: Delete x.txt?" in accept.stderr
    assert "confirm [y/n; d declines, c cancels]" in accept.stderr
    assert outcome["decline"].stdout == "Kept y.txt.\n"
    before_task = outcome["before_task"]  # asked through MRTR, before the task exists
    assert before_task.returncode == 0, before_task.stderr
    assert before_task.stdout == "Hello from the task, Ada!\n"


def test_json_input(outcome: dict[str, Any], stack_url: str) -> None:
    in_task = outcome["in_task"]
    assert in_task.returncode == 5, in_task.stdout + in_task.stderr
    error = json.loads(in_task.stdout)["error"]
    assert error["kind"] == "input_required"
    assert "--json never prompts" in error["message"]
    assert "Delete z.txt?" in error["message"]
    assert error["resume"] == f"mcp-tasks wait {stack_url} {error['taskId']}"
    assert outcome["state"].status == "input_required"  # left for a person to answer
    before_task = outcome["before_task"]
    assert before_task.returncode == 5
    assert json.loads(before_task.stdout)["error"]["kind"] == "input_required"


def test_lifecycle(outcome: dict[str, Any]) -> None:
    task_id = outcome["task_id"]
    assert outcome["detach"].returncode == 0, outcome["detach"].stderr
    assert f"task {task_id}\nstatus: " in outcome["get"].stdout
    wait = outcome["wait"]
    assert wait.returncode == 0, wait.stderr
    assert wait.stdout == "Computed d after 0.5s.\n"  # "0.5" went out as a number
    assert "[completed]" in wait.stderr  # the status line: a line per change off a terminal
    got = json.loads(outcome["get_json"].stdout)
    assert got["status"] == "completed"
    assert got["result"]["content"][0]["text"] == "Computed d after 0.5s."
    assert outcome["cancel"].returncode == 0, outcome["cancel"].stderr
    assert "cancellation requested" in outcome["cancel"].stdout
    assert outcome["cancelled"].status == "cancelled"
    assert outcome["wait_cancelled"].returncode == 4
    assert json.loads(outcome["wait_cancelled"].stdout)["error"]["kind"] == "cancelled"


def test_failures(outcome: dict[str, Any]) -> None:
    protocol = outcome["protocol"]
    assert protocol.returncode == 3
    error = json.loads(protocol.stdout)["error"]
    assert (error["kind"], error["code"]) == ("failed", -32603)
    assert error["message"] == "The upstream service answered with a protocol error."
    tool = outcome["tool"]
    assert tool.returncode == 1
    assert tool.stdout == "The job failed: the input data is inconsistent.\n"


def test_ctrl_c_cancel(interrupted: dict[str, Future[dict[str, Any]]]) -> None:
    outcome = interrupted["ctrl_c_cancel"].result(timeout=SCENARIO_TIMEOUT_S)
    task_id = outcome["task_id"]
    assert outcome["code"] == 130
    assert f"Cancel task {task_id} on the server?" in outcome["stderr"]
    assert f"cancellation of task {task_id} requested" in outcome["stderr"]
    assert outcome["state"].status == "cancelled"


def test_ctrl_c_leave(interrupted: dict[str, Future[dict[str, Any]]], stack_url: str) -> None:
    outcome = interrupted["ctrl_c_leave"].result(timeout=SCENARIO_TIMEOUT_S)
    assert outcome["code"] == 130
    assert f"resume with: mcp-tasks wait {stack_url} {outcome['task_id']}" in outcome["stderr"]
    resumed = run("wait", stack_url, outcome["task_id"])
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout == "Computed r after 4.0s.\n"


def test_token(outcome: dict[str, Any]) -> None:
    assert outcome["detach"].returncode == 0, outcome["detach"].stderr
    anonymous = outcome["anonymous"]  # another caller: its task reads as unknown
    assert anonymous.returncode == 6
    assert "task not found" in anonymous.stderr.lower()
    option = outcome["option"]
    assert option.returncode == 0, option.stderr
    assert option.stdout == "Computed t after 1.0s.\n"


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["call"],
        ["frobnicate", "x"],
        ["get", "http://x/mcp"],
        ["tools"],
        ["call", "greet"],
        ["wait", "http://x/mcp", "a", "b"],
    ],
)
def test_usage_errors(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(URL_ENV, raising=False)
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    assert "error: " in capsys.readouterr().err  # argparse's (with its usage), or ours


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["call", "greet", "name=Ada"], ("env", "greet", ["name=Ada"], None)),
        (["call", "http://h/mcp", "greet"], ("http://h/mcp", "greet", [], None)),
        (["--json", "wait", "abc123"], ("env", None, None, "abc123")),
        (["get", "https://h/mcp", "abc123", "--poll"], ("https://h/mcp", None, None, "abc123")),
        (["tools"], ("env", None, None, None)),
    ],
)
def test_the_url_defaults_to_mcp_tasks_url(
    argv: list[str], expected: tuple[Any, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(URL_ENV, "http://from-env:8000/mcp")
    args = parse_args(argv)
    url, tool, arguments, task_id = expected
    assert args.url == ("http://from-env:8000/mcp" if url == "env" else url)
    assert getattr(args, "tool", None) == tool
    assert getattr(args, "arguments", None) == arguments
    assert getattr(args, "task_id", None) == task_id


def test_a_call_through_mcp_tasks_url(
    stack_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(URL_ENV, stack_url)
    assert main(["call", "greet", "name=Ada"]) == 0
    assert capsys.readouterr().out == "Hello, Ada!\n"


def test_browse(outcome: dict[str, Any]) -> None:
    saved: Path = outcome["save_dir"]
    prompts = outcome["prompts"]
    assert prompts.returncode == 0, prompts.stderr
    assert "test_prompt_with_arguments(arg1, arg2)" in prompts.stdout
    assert "      arg1: First test argument." in prompts.stdout
    assert outcome["prompt"].stdout == (
        "user: Prompt with arguments: arg1='hello', arg2='big world'\n"
    )
    missing = outcome["prompt_missing"]
    assert missing.returncode == 2
    assert "missing required argument(s): arg2" in missing.stderr
    image_prompt = outcome["prompt_image"]
    assert image_prompt.returncode == 0, image_prompt.stderr
    assert f"saved to {saved / 'test_prompt_with_image.png'}]" in image_prompt.stdout
    assert "user: Please analyze the image above." in image_prompt.stdout
    assert json.loads(outcome["prompt_json"].stdout)["messages"][0]["role"] == "user"
    rows = [line.split() for line in outcome["resources"].stdout.splitlines()]
    assert rows[3][:3] == ["test://static-binary", "static-binary", "image/png"]
    assert "test://template/{id}/data" in outcome["templates"].stdout
    assert json.loads(outcome["read_text"].stdout)["id"] == "42"
    assert outcome["read_binary"].stdout == (
        f"[test://static-binary (image/png) saved to {saved / 'static-binary.png'}]\n"
    )
    assert (saved / "static-binary.png").read_bytes().startswith(b"\x89PNG")
    missing_resource = outcome["read_missing"]
    assert missing_resource.returncode == 3
    assert "Resource not found: test://missing" in missing_resource.stderr


def test_binary_results_are_saved_to_files(outcome_of: Callable[[str], dict[str, Any]]) -> None:
    outcome = outcome_of("browse")
    saved: Path = outcome["save_dir"]
    image = outcome["image"]
    assert image.returncode == 0, image.stderr
    assert image.stdout == f"[image image/png saved to {saved / 'test_image_content.png'}]\n"
    assert (saved / "test_image_content.png").read_bytes().startswith(b"\x89PNG")
    mixed = outcome["mixed"].stdout.splitlines()
    assert mixed[0] == "Multiple content types test:"
    assert mixed[1].endswith(f"saved to {saved / 'test_multiple_content_types.png'}]")
    assert mixed[2:] == ["[resource test://mixed-content-resource]", '{"test":"data","value":123}']
    audio = outcome["audio"]
    assert audio.stdout == f"[audio audio/wav saved to {saved / 'test_audio_content.wav'}]\n"
    assert (saved / "test_audio_content.wav").read_bytes()[8:12] == b"WAVE"


def test_header_parameters_and_schema_errors_reach_the_user(
    outcome_of: Callable[[str], dict[str, Any]],
) -> None:
    outcome = outcome_of("browse")
    header = outcome["header"]  # the SDK mirrors region into Mcp-Param-Region, Base64-encoded
    assert header.returncode == 0, header.stderr
    assert header.stdout == "Ran 'q' in São Paulo.\n"
    refused = outcome["schema_refused"]
    assert refused.returncode == 1
    assert refused.stdout == (
        "Invalid arguments for tool json_schema_2020_12_tool: arguments: needs one of: "
        "missing email | missing phone; arguments: missing phone\n"
    )
