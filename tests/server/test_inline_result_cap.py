"""A code tool's inline result is capped as a declared target's and a task's are
(`protocol.jsonrpc.MAX_RESULT_BYTES`, counted by `protocol.jsonrpc.encoded_size`: escapes included),
in both eras and on a multi round-trip retry: a quote-dense 1.6 MB string takes over 6 MB of
Lambda response, and the client would read API Gateway's 5xx instead of a tool error."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_tasks_aws.protocol.jsonrpc import MAX_RESULT_BYTES, encoded_text_size
from mcp_tasks_aws.protocol.request_state import RequestStateCodec
from mcp_tasks_aws.protocol.transport import HttpResponse, HttpTransport
from mcp_tasks_aws.server.legacy.endpoint import install_legacy
from mcp_tasks_aws.server.legacy.sessions import InMemoryLegacySessionStore
from mcp_tasks_aws.server.methods import SUPPORTED_VERSIONS, McpServer
from mcp_tasks_aws.tools.context import ToolContext
from mcp_tasks_aws.tools.registry import ToolSet
from support.legacy import LegacyClient, messages, priming_id, questions
from support.mcp import SECRET, McpClient

LAMBDA_RESPONSE_LIMIT = 6 * 1024 * 1024
QUOTES = 1_600_000
"""1.6 MB of quotes: 3.2 MB of JSON (under the cap), 6.4 MB once the proxy body escapes it."""
NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
NAME = {"action": "accept", "content": {"name": "Alice"}}

tools = ToolSet(name="cap-tools", version="0")


@tools.tool()
def quotes(count: int) -> str:
    """Returns `count` double quotes.

    Args:
        count: How many.
    """
    return '"' * count


@tools.prompt
def quoted_prompt(count: str) -> str:
    """A prompt of `count` double quotes.

    Args:
        count: How many.
    """
    return '"' * int(count)


@tools.tool()
async def asks_then_quotes(count: int, ctx: ToolContext) -> str:
    """Asks a name, then returns `count` double quotes.

    Args:
        count: How many.
    """
    await ctx.elicit("What is your name?", NAME_FORM, key="name")
    return '"' * count


@pytest.fixture(scope="module")
def transport() -> HttpTransport:
    server = McpServer(tools, state_codec=RequestStateCodec(SECRET))
    gate = install_legacy(
        server, secret=SECRET, sessions=InMemoryLegacySessionStore(), window_ms=300, poll_ms=20
    )
    return HttpTransport(server, supported_versions=SUPPORTED_VERSIONS, legacy=gate)


def assert_refused_as_too_large(response: HttpResponse, result: dict[str, Any]) -> None:
    # What API Gateway would get back: within Lambda's 6 MB, escapes of the proxy body included.
    assert encoded_text_size(response.read_all()) < LAMBDA_RESPONSE_LIMIT
    assert result["isError"] is True
    [block] = result["content"]
    assert block["text"].startswith("Tool ")
    assert "(as encoded in a response)" in block["text"]
    assert f"a result may be at most {MAX_RESULT_BYTES / 1e6:.1f} MB" in block["text"]


def test_a_quote_dense_result_of_a_code_tool_is_a_tool_error_saying_so(
    transport: HttpTransport,
) -> None:
    client = McpClient(transport)
    response = client.call_tool("quotes", {"count": QUOTES})
    assert response.status == 200
    result = response.json["result"]
    assert_refused_as_too_large(response, result)
    assert result["content"][0]["text"].startswith("Tool quotes: it returned 6.4 MB")
    # A result under the cap is the tool's, untouched.
    assert client.tool_result("quotes", {"count": 3})["content"][0]["text"] == '"""'


def test_a_multi_round_trip_retry_is_capped_too(transport: HttpTransport) -> None:
    client = McpClient(transport)
    arguments = {"count": QUOTES}
    asked = client.tool_result("asks_then_quotes", arguments)
    assert asked["resultType"] == "input_required"
    extra = {"inputResponses": {"name": NAME}, "requestState": asked["requestState"]}
    response = client.call_tool("asks_then_quotes", arguments, extra_params=extra)
    assert_refused_as_too_large(response, response.json["result"])


def test_a_2025_11_25_inline_call_is_capped(transport: HttpTransport) -> None:
    legacy = LegacyClient(transport)
    legacy.initialize()
    response = legacy.request("tools/call", {"name": "quotes", "arguments": {"count": QUOTES}})
    assert response.status == 200
    assert_refused_as_too_large(response, messages(response)[-1]["result"])


def test_a_2025_11_25_call_resumed_after_its_question_is_capped(transport: HttpTransport) -> None:
    legacy = LegacyClient(transport)
    legacy.initialize()
    arguments = {"count": QUOTES}
    asked = legacy.request("tools/call", {"name": "asks_then_quotes", "arguments": arguments})
    [question] = questions(asked)
    assert legacy.answer(question["id"], NAME).status == 202
    resumed = legacy.resume(priming_id(asked))
    assert resumed.status == 200
    assert_refused_as_too_large(resumed, messages(resumed)[-1]["result"])


@tools.tool()
def reports_then_writes(size: int, ctx: ToolContext) -> str:
    """Reports three steps, then returns `size` x's.

    Args:
        size: How many.
    """
    import time

    for step in (1, 2, 3):
        ctx.report(f"step {step}", progress=step, total=3)
        time.sleep(0.12)
    return "x" * size


def test_notifications_that_travel_with_an_answer_keep_it_within_a_lambda_response(
    transport: HttpTransport,
) -> None:
    # The notifications of a buffered answer travel in the same Lambda response as the result
    # (capped at 4 MB): a progressToken of 480,000 quotes, repeated in each notification, takes
    # 1.9 MB of response each. Past their own budget, notifications are left out; the result
    # is never the one that goes.
    client = McpClient(transport)
    from support.mcp import envelope

    meta = {**envelope(), "progressToken": '"' * 480_000}
    for accept in ("application/json, text/event-stream", "text/event-stream"):
        response = client.request(
            "tools/call",
            {"name": "reports_then_writes", "arguments": {"size": 1_000_000}},
            meta=meta,
            headers={"accept": accept},
        )
        assert response.status == 200
        assert encoded_text_size(response.read_all()) < LAMBDA_RESPONSE_LIMIT
        streamed = response.headers["content-type"] == "text/event-stream"
        final = messages(response)[-1] if streamed else response.json
        assert final["result"]["content"][0]["text"] == "x" * 1_000_000


def test_a_prompt_too_large_to_answer_is_a_request_error_saying_so(
    transport: HttpTransport,
) -> None:
    # A prompt's result has no isError form: the request fails, within Lambda's response limit.
    client = McpClient(transport)
    response = client.request(
        "prompts/get", {"name": "quoted_prompt", "arguments": {"count": str(QUOTES)}}
    )
    assert encoded_text_size(response.read_all()) < LAMBDA_RESPONSE_LIMIT
    error = client.error(response)
    assert error["code"] == -32603
    assert error["message"].startswith("Prompt quoted_prompt: its messages take 6.4 MB")
    assert f"an answer may be at most {MAX_RESULT_BYTES / 1e6:.1f} MB" in error["message"]


def test_a_prompt_within_the_cap_is_answered(transport: HttpTransport) -> None:
    result = McpClient(transport).result(
        "prompts/get", {"name": "quoted_prompt", "arguments": {"count": "10"}}
    )
    [message] = result["messages"]
    assert message["content"]["text"] == '"' * 10
