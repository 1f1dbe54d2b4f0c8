"""The Streamable HTTP transport: HTTP status mapping, header checks, JSON vs SSE answers."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_tasks_aws.app import build_transport
from mcp_tasks_aws.protocol.errors import InvalidParams
from mcp_tasks_aws.protocol.jsonrpc import Request
from mcp_tasks_aws.protocol.transport import HttpRequest, HttpResponse, HttpTransport, Served
from support.mcp import (
    ALLOWED_ORIGIN,
    CAPABILITIES_KEY,
    LOG_LEVEL_KEY,
    PROTOCOL_VERSION,
    TASKS_EXTENSION,
    VERSION_KEY,
    McpClient,
    conformance_settings,
    envelope,
)

DISCOVER = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "server/discover",
    "params": {"_meta": envelope()},
}
DISCOVER_HEADERS: dict[str, str | None] = {
    "mcp-method": "server/discover",
    "mcp-protocol-version": PROTOCOL_VERSION,
}


def sse_messages(response: HttpResponse) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an SSE body; each event must carry exactly one `data:` line."""
    assert response.headers["content-type"] == "text/event-stream"
    messages = []
    for event in response.body.decode().split("\n\n"):
        if not event.strip():
            continue
        data = [line for line in event.split("\n") if line.startswith("data:")]
        assert len(data) == 1, event
        messages.append(json.loads(data[0][len("data:") :]))
    return messages


def assert_error(response: HttpResponse, status: int, code: int, rid: object = 1) -> dict[str, Any]:
    assert response.status == status, response.body
    assert response.headers.get("content-type") == "application/json"
    message = response.json
    assert message["jsonrpc"] == "2.0"
    assert "result" not in message
    assert message.get("id") == rid
    assert message["error"]["code"] == code
    assert isinstance(message["error"]["message"], str)
    assert message["error"]["message"]
    error: dict[str, Any] = message["error"]
    return error


# -- HTTP-level refusals (before JSON-RPC) ------------------------------------------------------


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT", "get"])
def test_anything_but_post_is_405_with_allow_post(client: McpClient, method: str) -> None:
    response = client.send(DISCOVER, http_method=method, headers=DISCOVER_HEADERS)
    assert_error(response, 405, -32600, rid=None)
    assert {k.lower(): v for k, v in response.headers.items()}["allow"] == "POST"


@pytest.mark.parametrize(
    ("origin", "status"),
    [
        ("http://evil.example", 403),
        ("http://localhost:8000.evil.example", 403),
        ("https://localhost:8000", 403),
        ("null", 403),
        (ALLOWED_ORIGIN, 200),
        (None, 200),
    ],
)
def test_origin_must_be_allowed_when_present(
    client: McpClient, origin: str | None, status: int
) -> None:
    response = client.send(DISCOVER, headers={**DISCOVER_HEADERS, "origin": origin})
    assert response.status == status
    if status == 403:
        assert_error(response, 403, -32600, rid=None)


def test_body_over_the_limit_is_413() -> None:
    # Given a transport that accepts at most 300 bytes
    small = McpClient(build_transport(conformance_settings(max_body_bytes=300)))
    fits = json.dumps(DISCOVER).encode()
    assert len(fits) <= 300
    padded = {**DISCOVER, "params": {**DISCOVER["params"], "pad": "x" * 300}}
    # When a body under and a body over the limit are posted
    ok = small.send(fits, headers=DISCOVER_HEADERS)
    refused = small.send(padded, headers=DISCOVER_HEADERS)
    # Then only the second is refused, before it is parsed
    assert ok.status == 200
    assert_error(refused, 413, -32600, rid=None)


@pytest.mark.parametrize(
    ("content_type", "status"),
    [
        ("text/plain", 415),
        ("application/x-www-form-urlencoded", 415),
        ("application/jsonp", 415),
        (None, 415),
        ("application/json", 200),
        ("Application/JSON; charset=utf-8", 200),
    ],
)
def test_content_type_must_be_json(
    client: McpClient, content_type: str | None, status: int
) -> None:
    response = client.send(DISCOVER, headers={**DISCOVER_HEADERS, "content-type": content_type})
    assert response.status == status
    if status == 415:
        assert_error(response, 415, -32600, rid=None)


@pytest.mark.parametrize(
    ("accept", "status", "content_type"),
    [
        ("text/html", 406, "application/json"),
        ("image/png, text/plain;q=0.5", 406, "application/json"),
        ("application/json", 200, "application/json"),
        ("text/event-stream", 200, "text/event-stream"),
        ("application/json, text/event-stream", 200, "application/json"),
        ("*/*", 200, "application/json"),
        (None, 200, "application/json"),
    ],
)
def test_accept_must_allow_json_or_sse(
    client: McpClient, accept: str | None, status: int, content_type: str
) -> None:
    response = client.send(DISCOVER, headers={**DISCOVER_HEADERS, "accept": accept})
    assert response.status == status
    assert response.headers["content-type"] == content_type
    if status == 406:
        assert_error(response, 406, -32600, rid=None)


def test_sse_only_client_gets_the_response_as_one_event(client: McpClient) -> None:
    response = client.send(DISCOVER, headers={**DISCOVER_HEADERS, "accept": "text/event-stream"})
    messages = sse_messages(response)
    assert len(messages) == 1
    assert messages[0]["id"] == 1
    assert messages[0]["result"]["resultType"] == "complete"


# -- JSON-RPC framing ---------------------------------------------------------------------------


@pytest.mark.parametrize("body", [b"{", b"not json", b"", b'{"jsonrpc": "2.0", "id": 1,'])
def test_unparseable_body_is_400_parse_error_without_id(client: McpClient, body: bytes) -> None:
    assert_error(client.send(body, headers=DISCOVER_HEADERS), 400, -32700, rid=None)


@pytest.mark.parametrize(
    ("body", "rid"),
    [
        ({"jsonrpc": "2.0", "id": 5}, 5),
        ({"jsonrpc": "1.0", "id": "a", "method": "server/discover"}, "a"),
        ({"jsonrpc": "2.0", "id": 6, "method": "server/discover", "params": [1]}, 6),
        ({"jsonrpc": "2.0", "id": True, "method": "server/discover"}, None),
        ([DISCOVER], None),
        ("hello", None),
    ],
    ids=["no-method", "wrong-version", "params-array", "bool-id", "batch", "string"],
)
def test_invalid_request_is_400_and_echoes_a_valid_id(
    client: McpClient, body: Any, rid: object
) -> None:
    assert_error(client.send(body, headers=DISCOVER_HEADERS), 400, -32600, rid=rid)


@pytest.mark.parametrize(
    "body",
    [
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
        {"jsonrpc": "2.0", "method": "no/such/notification"},
        {"jsonrpc": "2.0", "id": 3, "result": {"action": "accept"}},
        {"jsonrpc": "2.0", "id": 3, "error": {"code": -1, "message": "declined"}},
    ],
    ids=["initialized", "cancelled", "unknown-notification", "client-result", "client-error"],
)
def test_notifications_and_client_responses_are_202_without_body(
    client: McpClient, body: dict[str, Any]
) -> None:
    response = client.send(body)
    assert response.status == 202
    assert response.body == b""


@pytest.mark.parametrize(
    ("method", "meta", "headers"),
    [
        ("no/such/method", envelope(), None),
        ("tasks/list", envelope(), None),
        ("initialize", envelope(), None),
        # -32601 wins over everything else that is wrong with the request.
        ("no/such/method", None, {"mcp-method": None, "mcp-protocol-version": "1999-01-01"}),
    ],
    ids=["unknown", "tasks-list", "initialize", "unknown-and-malformed"],
)
def test_unknown_method_is_404_method_not_found(
    client: McpClient, method: str, meta: Any, headers: Any
) -> None:
    response = client.request(method, {}, meta=meta, headers=headers)
    error = assert_error(response, 404, -32601)
    assert method in error["message"]


# -- the 2026-07-28 envelope --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("meta", "mentions"),
    [
        (None, "_meta"),
        ("not an object", "_meta"),
        ({CAPABILITIES_KEY: {}}, VERSION_KEY),
        ({VERSION_KEY: "", CAPABILITIES_KEY: {}}, VERSION_KEY),
        ({VERSION_KEY: PROTOCOL_VERSION}, CAPABILITIES_KEY),
        ({VERSION_KEY: PROTOCOL_VERSION, CAPABILITIES_KEY: "all"}, CAPABILITIES_KEY),
        ({}, VERSION_KEY),
    ],
    ids=[
        "missing-meta",
        "meta-not-object",
        "missing-version",
        "empty-version",
        "missing-capabilities",
        "capabilities-not-object",
        "empty-meta",
    ],
)
def test_malformed_meta_is_400_invalid_params(client: McpClient, meta: Any, mentions: str) -> None:
    response = client.request("server/discover", meta=meta)
    error = assert_error(response, 400, -32602)
    assert mentions in error["message"]


def test_malformed_meta_is_reported_before_header_checks(client: McpClient) -> None:
    response = client.request("server/discover", meta=None, headers={"mcp-method": "tools/list"})
    assert_error(response, 400, -32602)


@pytest.mark.parametrize(
    ("method", "params", "headers"),
    [
        ("server/discover", {}, {"mcp-protocol-version": "2025-11-25"}),
        ("server/discover", {}, {"mcp-method": None}),
        ("server/discover", {}, {"mcp-method": "tools/list"}),
        ("server/discover", {}, {"mcp-method": ""}),
        ("tools/list", {}, {"mcp-method": "tools/LIST"}),
        ("tools/call", {"name": "greet"}, {"mcp-name": None}),
        ("tools/call", {"name": "greet"}, {"mcp-name": "test_simple_text"}),
        ("tools/call", {"name": "greet"}, {"mcp-name": "Greet"}),
        ("prompts/get", {"name": "test_input_required_result_prompt"}, {"mcp-name": None}),
        ("prompts/get", {"name": "test_input_required_result_prompt"}, {"mcp-name": "other"}),
        ("resources/read", {"uri": "conformance://readme"}, {"mcp-name": None}),
    ],
    ids=[
        "version-header-mismatch",
        "method-header-missing",
        "method-header-mismatch",
        "method-header-empty",
        "method-header-case",
        "tools-call-name-missing",
        "tools-call-name-mismatch",
        "tools-call-name-case",
        "prompts-get-name-missing",
        "prompts-get-name-mismatch",
        "resources-read-name-missing",
    ],
)
def test_header_that_disagrees_with_the_body_is_400_header_mismatch(
    client: McpClient, method: str, params: dict[str, Any], headers: dict[str, str | None]
) -> None:
    response = client.request(method, params, headers=headers)
    error = assert_error(response, 400, -32020)
    assert "mismatch" in error["message"].lower()


@pytest.mark.parametrize(
    ("method", "params", "name_header"),
    [
        ("tools/call", {"name": "greet", "arguments": {}}, "  greet "),
        ("tools/call", {"name": "greet", "arguments": {}}, "\tgreet"),
        ("resources/read", {"uri": "conformance://readme"}, " conformance://readme"),
    ],
)
def test_whitespace_around_header_values_is_tolerated(
    client: McpClient, method: str, params: dict[str, Any], name_header: str
) -> None:
    response = client.request(
        method,
        params,
        headers={
            "mcp-name": name_header,
            "mcp-method": f" {method} ",
            "mcp-protocol-version": f"{PROTOCOL_VERSION} ",
        },
    )
    assert response.status == 200, response.body
    assert response.json["result"]["resultType"] == "complete"


@pytest.mark.parametrize("requested", ["2099-01-01", "2025-11-25", "draft"])
def test_unsupported_version_is_400_with_requested_and_supported(
    client: McpClient, requested: str
) -> None:
    response = client.request("server/discover", version=requested)
    error = assert_error(response, 400, -32022)
    assert error["data"]["requested"] == requested
    assert error["data"]["supported"] == [PROTOCOL_VERSION]


def test_header_mismatch_wins_over_an_unsupported_version(client: McpClient) -> None:
    response = client.request(
        "server/discover",
        version="2099-01-01",
        headers={"mcp-protocol-version": PROTOCOL_VERSION},
    )
    assert_error(response, 400, -32020)


def test_task_required_tool_without_tasks_extension_is_400_missing_capability(
    client: McpClient,
) -> None:
    response = client.call_tool("failing_job", {})
    error = assert_error(response, 400, -32021)
    assert error["data"] == {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}


def test_errors_about_a_valid_request_carry_its_id(client: McpClient) -> None:
    response = client.call_tool("no_such_tool", {}, rid="req-42")
    assert response.status == 200
    assert response.json["id"] == "req-42"
    assert response.json["error"]["code"] == -32602


# -- logging over SSE ---------------------------------------------------------------------------


@pytest.mark.parametrize("level", ["debug", "info"])
def test_logs_stream_as_sse_before_the_response(client: McpClient, level: str) -> None:
    # Given a request that asks for logs at or below the tool's level
    response = client.call_tool("test_logging_tool", {}, log_level=level, rid=9)
    # Then the answer is an SSE stream: three log notifications, then the response
    assert response.status == 200
    messages = sse_messages(response)
    assert len(messages) == 4
    *logs, last = messages
    assert [m["method"] for m in logs] == ["notifications/message"] * 3
    assert all("id" not in m for m in logs)
    assert all(m["params"]["level"] == "info" for m in logs)
    assert [m["params"]["data"] for m in logs] == [
        "logging tool starting",
        "logging tool working",
        "logging tool done",
    ]
    assert last["id"] == 9
    assert last["result"]["content"][0]["text"] == "Logged three messages."


@pytest.mark.parametrize("level", [None, "warning", "error", "emergency"])
def test_no_log_notifications_without_a_low_enough_log_level(
    client: McpClient, level: str | None
) -> None:
    response = client.call_tool("test_logging_tool", {}, log_level=level)
    assert response.status == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json["result"]["content"][0]["text"] == "Logged three messages."


@pytest.mark.parametrize("level", ["verbose", "INFO", "trace"])
def test_an_unknown_log_level_is_invalid_params(client: McpClient, level: str) -> None:
    # logLevel is a LoggingLevel (an enum of eight syslog names); InvalidParamsError covers
    # "Logging: Invalid log level".
    response = client.call_tool("test_logging_tool", {}, log_level=level)
    error = assert_error(response, 400, -32602)
    assert LOG_LEVEL_KEY in error["message"]


def test_json_only_client_gets_the_response_without_notifications(client: McpClient) -> None:
    response = client.call_tool(
        "test_logging_tool", {}, log_level="debug", headers={"accept": "application/json"}
    )
    assert response.status == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json["result"]["resultType"] == "complete"


# -- the transport with a stub server -----------------------------------------------------------


class _ExplodingServer:
    def has_method(self, method: str) -> bool:
        return True

    def parse_meta(self, request: Request) -> Any:
        class Meta:
            protocol_version = PROTOCOL_VERSION

        return Meta()

    def serve(
        self,
        request: Request,
        meta: Any,
        principal: str,
        *,
        deadline: float | None = None,
        streaming: bool = False,
        granted_scopes: frozenset[str] | None = None,
    ) -> Any:
        if request.method == "boom":
            raise RuntimeError("secret database password is hunter2")
        raise InvalidParams("bad params")


def test_unhandled_server_error_is_500_internal_error_without_its_text() -> None:
    transport = HttpTransport(_ExplodingServer(), supported_versions=[PROTOCOL_VERSION])
    response = McpClient(transport).request("boom", {}, rid=4)
    error = assert_error(response, 500, -32603, rid=4)
    assert error == {"code": -32603, "message": "Internal error"}
    assert b"hunter2" not in response.body


def test_on_request_sees_method_and_id_of_requests_only() -> None:
    seen: list[tuple[str, Any]] = []
    transport = HttpTransport(
        _ExplodingServer(),
        supported_versions=[PROTOCOL_VERSION],
        on_request=lambda method, rid: seen.append((method, rid)),
    )
    client = McpClient(transport)
    client.request("anything", {}, rid="r1")
    client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert seen == [("anything", "r1")]


def test_principal_and_granted_scopes_reach_the_server() -> None:
    principals: list[str] = []
    scopes: list[frozenset[str] | None] = []

    class Recorder(_ExplodingServer):
        def serve(
            self,
            request: Request,
            meta: Any,
            principal: str,
            *,
            deadline: float | None = None,
            streaming: bool = False,
            granted_scopes: frozenset[str] | None = None,
        ) -> Any:
            principals.append(principal)
            scopes.append(granted_scopes)
            message = {"jsonrpc": "2.0", "id": request.id, "result": {"resultType": "complete"}}
            return Served(message, [], {})

    transport = HttpTransport(Recorder(), supported_versions=[PROTOCOL_VERSION])
    response = transport.handle(
        HttpRequest(
            "POST",
            {
                "content-type": "application/json",
                "mcp-method": "x",
                "mcp-protocol-version": PROTOCOL_VERSION,
            },
            json.dumps({"jsonrpc": "2.0", "id": 1, "method": "x", "params": {}}).encode(),
            principal="jwt:iss|alice|app",
            granted_scopes=frozenset({"mcp"}),
        )
    )
    assert response.status == 200
    assert principals == ["jwt:iss|alice|app"]
    assert scopes == [{"mcp"}]


class _KnownMethods(_ExplodingServer):
    def has_method(self, method: str) -> bool:
        return method == "tools/list"


def test_unknown_methods_are_logged_as_unknown_and_long_ids_truncated() -> None:
    # Given a request with a 500 KB method and a 400 KB id
    seen: list[tuple[str, Any]] = []
    transport = HttpTransport(
        _KnownMethods(),
        supported_versions=[PROTOCOL_VERSION],
        on_request=lambda method, rid: seen.append((method, rid)),
    )
    huge_method, huge_id = "m" * 500_000, "i" * 400_000
    body = {"jsonrpc": "2.0", "id": huge_id, "method": huge_method, "params": {}}
    response = McpClient(transport).send(body, headers={"mcp-method": huge_method})
    # Then it answers -32601, and what reaches the log context is small
    assert response.status == 404
    assert len(response.json["error"]["message"]) < 100
    [(method, rid)] = seen
    assert method == "unknown"
    assert len(str(rid)) <= 70
    assert str(rid).startswith("iii")


class _InitializeOnlyGate:
    """A legacy side that serves `initialize` only."""

    def knows(self, method: str) -> bool:
        return method == "initialize"

    def post(self, http: HttpRequest, message: Any) -> Any:
        return Served({"jsonrpc": "2.0", "id": message.id, "result": {}}, [], {})

    def resume(self, http: HttpRequest, last_event_id: str) -> Any:
        raise AssertionError("not used")

    def end(self, http: HttpRequest) -> None:
        raise AssertionError("not used")


def test_legacy_requests_are_logged_as_small_as_modern_ones() -> None:
    # Given a 2025-11-25 request (no _meta) with a 500 KB method and a 400 KB id
    seen: list[tuple[str, Any]] = []
    transport = HttpTransport(
        _KnownMethods(),
        supported_versions=[PROTOCOL_VERSION],
        on_request=lambda method, rid: seen.append((method, rid)),
        legacy=_InitializeOnlyGate(),
    )
    huge_method, huge_id = "m" * 500_000, "i" * 400_000
    client = McpClient(transport)
    response = client.send({"jsonrpc": "2.0", "id": huge_id, "method": huge_method})
    client.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
    # Then it answers -32601, and what reaches the log context is small
    assert response.status == 404
    [(method, rid), known] = seen
    assert method == "unknown"
    assert len(str(rid)) <= 70
    assert known == ("initialize", 0)


def test_known_methods_and_short_ids_are_logged_as_they_are() -> None:
    seen: list[tuple[str, Any]] = []
    transport = HttpTransport(
        _KnownMethods(),
        supported_versions=[PROTOCOL_VERSION],
        on_request=lambda method, rid: seen.append((method, rid)),
    )
    McpClient(transport).request("tools/list", {}, rid=7)
    McpClient(transport).request("tools/list", {}, rid="a" * 64)
    assert seen == [("tools/list", 7), ("tools/list", "a" * 64)]


def strict_json(body: bytes) -> Any:
    """`body` read as a strict JSON reader (JavaScript's JSON.parse) reads it."""

    def refuse(constant: str) -> Any:
        raise AssertionError(f"{constant} is no JSON: {body[:200]!r}")

    return json.loads(body, parse_constant=refuse)


def test_a_result_holding_a_non_finite_float_is_sent_as_json(make_client: Any) -> None:
    # A tool computing NaN (an empty mean), a Python Lambda's payload or an upstream's body
    # holding one: the answer stays JSON any client can read (null, as pydantic writes a
    # nested NaN), never a bare NaN or Infinity.
    from mcp_tasks_aws.tools.registry import ToolSet

    tools = ToolSet()

    @tools.tool
    def mean(values: list[float]) -> float:
        """The mean."""
        return sum(values) / len(values) if values else float("nan")

    @tools.tool
    def spread(values: list[float]) -> dict[str, float]:
        """The spread."""
        return {"max": float("inf"), "min": float("-inf")}

    client = make_client(tools)
    for name in ("mean", "spread"):
        response = client.call_tool(name, {"values": []})
        assert response.status == 200
        result = strict_json(response.body)["result"]
        assert result.get("isError") is not True, result
        structured = result["structuredContent"]
        assert structured in ({"result": None}, {"max": None, "min": None})
    sse = client.call_tool("mean", {"values": []}, headers={"accept": "text/event-stream"})
    for line in sse.body.decode().splitlines():
        if line.startswith("data: "):
            strict_json(line[6:].encode())
