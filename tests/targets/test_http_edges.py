"""Declared HTTP targets against a real upstream on 127.0.0.1 (`support.targets.Upstream`, which
records the raw paths and headers it read off the socket): path parameters stay one segment of
the declared route, header arguments are ones HTTP can carry, both refused (-32602 naming the
argument) before a credential is read or anything is sent."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from support.mcp import McpClient
from support.targets import (
    SECRET_ARN,
    FakeCalls,
    Upstream,
    bound,
    sending_for_real,
    tool,
    write,
)

ID_SCHEMA = {
    "type": "object",
    "properties": {"id": {"type": ["string", "integer"]}, "trace": {"type": "string"}},
    "required": ["id"],
}


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    server = Upstream()
    yield server
    server.close()


@pytest.fixture
def calls() -> FakeCalls:
    return sending_for_real(FakeCalls(secrets={SECRET_ARN: "s3cret"}))


@pytest.fixture
def client(
    tmp_path: Path, upstream: Upstream, calls: FakeCalls, make_client: Callable[..., McpClient]
) -> McpClient:
    target = {
        "kind": "http",
        "method": "GET",
        "url": f"{upstream.url}/v1/items/{{id}}/notes",
        "headerArguments": {"X-Trace": "trace"},
        "auth": {"type": "bearer", "secretArn": SECRET_ARN},
    }
    return make_client(bound(write(tmp_path, tool("item", target, inputSchema=ID_SCHEMA)), calls))


def test_a_plain_segment_reaches_the_declared_route_with_the_credential(
    client: McpClient, upstream: Upstream
) -> None:
    for value in ("item-7", "a.b", "...", "100%", "x y", 42):
        assert client.tool_result("item", {"id": value}).get("isError") is not True
    assert upstream.paths == [
        "/v1/items/item-7/notes",
        "/v1/items/a.b/notes",
        "/v1/items/.../notes",
        "/v1/items/100%25/notes",
        "/v1/items/x%20y/notes",
        "/v1/items/42/notes",
    ]
    assert {r.headers["authorization"] for r in upstream.received} == {"Bearer s3cret"}


LEAVING_THE_ROUTE = [
    ".",
    "..",
    "%2e",
    "%2E%2e",
    ".%2e",
    "%252e%252e",  # decoded twice by a lenient upstream
    "../admin",
    "..%2Fadmin",
    "a/../b",
    "a/b",
    "%2F",
    "a%2fb",
    "%252F",
    "a\\b",
    "..%5cadmin",
    "",
]


@pytest.mark.parametrize("value", LEAVING_THE_ROUTE)
def test_a_path_parameter_that_could_leave_the_route_is_refused_before_the_credential(
    client: McpClient, upstream: Upstream, calls: FakeCalls, value: str
) -> None:
    response = client.call_tool("item", {"id": value})
    assert response.status == 200
    error = client.error(response)
    assert error["code"] == -32602
    assert error["message"].startswith("Invalid arguments for tool item: id: ")
    assert "path segment" in error["message"]
    assert upstream.received == []  # nothing left for the upstream to normalise
    assert [name for name, _ in calls.calls] == []  # not even the secret was read


@pytest.mark.parametrize(
    "value",
    ["a\r\nX-Injected: 1", "a\nb", "a\rb", "a\x00b", "a\x7fb", "snow \u2603", "\u00e9\u20ac"],
)
def test_a_header_argument_http_cannot_carry_is_refused_naming_it(
    client: McpClient,
    upstream: Upstream,
    calls: FakeCalls,
    caplog: pytest.LogCaptureFixture,
    value: str,
) -> None:
    caplog.set_level(logging.DEBUG)
    response = client.call_tool("item", {"id": "7", "trace": value})
    assert response.status == 200
    error = client.error(response)
    assert error["code"] == -32602
    assert error["message"].startswith("Invalid arguments for tool item: trace: ")
    assert upstream.received == []
    assert calls.calls == []
    assert [r for r in caplog.records if r.exc_info] == []  # no traceback anywhere


def test_a_latin_1_header_argument_is_sent_as_it_is(client: McpClient, upstream: Upstream) -> None:
    client.tool_result("item", {"id": "7", "trace": "caf\u00e9\tau lait"})
    (received,) = upstream.received
    assert received.headers["x-trace"] == "caf\u00e9\tau lait"
