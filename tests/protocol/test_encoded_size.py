"""`encoded_size` counts what a message takes in the Lambda response: the transport's JSON text
inside the API Gateway proxy response's JSON string `body`, as the Python runtime encodes it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_tasks_aws.edge.apigw import response_to_api
from mcp_tasks_aws.protocol.jsonrpc import encoded_size, result_message
from mcp_tasks_aws.protocol.transport import _json_response


def payload_bytes(message: dict[str, Any]) -> int:
    """Bytes of the proxy response the runtime sends (3.12+: non-ASCII left as UTF-8)."""
    api = response_to_api(_json_response(200, message))
    return len(json.dumps(api, ensure_ascii=False).encode())


@pytest.mark.parametrize(
    "text",
    ['"' * 1000, "\\" * 1000, "\n\t" * 500, "é✓" * 500, "plain text " * 100, ""],
    ids=["quotes", "backslashes", "controls", "non-ascii", "plain", "empty"],
)
def test_encoded_size_is_what_a_message_adds_to_the_lambda_response(text: str) -> None:
    message = result_message(1, {"content": [{"type": "text", "text": text}]})
    empty = result_message(1, {})
    grown = payload_bytes(message) - payload_bytes(empty)
    assert encoded_size(message) - encoded_size(empty) == grown


def test_a_result_of_quotes_takes_twice_its_json_in_the_response() -> None:
    result = {"content": [{"type": "text", "text": '"' * 100_000}]}
    raw = len(json.dumps(result, separators=(",", ":")))
    assert encoded_size(result) > 2 * raw - 100
