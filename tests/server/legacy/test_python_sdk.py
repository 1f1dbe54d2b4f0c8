"""The official Python SDK client (`mcp` 2.x), in each era it speaks, against the embedded stack.

`mode="legacy"` forces the 2025-11-25 handshake: questions arrive as server->client requests on
the POST's stream and the SDK resumes with `GET` + `Last-Event-ID`. `mode="auto"` probes
`server/discover` and, getting a modern answer, speaks 2026-07-28. Every wait has a deadline.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp_types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
    ListRootsResult,
    LoggingMessageNotificationParams,
    Root,
    TextContent,
)

pytestmark = [
    pytest.mark.anyio,
    # ping and logging/setLevel are 2025-11-25 methods: the SDK warns that 2026-07-28 drops them.
    pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning"),
]


class Answers:
    """Callbacks for the three kinds of question; each records what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.logs: list[Any] = []

    async def elicit(
        self, ctx: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        self.asked.append(f"elicit: {params.message}")
        content = {"username": "ada", "email": "ada@example.com", "name": "Ada", "context": "docs"}
        return ElicitResult(action="accept", content=content)

    async def sample(
        self, ctx: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult | ErrorData:
        self.asked.append("sample")
        return CreateMessageResult(
            role="assistant", content=TextContent(type="text", text="Paris"), model="test-model"
        )

    async def roots(self, ctx: ClientRequestContext) -> ListRootsResult | ErrorData:
        self.asked.append("roots")
        return ListRootsResult(roots=[Root(uri="file:///work", name="work")])

    async def log(self, params: LoggingMessageNotificationParams) -> None:
        self.logs.append(params.data)

    def options(self) -> dict[str, Any]:
        return {
            "elicitation_callback": self.elicit,
            "sampling_callback": self.sample,
            "list_roots_callback": self.roots,
            "logging_callback": self.log,
        }


def text_of(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def test_legacy_mode_connects_lists_and_calls(stack_url: str) -> None:
    answers = Answers()
    with anyio.fail_after(30):
        async with Client(stack_url, mode="legacy", **answers.options()) as client:
            assert client.protocol_version == "2025-11-25"
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert "test_simple_text" in names
            assert "test_elicitation" in names
            simple = await client.call_tool("test_simple_text", {})
            assert text_of(simple) == "This is a simple text response for testing."
            await client.send_ping()


async def test_legacy_mode_answers_elicitation_sampling_and_roots_mid_call(
    stack_url: str,
) -> None:
    answers = Answers()
    with anyio.fail_after(30):
        async with Client(stack_url, mode="legacy", **answers.options()) as client:
            elicited = await client.call_tool("test_elicitation", {"message": "Who are you?"})
            sampled = await client.call_tool("test_sampling", {"prompt": "Capital of France?"})
            several = await client.call_tool("test_input_required_result_multiple_inputs", {})
    assert '"username": "ada"' in text_of(elicited)
    assert text_of(sampled) == "LLM response: Paris"
    assert not several.is_error, several
    assert answers.asked[:2] == ["elicit: Who are you?", "sample"]
    assert {"roots", "sample"} <= set(answers.asked[2:])


async def test_legacy_mode_runs_a_call_over_several_rounds(stack_url: str) -> None:
    answers = Answers()
    with anyio.fail_after(30):
        async with Client(stack_url, mode="legacy", **answers.options()) as client:
            result = await client.call_tool("test_input_required_result_multi_round", {})
    assert not result.is_error, result
    assert [a for a in answers.asked if a.startswith("elicit")] == [
        "elicit: Step 1: What is your name?",
        "elicit: Step 2: What is your favorite color?",
    ]


async def test_legacy_mode_prompts_resources_and_logs(stack_url: str) -> None:
    answers = Answers()
    with anyio.fail_after(30):
        async with Client(stack_url, mode="legacy", **answers.options()) as client:
            prompts = [p.name for p in (await client.list_prompts()).prompts]
            prompt = await client.get_prompt("test_input_required_result_prompt", {})
            uris = [str(r.uri) for r in (await client.list_resources()).resources]
            readme = await client.read_resource("conformance://readme")
            await client.set_logging_level("info")
            await client.call_tool("test_tool_with_logging", {})
    assert prompts[0] == "test_input_required_result_prompt"
    assert "test_prompt_with_image" in prompts
    first = prompt.messages[0].content
    assert isinstance(first, TextContent)
    assert first.text == "Use this context: docs"
    assert "conformance://readme" in uris
    assert "fixtures" in getattr(readme.contents[0], "text", "")
    assert answers.logs == [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ]


async def test_auto_mode_speaks_2026_07_28_to_the_same_endpoint(stack_url: str) -> None:
    answers = Answers()
    with anyio.fail_after(30):
        async with Client(stack_url, **answers.options()) as client:
            assert client.protocol_version == "2026-07-28"
            names = [tool.name for tool in (await client.list_tools()).tools]
            elicited = await client.call_tool("test_elicitation", {"message": "Who are you?"})
    assert "greet" in names
    assert '"username": "ada"' in text_of(elicited)
