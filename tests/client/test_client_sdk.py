"""The official SDK client with `TasksExtension`, end to end against the embedded stack.

Every wait has a deadline. Errors are caught inside `async with Client(...)`: what escapes the
SDK client's block comes out wrapped in an `ExceptionGroup`.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp_types import ElicitRequestParams, ElicitResult, ErrorData, TextContent

from mcp_tasks_aws.client import (
    CreateTaskResult,
    PollPolicy,
    TaskCancelledError,
    TaskFailedError,
    TaskHandle,
    TaskInputError,
    TaskNotFoundError,
    TaskProgress,
    Tasks,
    TasksExtension,
    connect,
)
from mcp_tasks_aws.client.wire import TaskSnapshot
from mcp_tasks_aws.protocol.progress import parse_status

pytestmark = pytest.mark.anyio

FAST = PollPolicy(floor=0.02, cap=0.5, default=0.1)
# Listen windows poll the store every 100 ms (deployed: 500 ms): a change reaches the client soon.
STACK_ENV = {"MCP_TASKS_LISTEN_POLL_MS": "100"}


class Elicitations:
    """An elicitation callback that accepts with fixed content and records what it was asked."""

    def __init__(self, content: dict[str, Any] | None = None) -> None:
        self.content = content or {"confirm": True, "name": "Ada"}
        self.asked: list[tuple[str, str]] = []

    async def __call__(
        self, ctx: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        self.asked.append((str(ctx.request_id), params.message))
        return ElicitResult(action="accept", content=self.content)


def text_of(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


@asynccontextmanager
async def client_for(
    url: str, extension: TasksExtension | None = None, **options: Any
) -> AsyncIterator[Client]:
    async with Client(
        url, extensions=[extension or TasksExtension(policy=FAST)], **options
    ) as client:
        yield client


async def status_becomes(
    tasks: Tasks, task_id: str, status: str, within: float = 10
) -> TaskSnapshot:
    with anyio.fail_after(within):
        while (snapshot := await tasks.get(task_id)).status != status:
            await anyio.sleep(0.05)
    return snapshot


async def test_inline_tools_are_untouched(stack_url: str) -> None:
    created: list[str] = []
    extension = TasksExtension(
        policy=FAST, on_task_created=lambda c, _name: created.append(c.task_id)
    )
    async with client_for(stack_url, extension) as client:
        with anyio.fail_after(10):
            result = await client.call_tool("greet", {"name": "Bob"})
    assert text_of(result) == "Hello, Bob!"
    assert created == []


async def test_a_task_is_invisible_to_call_tool(stack_url: str) -> None:
    seen: list[TaskProgress] = []
    extension = TasksExtension(policy=FAST, on_status=seen.append)
    async with client_for(stack_url, extension) as client:
        with anyio.fail_after(15):
            # Long enough to be seen working with its message: a completed task drops its
            # progress message, and a 0.3 s task could finish between two listen polls.
            result = await client.call_tool("slow_compute", {"seconds": 1.5, "label": "pi"})
    assert text_of(result) == "Computed pi after 1.5s."
    assert next(p.status for p in seen) == "working"
    assert seen[-1].status == "completed"
    # slow_compute reports "0/1.5 · pi": numbers first (see mcp_tasks_aws.protocol.progress).
    assert any(parse_status(p.status_message).message == "pi" for p in seen)
    assert len({p.task_id for p in seen}) == 1
    assert seen[0].tool_name == "slow_compute"


async def test_an_elicitation_during_the_task_goes_through_the_sessions_callback(
    stack_url: str,
) -> None:
    elicitations = Elicitations()
    statuses: list[str] = []
    extension = TasksExtension(policy=FAST, on_status=lambda p: statuses.append(p.status))
    async with client_for(stack_url, extension, elicitation_callback=elicitations) as client:
        with anyio.fail_after(15):
            result = await client.call_tool("confirm_delete", {"filename": "a.txt"})
    assert text_of(result) == "Deleted a.txt."
    assert [message for _, message in elicitations.asked] == ["Delete a.txt?"]  # once, not per poll
    assert "input_required" in statuses


async def test_a_durable_tool_asks_sleeps_and_completes(stack_url: str) -> None:
    """`durable_confirm` runs as a Lambda durable execution (AWS's in-process runner here):
    its question reaches the elicitation handler once, its sleep keeps it working."""
    elicitations = Elicitations()
    statuses: list[str] = []
    extension = TasksExtension(policy=FAST, on_status=lambda p: statuses.append(p.status))
    async with client_for(stack_url, extension, elicitation_callback=elicitations) as client:
        with anyio.fail_after(30):
            result = await client.call_tool("durable_confirm", {"filename": "d.txt"})
    assert text_of(result) == "Deleted d.txt durably (5 characters checked)."
    assert [message for _, message in elicitations.asked] == ["Durably delete d.txt?"]
    assert "input_required" in statuses


async def test_a_durable_task_is_cancelled_mid_sleep(stack_url: str) -> None:
    """Its question answered, `durable_confirm` sleeps an hour of durable time (a minute here);
    a cancel then wins: the task is cancelled and never deletes."""
    statuses: list[str | None] = []
    async with client_for(stack_url, elicitation_callback=Elicitations()) as client:
        tasks = Tasks(client)
        with anyio.fail_after(30):
            handle = await tasks.start(
                "durable_confirm", {"filename": "e.txt", "sleep_seconds": 3600}
            )
            assert isinstance(handle, TaskHandle)
            async with anyio.create_task_group() as group:

                async def follow() -> None:  # answers the question, as a waiting client does
                    with pytest.raises(TaskCancelledError):
                        await handle.wait(on_status=lambda p: statuses.append(p.status_message))

                group.start_soon(follow)
                while not any((m or "").startswith("sleeping until") for m in statuses):
                    await anyio.sleep(0.05)
                await tasks.cancel(handle.task_id)
            snapshot = await status_becomes(tasks, handle.task_id, "cancelled")
    assert snapshot.status == "cancelled"


async def test_two_questions_at_once_are_each_answered_once(stack_url: str) -> None:
    elicitations = Elicitations({"name": "Ada"})
    async with client_for(stack_url, elicitation_callback=elicitations) as client:
        with anyio.fail_after(15):
            result = await client.call_tool("multi_input", {})
    assert text_of(result) == "Got Ada and Ada."
    assert sorted(m for _, m in elicitations.asked) == ["First: your name?", "Second: your name?"]
    assert len({key for key, _ in elicitations.asked}) == 2


async def test_input_asked_before_the_task_exists_uses_the_sdks_mrtr_path(stack_url: str) -> None:
    elicitations = Elicitations({"name": "Ada"})
    async with client_for(stack_url, elicitation_callback=elicitations) as client:
        with anyio.fail_after(15):
            result = await client.call_tool("test_tool_with_task", {})
    assert text_of(result) == "Hello from the task, Ada!"
    assert elicitations.asked == [("user_name", "What is your name?")]


async def test_cancelling_the_awaiting_coroutine_cancels_the_task(stack_url: str) -> None:
    created: list[CreateTaskResult] = []
    started = anyio.Event()

    def on_created(task: CreateTaskResult, _tool: str) -> None:
        created.append(task)
        started.set()

    extension = TasksExtension(policy=FAST, on_task_created=on_created)
    async with client_for(stack_url, extension) as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "slow_compute", {"seconds": 30, "label": "long"})
            with anyio.fail_after(10):
                await started.wait()
            await anyio.sleep(0.3)
            tg.cancel_scope.cancel()
        snapshot = await status_becomes(Tasks(client), created[0].task_id, "cancelled")
    assert snapshot.status == "cancelled"


async def test_a_protocol_failure_raises_the_typed_error(stack_url: str) -> None:
    async with client_for(stack_url) as client:
        with pytest.raises(TaskFailedError) as caught, anyio.fail_after(15):
            await client.call_tool("protocol_error_job", {})
    assert caught.value.code == -32603
    assert caught.value.message == "The upstream service answered with a protocol error."
    assert caught.value.task_id


async def test_a_tool_error_in_a_task_is_a_result_with_is_error(stack_url: str) -> None:
    async with client_for(stack_url) as client:
        with anyio.fail_after(15):
            result = await client.call_tool("failing_job", {})
    assert result.is_error is True
    assert text_of(result) == "The job failed: the input data is inconsistent."


async def test_a_refused_input_request_fails_clearly_and_cancels(stack_url: str) -> None:
    async def refuse(
        ctx: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        return ErrorData(code=-32600, message="nobody to ask")

    async with client_for(stack_url, elicitation_callback=refuse) as client:
        with pytest.raises(TaskInputError, match="nobody to ask") as caught, anyio.fail_after(15):
            await client.call_tool("confirm_delete", {"filename": "b.txt"})
        assert caught.value.method == "elicitation/create"
        await status_becomes(Tasks(client), caught.value.task_id, "cancelled")


async def test_without_the_capability_the_server_fails_the_task(stack_url: str) -> None:
    async with client_for(stack_url) as client:  # no elicitation callback: not declared
        with pytest.raises(TaskFailedError) as caught, anyio.fail_after(15):
            await client.call_tool("confirm_delete", {"filename": "b.txt"})
    assert caught.value.code == -32021


async def test_resume_by_task_id_from_a_second_client(stack_url: str) -> None:
    # The task keeps the capabilities of the request that created it: declare elicitation.
    async with client_for(stack_url, elicitation_callback=Elicitations()) as first:
        with anyio.fail_after(10):
            handle = await Tasks(first).start("confirm_delete", {"filename": "c.txt"})
    assert isinstance(handle, TaskHandle)
    task_id = handle.task_id  # what a process would persist before it exits

    elicitations = Elicitations()
    async with client_for(stack_url, elicitation_callback=elicitations) as second:
        tasks = Tasks(second)
        with anyio.fail_after(15):
            result = await tasks.handle(task_id).wait()
        assert text_of(result) == "Deleted c.txt."
        assert (await tasks.get(task_id)).status == "completed"
    assert [m for _, m in elicitations.asked] == ["Delete c.txt?"]


async def test_the_handle_api_by_hand(stack_url: str) -> None:
    async with client_for(stack_url, elicitation_callback=Elicitations()) as client:
        tasks = Tasks(client)
        with anyio.fail_after(10):
            inline = await tasks.start("greet", {})
        assert not isinstance(inline, TaskHandle)
        assert text_of(inline) == "Hello, World!"

        handle = await tasks.start("confirm_delete", {"filename": "d.txt"})
        assert isinstance(handle, TaskHandle)
        assert handle.created is not None
        waiting = await status_becomes(tasks, handle.task_id, "input_required")
        (key,) = (waiting.input_requests or {}).keys()
        await handle.update({key: ElicitResult(action="decline")})
        with anyio.fail_after(15):
            result = await handle.wait()
        assert text_of(result) == "Kept d.txt."

        running = await tasks.start("slow_compute", {"seconds": 30, "label": "x"})
        assert isinstance(running, TaskHandle)
        with pytest.raises(TimeoutError):
            await running.wait(timeout=0.3)
        assert (await running.get()).status == "working"  # a timed-out wait leaves it running
        await running.cancel()
        await status_becomes(tasks, running.task_id, "cancelled")

        with pytest.raises(TaskNotFoundError) as caught:
            await tasks.get("no-such-task")
        assert caught.value.code == -32602


async def test_tasks_requests_carry_the_routing_headers(stack_url: str) -> None:
    headers: list[dict[str, str]] = []

    async def record(request: httpx2.Request) -> None:
        body = json.loads(request.content or b"{}")
        if isinstance(body, dict) and str(body.get("method", "")).startswith("tasks/"):
            headers.append(
                {
                    **{k.lower(): v for k, v in request.headers.items()},
                    "_taskId": body["params"]["taskId"],
                }
            )

    async with httpx2.AsyncClient(event_hooks={"request": [record]}) as http:
        transport = streamable_http_client(stack_url, http_client=http)
        extension = TasksExtension(policy=FAST, wait_mode="poll")  # so tasks/get is sent
        async with Client(transport, extensions=[extension]) as client:
            handle = await Tasks(client).start("slow_compute", {"seconds": 0, "label": "h"})
            assert isinstance(handle, TaskHandle)
            with anyio.fail_after(10):
                await handle.wait()
            await handle.cancel()
    methods = {h["mcp-method"] for h in headers}
    assert methods == {"tasks/get", "tasks/cancel"}
    assert all(h["mcp-name"] == h["_taskId"] == handle.task_id for h in headers)


def fake_jwt(subject: str) -> str:
    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none'})}.{part({'sub': subject})}.sig"


async def test_a_bearer_token_scopes_tasks_to_its_caller(stack_url: str) -> None:
    async with connect(stack_url, token=fake_jwt("alice")) as alice:
        handle = await Tasks(alice).start("slow_compute", {"seconds": 30, "label": "a"})
        assert isinstance(handle, TaskHandle)
        async with connect(stack_url, token=fake_jwt("bob")) as bob:
            with pytest.raises(TaskNotFoundError):
                await Tasks(bob).get(handle.task_id)
        assert (await handle.get()).status == "working"
        await handle.cancel()
