"""JSON-RPC framing: classifying incoming messages, parse errors, outgoing shapes."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_tasks_aws.protocol.errors import INVALID_REQUEST, PARSE_ERROR, InvalidRequest, ParseError
from mcp_tasks_aws.protocol.jsonrpc import (
    ClientResponse,
    Notification,
    Request,
    classify,
    error_message,
    parse_json,
    request_id_of,
)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"cursor": "x"}},
            Request(1, "tools/list", {"cursor": "x"}),
        ),
        (
            {"jsonrpc": "2.0", "id": "abc", "method": "server/discover"},
            Request("abc", "server/discover", {}),
        ),
        (
            {"jsonrpc": "2.0", "id": 0, "method": "m", "params": None},
            Request(0, "m", {}),
        ),
        (
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}},
            Notification("notifications/cancelled", {"requestId": 3}),
        ),
        (
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            Notification("notifications/initialized", {}),
        ),
        ({"jsonrpc": "2.0", "id": 7, "result": {}}, ClientResponse(7, result={})),
        (
            {"jsonrpc": "2.0", "id": "r", "error": {"code": -1, "message": "no"}},
            ClientResponse("r", error={"code": -1, "message": "no"}),
        ),
        (
            {"jsonrpc": "2.0", "id": None, "error": {"code": -1, "message": "no"}},
            ClientResponse(None, error={"code": -1, "message": "no"}),
        ),
    ],
    ids=[
        "request",
        "request-string-id-no-params",
        "request-zero-id-null-params",
        "notification",
        "notification-no-params",
        "client-result",
        "client-error",
        "client-error-null-id",
    ],
)
def test_classify_valid_messages(data: dict[str, Any], expected: object) -> None:
    assert classify(data) == expected


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ([{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}], "batches"),
        ([], "batches"),
        ("just a string", "JSON-RPC 2.0"),
        (42, "JSON-RPC 2.0"),
        ({"id": 1, "method": "tools/list"}, "JSON-RPC 2.0"),
        ({"jsonrpc": "1.0", "id": 1, "method": "tools/list"}, "JSON-RPC 2.0"),
        ({"jsonrpc": "2.0", "id": 1}, "no method"),
        ({"jsonrpc": "2.0", "id": 1, "method": 5}, "method"),
        ({"jsonrpc": "2.0", "id": 1, "method": ""}, "method"),
        ({"jsonrpc": "2.0", "id": 1, "method": "m", "params": [1, 2]}, "params"),
        ({"jsonrpc": "2.0", "id": 1, "method": "m", "params": "x"}, "params"),
        ({"jsonrpc": "2.0", "id": None, "method": "m"}, "id"),
        ({"jsonrpc": "2.0", "id": True, "method": "m"}, "id"),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "m"}, "id"),
        ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "m"}, "id"),
        ({"jsonrpc": "2.0", "id": [1], "method": "m"}, "id"),
    ],
    ids=[
        "batch",
        "empty-batch",
        "string",
        "number",
        "no-jsonrpc",
        "wrong-jsonrpc",
        "no-method-no-result",
        "method-not-string",
        "method-empty",
        "params-array",
        "params-string",
        "id-null",
        "id-bool",
        "id-float",
        "id-object",
        "id-array",
    ],
)
def test_classify_rejects_invalid_requests(data: Any, reason: str) -> None:
    with pytest.raises(InvalidRequest) as caught:
        classify(data)
    assert caught.value.code == INVALID_REQUEST
    assert caught.value.http_status == 400
    assert reason in caught.value.message


@pytest.mark.parametrize(
    "body", [b"", b"{", b"not json", b'{"a": 1,}', b"\xff\xfe\x00garbage", b"{'single': 1}"]
)
def test_parse_json_raises_parse_error(body: bytes) -> None:
    with pytest.raises(ParseError) as caught:
        parse_json(body)
    assert caught.value.code == PARSE_ERROR
    assert caught.value.http_status == 400


@pytest.mark.parametrize(
    "number", [b"NaN", b"Infinity", b"-Infinity", b"1e309", b"-1e309", b"1" + b"0" * 400 + b".0"]
)
def test_parse_json_refuses_numbers_no_json_reader_shares(number: bytes) -> None:
    # NaN and Infinity are no JSON; 1e309 is, but no double holds it: Python would read it as
    # inf and pass it on to a target (a Lambda event, a body, an execution input) as
    # `Infinity`, which no JSON reader takes.
    with pytest.raises(ParseError) as caught:
        parse_json(b'{"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"n": ' + number + b"}}")
    assert caught.value.code == PARSE_ERROR


def test_parse_json_keeps_the_numbers_json_has() -> None:
    body = b'{"a": 1.7976931348623157e308, "b": -0.0, "c": -0, "d": 5e-324, "e": 1' + b"0" * 400
    parsed = parse_json(body + b"}")
    assert parsed == {"a": 1.7976931348623157e308, "b": -0.0, "c": 0, "d": 5e-324, "e": 10**400}


def test_parse_json_accepts_utf8_json() -> None:
    assert parse_json('{"name": "café"}'.encode()) == {"name": "café"}


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"id": 3}, 3),
        ({"id": "x"}, "x"),
        ({"id": True}, None),
        ({"id": None}, None),
        ({"id": 2.0}, None),
        ({}, None),
        ([{"id": 1}], None),
        ("id", None),
    ],
)
def test_request_id_of_only_returns_valid_ids(data: Any, expected: object) -> None:
    assert request_id_of(data) == expected


def test_error_message_omits_id_when_unknown_and_keeps_it_otherwise() -> None:
    error = {"code": -32700, "message": "Parse error"}
    assert error_message(None, error) == {"jsonrpc": "2.0", "error": error}
    assert error_message(0, error) == {"jsonrpc": "2.0", "id": 0, "error": error}
