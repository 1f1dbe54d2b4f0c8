"""The official Python `mcp` 2.x client with no extension (it speaks neither the Tasks extension
nor 2025-11-25 tasks) runs long tools to their results through the handle tools, in both eras,
against the embedded stack (moto, the real handlers, legs run by the worker as deployed).

One test plays a model: it reads only the text of each result, calls the tool the text names
with the arguments the text gives (filling in the `<...>` it is told to), and reaches the final
answer. Every wait has a deadline.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp_types import ElicitRequestParams, ElicitResult, ErrorData, TextContent

from mcp_tasks_aws.local.stack import EmbeddedStack
from server.handles_support import next_call
from support.mcp import running_stack

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning"),
    pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning"),
]
MODES = ("auto", "legacy")  # auto speaks 2026-07-28 to this server; legacy forces 2025-11-25


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def stack_url() -> Iterator[str]:
    with running_stack(
        MCP_TASKS_TOOLS="server.handle_tools",
        MCP_TASKS_INLINE_BUDGET_MS="5000",
        MCP_TASKS_LISTEN_POLL_MS="50",
    ) as running:
        yield running.url


@pytest.fixture(scope="module")
def conformance_url() -> Iterator[str]:
    stack: EmbeddedStack
    with running_stack(MCP_TASKS_TOOLS="conformance") as stack:
        yield stack.url


def words(result: Any) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, TextContent))


class Names:
    """An elicitation callback answering every form with a name, recording the messages."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.asked: list[str] = []

    async def __call__(
        self, ctx: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        self.asked.append(params.message)
        return ElicitResult(action="accept", content={"name": self.name})


async def follow(client: Client, result: Any, limit: int = 20) -> tuple[Any, int]:
    """Call task_status until the task's own result comes back; (that result, calls made)."""
    calls = 0
    while (result.structured_content or {}).get("status") in ("working", "input_required"):
        assert calls < limit, "the task never finished"
        task_id = result.structured_content["taskId"]
        result = await client.call_tool("task_status", {"taskId": task_id, "waitSeconds": 5})
        calls += 1
    return result, calls


@pytest.mark.parametrize("mode", MODES)
async def test_a_client_without_tasks_runs_a_long_tool_to_its_result(
    stack_url: str, mode: str
) -> None:
    with anyio.fail_after(30):
        async with Client(stack_url, mode=mode) as client:
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert {"task_status", "task_answer", "task_cancel"} <= set(listed)
            # Listed without its outputSchema: the SDK validates structuredContent against one.
            assert listed["build_report"].output_schema is None
            handle = await client.call_tool("build_report", {"rows": 9, "seconds": 0.3})
            assert "Started task" in words(handle)
            result, calls = await follow(client, handle)
    assert not result.is_error
    assert result.structured_content == {"rows": 9, "summary": "9 rows counted"}
    assert calls <= 2  # waitSeconds: one call usually sees the task end


@pytest.mark.parametrize("mode", MODES)
async def test_a_task_only_tool_that_asks_is_answered_through_the_clients_elicitation(
    stack_url: str, mode: str
) -> None:
    names = Names("Ada")
    with anyio.fail_after(30):
        async with Client(stack_url, mode=mode, elicitation_callback=names) as client:
            handle = await client.call_tool("greet_later", {})
            # The SDK answers task_status's question (a multi round-trip round in
            # 2026-07-28, elicitation/create on the stream in 2025-11-25) by itself.
            result, _ = await follow(client, handle)
    assert words(result) == "Hello, Ada!"
    assert names.asked == ["What is your name?"]


@pytest.mark.parametrize("mode", MODES)
async def test_a_task_only_tool_completes_and_a_failure_is_a_tool_error(
    stack_url: str, mode: str
) -> None:
    with anyio.fail_after(30):
        async with Client(stack_url, mode=mode) as client:
            archived, _ = await follow(client, await client.call_tool("archive", {"name": "x"}))
            failed, _ = await follow(client, await client.call_tool("broken", {}))
    assert words(archived) == "Archived x."
    assert failed.is_error
    assert "The upstream service refused the job." in words(failed)


def fill(value: Any, answers: dict[str, Any]) -> Any:
    """Replace each `<type>` placeholder the text asked to fill in (a model's part)."""
    if isinstance(value, dict):
        return {k: fill(v, answers) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, answers) for v in value]
    if isinstance(value, str) and re.fullmatch(r"<[^>]+>", value):
        return answers[value]
    return value


@pytest.mark.parametrize("mode", MODES)
async def test_a_model_reading_only_the_text_reaches_the_final_answers(
    stack_url: str, mode: str
) -> None:
    """No structuredContent, no ids from anywhere but the text: call what the text says next
    until it says nothing more. The client declares no elicitation, so the question comes
    back as text and is answered through task_answer."""
    model_answers = {"<string>": "Grace"}
    finals = []
    with anyio.fail_after(60):
        async with Client(stack_url, mode=mode) as client:
            for tool, arguments in (("greet_later", {}), ("build_report", {"rows": 2})):
                text = words(await client.call_tool(tool, arguments))
                steps = 0
                while (step := next_call(text)) is not None:
                    steps += 1
                    assert steps < 20, text
                    name, args = step
                    text = words(await client.call_tool(name, fill(args, model_answers)))
                finals.append(text)
    assert finals[0] == "Hello, Grace!"
    assert '"summary":"2 rows counted"' in finals[1]


async def test_the_conformance_fixture_still_refuses_over_http(conformance_url: str) -> None:
    from mcp.shared.exceptions import MCPError

    from mcp_tasks_aws.protocol.errors import MISSING_REQUIRED_CLIENT_CAPABILITY

    with anyio.fail_after(20):
        async with Client(conformance_url) as client:
            with pytest.raises(MCPError) as caught:
                await client.call_tool("failing_job", {})
            handle = await client.call_tool("confirm_delete", {"filename": "f.txt"})
    assert caught.value.error.code == MISSING_REQUIRED_CLIENT_CAPABILITY
    assert (handle.structured_content or {}).get("status") == "working"
