"""Waiting by listening, end to end against the embedded stack with 700 ms listen windows.

The stack's server runs in this process, so a test counts what it served: `Recorder` wraps the
`subscriptions/listen` and `tasks/get` entries of its method table and notes each request's
task id. Client side, a test counts windows by wrapping `TaskListener.open_window`. Every wait
has a deadline; the CLI runs in this process, as its own tests run it (`support.cli`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_types import ElicitRequestParams, ElicitResult, ErrorData, TextContent

from mcp_tasks_aws.client import (
    TASKS_EXTENSION,
    PollPolicy,
    TaskHandle,
    TaskNotificationParams,
    TaskProgress,
    Tasks,
    TasksExtension,
)
from mcp_tasks_aws.local.stack import EmbeddedStack
from mcp_tasks_aws.protocol.era import Era
from support.cli import CliRun, run_cli
from support.mcp import running_stack

pytestmark = pytest.mark.anyio

SHORT_WINDOWS = {
    "MCP_TASKS_TOOLS": "conformance",
    "MCP_TASKS_LISTEN_WINDOW_MS": "700",
    "MCP_TASKS_LISTEN_POLL_MS": "100",
}
FAST = PollPolicy(floor=0.02, cap=0.5, default=0.1)
LISTEN, GET = "subscriptions/listen", "tasks/get"


class PacedWorker:
    """The worker function, each leg started `delay` seconds late (0 unless a test sets it),
    and a task's legs held until `hold(task_id)` says go (at most HOLD_LIMIT_S)."""

    HOLD_LIMIT_S = 60.0

    def __init__(self, stack: EmbeddedStack) -> None:
        self.stack = stack
        self.delay = 0.0
        self.hold: Callable[[str], bool] | None = None
        """False while the task's leg must not start yet (None: no task is held)."""

    def __call__(self, event: dict[str, Any], context: Any) -> Any:
        if self.delay:
            time.sleep(self.delay)
        hold, task_id = self.hold, str(event.get("taskId"))
        deadline = time.monotonic() + self.HOLD_LIMIT_S
        while hold is not None and not hold(task_id) and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.stack.worker_handler(event, context)


class Recorder:
    """The listen and `tasks/get` requests the stack served, by task id."""

    def __init__(self, stack: EmbeddedStack) -> None:
        self.methods: dict[Any, Any] = stack.api_app.server.methods
        self.calls: list[tuple[str, list[str]]] = []
        for method in (LISTEN, GET):
            params_model, handler = self.methods[(Era.MODERN, method)]
            self.methods[(Era.MODERN, method)] = (params_model, self._wrap(method, handler))

    def _wrap(self, method: str, handler: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        def served(call: Any, params: Any) -> Any:
            raw = call.request.params
            ids = raw.get("notifications", {}).get("taskIds") if method == LISTEN else None
            self.calls.append((method, list(ids or [raw.get("taskId")])))
            return handler(call, params)

        return served

    def count(self, method: str, task_id: str) -> int:
        return sum(1 for m, ids in self.calls if m == method and task_id in ids)


@pytest.fixture(scope="module")
def stack() -> Iterator[EmbeddedStack]:
    with running_stack(**SHORT_WINDOWS) as running:
        yield running


@pytest.fixture(scope="module")
def paced(stack: EmbeddedStack) -> PacedWorker:
    worker = PacedWorker(stack)
    stack.aws.register("WorkerFunction", worker)
    return worker


@pytest.fixture(scope="module")
def recorder(stack: EmbeddedStack, paced: PacedWorker) -> Recorder:
    return Recorder(stack)


@pytest.fixture
def server_methods(stack: EmbeddedStack, recorder: Recorder) -> dict[Any, Any]:
    """The method table (keyed by era and method), for a test to change through `monkeypatch`
    (restored after it)."""
    return recorder.methods


def count_windows(extension: TasksExtension, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Task ids of the listen windows the client opens (wraps `TaskListener.open_window`)."""
    opened: list[str] = []
    send = extension.listener.open_window

    async def open_window(session: ClientSession, task_id: str, *, timeout: float | None) -> Any:
        opened.append(task_id)
        return await send(session, task_id, timeout=timeout)

    monkeypatch.setattr(extension.listener, "open_window", open_window)
    return opened


def text_of(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


class Elicitations:
    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    async def __call__(
        self, ctx: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        self.asked.append((str(ctx.request_id), params.message))
        return ElicitResult(action="accept", content={"confirm": True})


# -- listening ----------------------------------------------------------------------------------


async def test_call_tool_waits_through_several_listen_windows(
    stack: EmbeddedStack, recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[TaskProgress] = []
    extension = TasksExtension(on_status=seen.append)
    windows = count_windows(extension, monkeypatch)
    async with Client(stack.url, extensions=[extension]) as client:
        with anyio.fail_after(20):
            result = await client.call_tool("slow_compute", {"seconds": 2.5, "label": "w"})
    assert text_of(result) == "Computed w after 2.5s."
    task_id = seen[0].task_id
    listens, gets = recorder.count(LISTEN, task_id), recorder.count(GET, task_id)
    assert listens >= 3, (listens, gets)
    assert windows == [task_id] * listens
    assert gets <= listens  # no polling: one tasks/get per window at most
    assert seen[-1].status == "completed"


async def test_input_arrives_by_notification_and_is_answered_once(
    stack: EmbeddedStack, recorder: Recorder, paced: PacedWorker
) -> None:
    paced.delay = 0.3  # the first window is open when the tool asks
    try:
        elicitations = Elicitations()
        seen: list[TaskProgress] = []
        extension = TasksExtension(on_status=seen.append)
        async with Client(
            stack.url, extensions=[extension], elicitation_callback=elicitations
        ) as client:
            with anyio.fail_after(20):
                result = await client.call_tool("confirm_delete", {"filename": "n.txt"})
    finally:
        paced.delay = 0.0
    assert text_of(result) == "Deleted n.txt."
    assert [message for _, message in elicitations.asked] == ["Delete n.txt?"]
    asking = [p for p in seen if p.status == "input_required"]
    assert asking, [p.status for p in seen]
    assert isinstance(asking[0].task, TaskNotificationParams)  # came on the listen stream
    task_id = seen[0].task_id
    assert recorder.count(GET, task_id) <= recorder.count(LISTEN, task_id)


async def test_listen_requests_carry_the_envelope_and_the_clients_headers(
    stack: EmbeddedStack,
) -> None:
    sent: list[tuple[dict[str, str], dict[str, Any]]] = []

    async def record(request: httpx2.Request) -> None:
        body = json.loads(request.content or b"{}")
        if isinstance(body, dict) and body.get("method") == LISTEN:
            sent.append(({k.lower(): v for k, v in request.headers.items()}, body))

    headers = {"Authorization": "Bearer not-checked-locally"}
    async with httpx2.AsyncClient(headers=headers, event_hooks={"request": [record]}) as http:
        transport = streamable_http_client(stack.url, http_client=http)
        async with Client(transport, extensions=[TasksExtension()]) as client:
            with anyio.fail_after(15):
                handle = await Tasks(client).start("slow_compute", {"seconds": 0.3, "label": "e"})
                assert isinstance(handle, TaskHandle)
                await handle.wait()
    assert sent
    for request_headers, body in sent:
        assert request_headers["mcp-method"] == LISTEN
        assert request_headers["mcp-protocol-version"] == "2026-07-28"
        assert request_headers["authorization"] == "Bearer not-checked-locally"
        params = body["params"]
        assert params["notifications"] == {"taskIds": [handle.task_id]}
        meta = params["_meta"]
        assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
        capabilities = meta["io.modelcontextprotocol/clientCapabilities"]
        assert TASKS_EXTENSION in capabilities["extensions"]


async def test_poll_mode_on_one_wait_never_listens(
    stack: EmbeddedStack, recorder: Recorder
) -> None:
    async with Client(stack.url, extensions=[TasksExtension(policy=FAST)]) as client:
        handle = await Tasks(client).start("slow_compute", {"seconds": 0.3, "label": "q"})
        assert isinstance(handle, TaskHandle)
        with anyio.fail_after(15):
            await handle.wait(wait_mode="poll")
    assert recorder.count(LISTEN, handle.task_id) == 0
    assert recorder.count(GET, handle.task_id) >= 1


# -- falling back to polling ---------------------------------------------------------------------


async def test_a_server_without_listen_is_polled_and_remembered(
    stack: EmbeddedStack,
    recorder: Recorder,
    server_methods: dict[Any, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(server_methods, (Era.MODERN, LISTEN))  # the server answers -32601
    created: list[str] = []
    extension = TasksExtension(
        policy=FAST, on_task_created=lambda task, _tool: created.append(task.task_id)
    )
    windows = count_windows(extension, monkeypatch)
    async with Client(stack.url, extensions=[extension]) as client:
        with anyio.fail_after(20):
            first = await client.call_tool("slow_compute", {"seconds": 0.5, "label": "p1"})
            second = await client.call_tool("slow_compute", {"seconds": 0.2, "label": "p2"})
        assert not extension.listener.available(client.session)
    assert (text_of(first), text_of(second)) == (
        "Computed p1 after 0.5s.",
        "Computed p2 after 0.2s.",
    )
    assert windows == [created[0]]  # tried once, then remembered for this client
    assert all(recorder.count(GET, task_id) >= 1 for task_id in created)


async def test_a_window_that_fails_falls_back_to_polling(
    stack: EmbeddedStack,
    recorder: Recorder,
    server_methods: dict[Any, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    params_model, listen = server_methods[(Era.MODERN, LISTEN)]

    def broken(call: Any, params: Any) -> Iterator[dict[str, Any]]:
        stream = listen(call, params)

        def messages() -> Iterator[dict[str, Any]]:
            yield next(stream)  # the acknowledgement, then the stream breaks
            raise RuntimeError("the store went away")

        return messages()

    monkeypatch.setitem(server_methods, (Era.MODERN, LISTEN), (params_model, broken))
    created: list[str] = []
    extension = TasksExtension(
        policy=FAST, on_task_created=lambda task, _tool: created.append(task.task_id)
    )
    windows = count_windows(extension, monkeypatch)
    async with Client(stack.url, extensions=[extension]) as client:
        with anyio.fail_after(20):
            result = await client.call_tool("slow_compute", {"seconds": 0.8, "label": "f"})
        assert extension.listener.available(client.session)  # a failure is not remembered
    assert text_of(result) == "Computed f after 0.8s."
    assert windows == created
    assert recorder.count(GET, created[0]) >= 2  # polled to the end


async def test_a_window_that_times_out_falls_back_to_polling(
    stack: EmbeddedStack,
    recorder: Recorder,
    paced: PacedWorker,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    created: list[str] = []
    extension = TasksExtension(
        policy=FAST,
        listen_timeout=0.2,  # shorter than the server's 700 ms windows
        on_task_created=lambda task, _tool: created.append(task.task_id),
    )
    windows = count_windows(extension, monkeypatch)
    # Nothing changes for the first second (the leg starts late and then ends at once), so
    # the first window stays open past the client's timeout.
    paced.delay = 1.0
    try:
        async with Client(stack.url, extensions=[extension]) as client:
            with anyio.fail_after(20):
                result = await client.call_tool("slow_compute", {"seconds": 0, "label": "t"})
    finally:
        paced.delay = 0.0
    assert text_of(result) == "Computed t after 0.0s."
    assert windows == created
    assert recorder.count(GET, created[0]) >= 2


# -- the CLI --------------------------------------------------------------------------------------


def detach_and_wait(url: str) -> tuple[str, CliRun]:
    detached = run_cli("call", url, "slow_compute", "seconds=0.5", "label=r", "--detach")
    assert detached.returncode == 0, detached.stderr
    task_id = detached.stdout.strip()
    return task_id, run_cli("wait", "--json", url, task_id)


def test_the_cli_waits_by_listening_unless_told_to_poll(
    stack: EmbeddedStack, recorder: Recorder, paced: PacedWorker
) -> None:
    url = stack.url
    store = stack.worker_app.store

    def resumed_listens(task_id: str) -> bool:
        """The detached task (label r) starts once `wait` (a second CLI run, however slow
        to start) listens for it: `wait` finds it working, whatever the machine."""
        record = store.get(task_id)
        label = record.arguments.get("label") if record is not None else None
        return label != "r" or recorder.count(LISTEN, task_id) >= 1

    paced.hold = resumed_listens
    try:
        runs, (resumed_id, resumed_run) = _listening_polling_and_resumed(url)
    finally:
        paced.hold = None
    ids = {}
    for label, run in runs.items():
        assert run.returncode == 0, run.stdout + run.stderr
        document = json.loads(run.stdout)
        assert document["result"]["content"][0]["text"] == f"Computed {label} after 1.5s."
        ids[label] = document["taskId"]
    listens, gets = recorder.count(LISTEN, ids["x"]), recorder.count(GET, ids["x"])
    assert listens >= 2, (listens, gets)
    assert gets <= listens
    assert recorder.count(LISTEN, ids["y"]) == 0
    assert recorder.count(GET, ids["y"]) >= 3  # every 200 ms (the tool's hint) for 1.5 s

    assert resumed_run.returncode == 0, resumed_run.stdout + resumed_run.stderr
    assert json.loads(resumed_run.stdout)["result"]["content"][0]["text"] == (
        "Computed r after 0.5s."
    )
    assert recorder.count(LISTEN, resumed_id) >= 1  # `wait` on a task id listens too


def _listening_polling_and_resumed(url: str) -> tuple[dict[str, Any], tuple[str, CliRun]]:
    """`call` listening (x), `call --poll` (y), and `call --detach` then `wait` (r), the CLI
    run in this process (`support.cli`), one after the other."""
    listening = run_cli("call", url, "slow_compute", "seconds=1.5", "label=x", "--json")
    polling = run_cli("call", url, "slow_compute", "seconds=1.5", "label=y", "--json", "--poll")
    return {"x": listening, "y": polling}, detach_and_wait(url)
