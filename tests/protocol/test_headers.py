"""SEP-2243 custom headers: value encoding, `x-mcp-header` declarations, server validation."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Annotated, Any

import pytest

from mcp_tasks_aws import Header, ToolDefinitionError, ToolSet
from mcp_tasks_aws.protocol.errors import HeaderMismatch
from mcp_tasks_aws.protocol.headers import (
    SENTINEL_PREFIX,
    SENTINEL_SUFFIX,
    InvalidHeaderDeclaration,
    ParamHeader,
    check_param_headers,
    decode_header_value,
    param_headers_of,
)
from support.mcp import McpClient

# -- value encoding ------------------------------------------------------------------------------


def encode_header_value(value: str) -> str:
    """How a client sends `value`: as is when it is plain ASCII, else in the Base64 sentinel."""
    plain = (
        all(" " <= c <= "~" for c in value)
        and value == value.strip()
        and not (value.startswith(SENTINEL_PREFIX) and value.endswith(SENTINEL_SUFFIX))
    )
    if plain:
        return value
    return f"{SENTINEL_PREFIX}{base64.b64encode(value.encode()).decode()}{SENTINEL_SUFFIX}"


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("us-west1", "us-west1"),
        ("=?base64?SGVsbG8=?=", "Hello"),
        ("=?base64?SGVsbG8sIOS4lueVjA==?=", "Hello, 世界"),
        ("=?base64?IHBhZGRlZCA=?=", " padded "),
        ("=?base64?bGluZTEKbGluZTI=?=", "line1\nline2"),
        ("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=", "=?base64?literal?="),
        ("=?base64??=", ""),
        # Without both markers, a value is literal.
        ("SGVsbG8=", "SGVsbG8="),
        ("=?base64?SGVsbG8=", "=?base64?SGVsbG8="),
        ("SGVsbG8=?=", "SGVsbG8=?="),
        ("=?BASE64?SGVsbG8=?=", "=?BASE64?SGVsbG8=?="),
        ("a\tb c", "a\tb c"),
    ],
)
def test_header_values_decode_as_the_spec_encodes_them(raw: str, value: str) -> None:
    assert decode_header_value(raw, "Mcp-Param-X") == value


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ("=?base64?SGVsbG8?=", "Base64"),  # padding missing
        ("=?base64?SGVs!!!bG8=?=", "Base64"),  # outside the alphabet
        ("=?base64?SGVsbG8-?=", "Base64"),  # URL-safe alphabet is not the spec's
        ("=?base64?SGVsbG8=\n?=", "Base64"),
        ("=?base64?/w==?=", "Base64"),  # 0xFF is not UTF-8
        ("caf\u00e9", "invalid characters"),
        ("a\rb", "invalid characters"),
        ("a\x00b", "invalid characters"),
    ],
)
def test_malformed_header_values_are_header_mismatches(raw: str, why: str) -> None:
    with pytest.raises(HeaderMismatch, match=why) as caught:
        decode_header_value(raw, "Mcp-Param-X")
    assert caught.value.code == -32020
    assert caught.value.http_status == 400


@pytest.mark.parametrize(
    "value", ["us-west1", "Hello, 世界", " padded ", "line1\nline2", "=?base64?literal?=", ""]
)
def test_encoding_round_trips(value: str) -> None:
    encoded = encode_header_value(value)
    assert all(" " <= c <= "~" for c in encoded)
    assert decode_header_value(encoded, "Mcp-Param-X") == value


# -- declarations --------------------------------------------------------------------------------


def _schema(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


def test_declarations_are_found_through_nested_properties() -> None:
    schema = _schema(
        region={"type": "string", "x-mcp-header": "Region"},
        options={
            "type": "object",
            "properties": {"tenant": {"type": "integer", "x-mcp-header": "Tenant-Id"}},
        },
        query={"type": "string"},
    )
    assert param_headers_of(schema) == [
        ParamHeader("Region", ("region",), "string"),
        ParamHeader("Tenant-Id", ("options", "tenant"), "integer"),
    ]


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        (_schema(a={"type": "string", "x-mcp-header": ""}), "not an HTTP token"),
        (_schema(a={"type": "string", "x-mcp-header": "Two Words"}), "not an HTTP token"),
        (_schema(a={"type": "string", "x-mcp-header": "Bad\r\nX: y"}), "not an HTTP token"),
        (_schema(a={"type": "string", "x-mcp-header": 7}), "not an HTTP token"),
        (_schema(a={"type": "number", "x-mcp-header": "A"}), "type is 'number'"),
        (_schema(a={"type": "object", "x-mcp-header": "A"}), "type is 'object'"),
        (
            _schema(a={"anyOf": [{"type": "string"}, {"type": "null"}], "x-mcp-header": "A"}),
            "type is None",
        ),
        (
            _schema(
                a={"type": "string", "x-mcp-header": "Region"},
                b={"type": "string", "x-mcp-header": "region"},
            ),
            "repeats",
        ),
        (
            _schema(a={"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}),
            "not reachable",
        ),
        (
            {"type": "object", "anyOf": [_schema(a={"type": "string", "x-mcp-header": "A"})]},
            "not reachable",
        ),
        (
            {
                "type": "object",
                "$defs": {"d": {"type": "string", "x-mcp-header": "A"}},
                "properties": {"a": {"$ref": "#/$defs/d"}},
            },
            "not reachable",
        ),
        (
            {"type": "object", "if": _schema(a={"type": "string", "x-mcp-header": "A"})},
            "not reachable",
        ),
        ({"type": "string", "x-mcp-header": "Root"}, "not reachable"),
    ],
)
def test_declarations_that_break_the_spec_are_refused(schema: dict[str, Any], why: str) -> None:
    with pytest.raises(InvalidHeaderDeclaration, match=why):
        param_headers_of(schema)


# -- checking a request --------------------------------------------------------------------------

REGION = ParamHeader("Region", ("region",), "string")
COUNT = ParamHeader("Count", ("count",), "integer")
DRY = ParamHeader("Dry-Run", ("options", "dry"), "boolean")


@pytest.mark.parametrize(
    ("headers", "arguments"),
    [
        ({"mcp-param-region": "us-west1"}, {"region": "us-west1"}),
        ({"mcp-param-region": "=?base64?SGVsbG8=?="}, {"region": "Hello"}),
        ({"mcp-param-region": "  us-west1 "}, {"region": "us-west1"}),  # optional whitespace
        ({}, {}),  # not in the arguments: no header expected
        ({}, {"region": None}),  # null: no header expected
        ({"mcp-param-count": "42"}, {"count": 42}),
        ({"mcp-param-count": "42.0"}, {"count": 42}),  # compared as numbers
        ({"mcp-param-count": "-7"}, {"count": -7}),
        ({"mcp-param-dry-run": "true"}, {"options": {"dry": True}}),
        ({"mcp-param-dry-run": "false"}, {"options": {"dry": False}}),
        ({"mcp-param-other": "ignored"}, {}),  # not declared: forwarded and ignored
    ],
)
def test_headers_matching_the_body_pass(headers: dict[str, str], arguments: Any) -> None:
    check_param_headers(headers, arguments, [REGION, COUNT, DRY])


@pytest.mark.parametrize(
    ("headers", "arguments", "why"),
    [
        ({}, {"region": "us-west1"}, "Mcp-Param-Region is required when arguments.region"),
        ({"mcp-param-region": "eu-west1"}, {"region": "us-west1"}, "does not match"),
        ({"mcp-param-region": "US-WEST1"}, {"region": "us-west1"}, "does not match"),
        ({"mcp-param-region": "us-west1"}, {}, "is sent but arguments.region is not set"),
        ({"mcp-param-region": "=?base64?SGVsbG8?="}, {"region": "Hello"}, "Base64"),
        ({"mcp-param-count": "43"}, {"count": 42}, "does not match"),
        ({"mcp-param-count": "forty-two"}, {"count": 42}, "does not match"),
        ({"mcp-param-dry-run": "True"}, {"options": {"dry": True}}, "does not match"),
        ({"mcp-param-region": "x"}, {"region": {"nested": "x"}}, "does not match"),
    ],
)
def test_headers_that_disagree_with_the_body_are_refused(
    headers: dict[str, str], arguments: Any, why: str
) -> None:
    with pytest.raises(HeaderMismatch, match=why):
        check_param_headers(headers, arguments, [REGION, COUNT, DRY])


def test_messages_never_carry_the_values() -> None:
    with pytest.raises(HeaderMismatch) as caught:
        check_param_headers({"mcp-param-region": "secret-a"}, {"region": "secret-b"}, [REGION])
    assert "secret" not in caught.value.message


# -- through the server --------------------------------------------------------------------------

routed = ToolSet(name="routed", version="1")


@routed.tool
def run_query(
    region: Annotated[str, Header("Region")],
    query: str,
    priority: Annotated[int, Header("Priority")] = 1,
) -> str:
    """Runs a query in a region.

    Args:
        region: Where to run it.
        query: What to run.
        priority: How urgent.
    """
    return f"{query} in {region} at {priority}"


@pytest.fixture
def routed_client(make_client: Callable[..., McpClient]) -> McpClient:
    return make_client(routed)


def test_listed_schema_declares_the_headers(routed_client: McpClient) -> None:
    tool = routed_client.result("tools/list")["tools"][0]
    properties = tool["inputSchema"]["properties"]
    assert properties["region"]["x-mcp-header"] == "Region"
    assert properties["priority"]["x-mcp-header"] == "Priority"
    assert "x-mcp-header" not in properties["query"]


def test_a_call_with_matching_headers_runs(routed_client: McpClient) -> None:
    result = routed_client.tool_result(
        "run_query",
        {"region": "Zürich", "query": "q", "priority": 3},
        headers={"mcp-param-region": "=?base64?WsO8cmljaA==?=", "mcp-param-priority": "3"},
    )
    assert result["content"][0]["text"] == "q in Zürich at 3"


@pytest.mark.parametrize(
    "headers",
    [
        {},  # region in the body, no header
        {"mcp-param-region": "eu"},
        {"mcp-param-region": "us", "mcp-param-priority": "2"},
        {"mcp-param-region": "=?base64?dXM?="},
    ],
)
def test_a_call_whose_headers_disagree_is_400_header_mismatch(
    routed_client: McpClient, headers: dict[str, str]
) -> None:
    response = routed_client.call_tool(
        "run_query", {"region": "us", "query": "q", "priority": 3}, headers=headers
    )
    assert response.status == 400
    assert routed_client.error(response)["code"] == -32020


def test_mcp_name_may_be_base64_encoded(make_client: Callable[..., McpClient]) -> None:
    client = make_client(routed)
    ok = client.call_tool(
        "run_query",
        {"region": "us", "query": "q"},
        headers={"mcp-name": "=?base64?cnVuX3F1ZXJ5?=", "mcp-param-region": "us"},
    )
    assert ok.status == 200, ok.body
    bad = client.call_tool(
        "run_query",
        {"region": "us", "query": "q"},
        headers={"mcp-name": "=?base64?cnVuX3F1ZXJ?=", "mcp-param-region": "us"},
    )
    assert bad.status == 400
    assert client.error(bad)["code"] == -32020


# -- declaring headers in Python -----------------------------------------------------------------


def test_header_on_a_float_parameter_fails_the_check_naming_tool_and_parameter() -> None:
    tools = ToolSet()

    @tools.tool
    def scale(factor: Annotated[float, Header("Factor")]) -> str:
        """Scales."""
        return ""

    with pytest.raises(ToolDefinitionError, match=r"tool 'scale'.*'Factor'.*factor.*number"):
        tools.check()


def test_a_handwritten_schema_with_a_bad_declaration_fails_the_check() -> None:
    tools = ToolSet()
    schema = _schema(a={"type": "string", "x-mcp-header": "A B"})

    @tools.tool(input_schema=schema)
    def bad(a: str = "") -> str:
        """Bad."""
        return a

    with pytest.raises(ToolDefinitionError, match="tool 'bad': x-mcp-header 'A B'"):
        tools.check()
