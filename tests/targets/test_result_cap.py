"""Inline results of declared targets are capped as task results are (`tasks.legs`'s
MAX_RESULT_BYTES, counted by `protocol.jsonrpc.encoded_size`: escapes included), and an HTTP
body is read up to that cap and no further."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_tasks_aws.protocol.jsonrpc import MAX_RESULT_BYTES, encoded_text_size
from mcp_tasks_aws.targets.http import send
from mcp_tasks_aws.targets.ports import HttpRequest
from support.mcp import McpClient
from support.targets import FakeCalls, Received, Upstream, bound, sending_for_real, tool, write

LAMBDA_RESPONSE_LIMIT = 6 * 1024 * 1024
QUOTES = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


def quote_dense(json_bytes: int) -> dict[str, Any]:
    """An object whose compact JSON takes `json_bytes`, nearly all of it escaped quotes."""
    return {"q": '"' * ((json_bytes - 8) // 2)}


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    server = Upstream()
    yield server
    server.close()


def text_of(result: dict[str, Any]) -> str:
    return "".join(block["text"] for block in result["content"])


def assert_refused_as_too_large(client: McpClient, name: str, arguments: dict[str, Any]) -> None:
    response = client.call_tool(name, arguments)
    assert response.status == 200
    # What API Gateway would get back: within Lambda's 6 MB, escapes of the proxy body included.
    assert encoded_text_size(response.body) < LAMBDA_RESPONSE_LIMIT
    result = response.json["result"]
    assert result["isError"] is True
    assert "structuredContent" not in result
    text = text_of(result)
    assert text.startswith(f"Tool {name}: its target answered ")
    assert f"a result may be at most {MAX_RESULT_BYTES / 1e6:.1f} MB" in text


def test_a_quote_dense_lambda_payload_with_an_output_schema_is_a_tool_error_saying_so(
    tmp_path: Path, make_client: Callable[..., McpClient]
) -> None:
    payload = quote_dense(1_600_000)
    assert len(json.dumps(payload, separators=(",", ":"))) <= 1_600_000
    calls = FakeCalls(functions={"big": lambda event: payload, "small": lambda event: {"q": "x"}})
    declaration = write(
        tmp_path,
        tool("big", {"kind": "lambda", "function": "big"}, outputSchema=QUOTES),
        tool("small", {"kind": "lambda", "function": "small"}, outputSchema=QUOTES),
    )
    client = make_client(bound(declaration, calls))
    assert_refused_as_too_large(client, "big", {"text": "x"})
    assert client.tool_result("small", {"text": "x"})["structuredContent"] == {"q": "x"}


def test_a_quote_dense_http_body_with_an_output_schema_is_a_tool_error_saying_so(
    tmp_path: Path, upstream: Upstream, make_client: Callable[..., McpClient]
) -> None:
    body = json.dumps(quote_dense(2_800_000), separators=(",", ":")).encode()
    assert len(body) < MAX_RESULT_BYTES  # read whole: the encoded result is what is too large
    upstream.answer = lambda received: (200, {"Content-Type": "application/json"}, [body])
    target = {"kind": "http", "method": "GET", "url": f"{upstream.url}/quotes"}
    declaration = write(tmp_path, tool("quotes", target, outputSchema=QUOTES))
    client = make_client(bound(declaration, sending_for_real(FakeCalls())))
    assert_refused_as_too_large(client, "quotes", {"text": "x"})


def streaming(total: int, chunk: int = 64 * 1024) -> Callable[[Received], Any]:
    def answer(received: Received) -> Any:
        def chunks() -> Iterator[bytes]:
            for _ in range(total // chunk):
                yield b"x" * chunk

        return 200, {"Content-Type": "text/plain"}, chunks()

    return answer


def test_an_http_body_is_read_up_to_the_cap_and_no_further(upstream: Upstream) -> None:
    total = 16 * MAX_RESULT_BYTES  # 64 MB: far more than any socket buffers between the two
    upstream.answer = streaming(total)
    answer = send(HttpRequest("GET", f"{upstream.url}/stream", {}, None, 10))
    assert answer.status == 200
    assert answer.truncated is True
    assert len(answer.body) == MAX_RESULT_BYTES
    # The upstream's handler runs on its own thread: give it a moment to see the socket closed.
    deadline = time.monotonic() + 5
    while not upstream.cut_off and time.monotonic() < deadline:
        time.sleep(0.01)
    assert upstream.cut_off, "the upstream wrote its whole body: the reader did not stop"
    assert upstream.sent < total / 2


def test_a_body_over_the_cap_is_a_tool_error_saying_so(
    tmp_path: Path, upstream: Upstream, make_client: Callable[..., McpClient]
) -> None:
    upstream.answer = streaming(2 * MAX_RESULT_BYTES)
    target = {"kind": "http", "method": "GET", "url": f"{upstream.url}/stream"}
    client = make_client(
        bound(write(tmp_path, tool("stream", target)), sending_for_real(FakeCalls()))
    )
    result = client.tool_result("stream", {"text": "x"})
    assert result["isError"] is True
    assert text_of(result) == (
        f"Tool stream: HTTP 200 from GET {upstream.url}/stream: the body is larger than "
        f"{MAX_RESULT_BYTES / 1e6:.1f} MB, more than a result may hold (it was not read further)"
    )
