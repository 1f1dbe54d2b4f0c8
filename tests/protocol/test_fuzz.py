"""Property-based fuzzing (Hypothesis) of the HTTP edge, the JSON-RPC envelope and
`requestState`: whatever arrives, no exception escapes and nothing is answered 5xx.

Bounded: a fixed number of examples per property, derandomized (the same examples on every
run, so a failure reproduces and CI never flakes), no example database on disk, and every
request carries a short deadline so a tool cannot hold an example.
"""

from __future__ import annotations

import base64
import contextlib
import json
import time
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_tasks_aws.app import build_transport
from mcp_tasks_aws.edge.apigw import request_from_event
from mcp_tasks_aws.protocol.errors import InvalidParams, McpError
from mcp_tasks_aws.protocol.request_state import RequestStateCodec, SealedRound, digest
from mcp_tasks_aws.protocol.transport import HttpRequest, HttpResponse
from support.mcp import SECRET, conformance_settings

BOUNDED = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
TRANSPORT = build_transport(conformance_settings())
VERSION = "2026-07-28"
METHODS = [
    "server/discover",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "subscriptions/listen",
    "initialize",
    "",
]
# Every conformance tool but the one that sleeps for as long as it is told.
TOOLS = [name for name in TRANSPORT.server.toolset.tools if name != "slow_compute"]  # type: ignore[attr-defined]

# Integers past a float's range too: JSON numbers have no bound, and a float() of one raises.
huge_integers = st.integers(min_value=2**1024, max_value=10**400) | st.integers(
    max_value=-(2**1024)
)
json_leaf = (
    st.none() | st.booleans() | st.integers() | huge_integers | st.floats() | st.text(max_size=20)
)
json_value = st.recursive(
    json_leaf,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)
header_text = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40)


# Bodies JSON's grammar allows that have broken servers: deep nesting, lone surrogates, huge
# numbers, non-standard literals.
depths = st.sampled_from([63, 64, 65, 999, 1000, 1001, 50_000]) | st.integers(1, 5000)
hostile_bodies = st.one_of(
    depths.map(lambda d: b"[" * d + b"]" * d),
    depths.map(
        lambda d: (
            b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":'
            + b'{"a":' * d
            + b"1"
            + b"}" * d
            + b"}"
        )
    ),
    st.sampled_from(["\\ud800", "\\udfff", "\\ud83d\\ude00", "\\u0000"]).map(
        lambda e: ('{"jsonrpc":"2.0","id":"' + e + '","method":"tools/list","params":{}}').encode()
    ),
    st.integers(min_value=1, max_value=6000).map(
        lambda n: b'{"jsonrpc":"2.0","id":' + b"9" * n + b',"method":"tools/list"}'
    ),
    st.sampled_from([b"NaN", b"[Infinity]", b'{"id":-Infinity}', b"\xef\xbb\xbf{}"]),
)


def handle(request: HttpRequest) -> HttpResponse:
    response = TRANSPORT.handle(request)
    response.read_all()  # a streamed answer is consumed, as a server would send it
    return response


def assert_well_answered(response: HttpResponse) -> None:
    assert 200 <= response.status < 500, (response.status, response.body[:300])
    if response.body and response.headers.get("content-type") == "application/json":
        message = json.loads(response.body)
        assert message["jsonrpc"] == "2.0"
        assert ("result" in message) != ("error" in message)


# -- the HTTP edge ----------------------------------------------------------------------------


@BOUNDED
@given(
    method=st.sampled_from(["POST", "GET", "DELETE", "PUT", "HEAD", "OPTIONS", "post", "PATCH"]),
    headers=st.dictionaries(
        st.sampled_from(
            [
                "content-type",
                "accept",
                "origin",
                "mcp-protocol-version",
                "mcp-method",
                "mcp-name",
                "content-length",
                "authorization",
            ]
        ),
        header_text | st.sampled_from(["application/json", "text/event-stream", "*/*", VERSION]),
    ),
    body=st.binary(max_size=300)
    | json_value.map(lambda v: json.dumps(v).encode())
    | hostile_bodies,
)
def test_any_http_request_is_answered_below_500(
    method: str, headers: dict[str, str], body: bytes
) -> None:
    assert_well_answered(handle(HttpRequest(method, headers, body, deadline=_soon())))


# Events of API Gateway's payload format 2.0: its types are fixed, their contents are not.
claims = st.dictionaries(
    st.sampled_from(["sub", "iss", "client_id", "azp", "aud"]), st.text(max_size=20)
)
authorizers = st.fixed_dictionaries(
    {},
    optional={
        "jwt": st.fixed_dictionaries({"claims": claims}),
        "iam": st.dictionaries(
            st.sampled_from(["userArn", "callerId", "accountId"]), st.text(max_size=20)
        ),
        "lambda": st.dictionaries(st.sampled_from(["principalId", "sub"]), st.text(max_size=20)),
    },
)


@BOUNDED
@given(
    body=hostile_bodies | st.binary(max_size=300) | json_value.map(lambda v: json.dumps(v).encode())
)
def test_any_body_behind_valid_framing_is_answered_below_500(body: bytes) -> None:
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": VERSION,
        "mcp-method": "tools/list",
    }
    assert_well_answered(handle(HttpRequest("POST", headers, body, deadline=_soon())))


@BOUNDED
@given(
    event=st.fixed_dictionaries(
        {},
        optional={
            "body": st.text(max_size=200) | st.none(),
            "isBase64Encoded": st.booleans(),
            "headers": st.dictionaries(st.text(max_size=10), st.text(max_size=20), max_size=4),
            "requestContext": st.fixed_dictionaries(
                {},
                optional={
                    "http": st.fixed_dictionaries({}, optional={"method": st.text(max_size=8)}),
                    "authorizer": authorizers,
                },
            ),
        },
    )
)
def test_any_api_gateway_event_becomes_a_request_or_a_refusal(event: dict[str, Any]) -> None:
    try:
        request = request_from_event(event)
    except McpError as exc:
        assert_well_answered(TRANSPORT.refuse(exc))
        return
    assert_well_answered(handle(request))


# -- the JSON-RPC envelope --------------------------------------------------------------------

meta = st.one_of(
    json_value,
    st.fixed_dictionaries(
        {
            "io.modelcontextprotocol/protocolVersion": st.sampled_from([VERSION, "2025-11-25"])
            | st.text(max_size=12),
            "io.modelcontextprotocol/clientCapabilities": st.fixed_dictionaries(
                {},
                optional={
                    "elicitation": st.just({}),
                    "sampling": st.just({}),
                    "roots": st.just({}),
                    "extensions": json_value,
                },
            )
            | json_value,
        },
        optional={"io.modelcontextprotocol/logLevel": st.sampled_from(["debug", "x"])},
    ),
)
params = st.fixed_dictionaries(
    {"_meta": meta},
    optional={
        "name": st.sampled_from(TOOLS) | st.text(max_size=20) | json_value,
        "arguments": json_value,
        "cursor": st.text(max_size=12) | json_value,
        "uri": st.text(max_size=30),
        "taskId": st.text(max_size=40),
        "inputResponses": json_value
        | st.dictionaries(
            st.text(max_size=12), st.fixed_dictionaries({"action": st.text(max_size=8)})
        ),
        "requestState": st.text(max_size=80),
        "notifications": json_value,
    },
)


@BOUNDED
@given(
    rid=st.integers() | st.text(max_size=20) | st.none() | st.booleans() | st.floats(),
    method=st.sampled_from(METHODS) | st.text(max_size=20),
    body_params=params | json_value,
    jsonrpc=st.sampled_from(["2.0", "2.0", "1.0"]),
    consistent_headers=st.booleans(),
)
def test_any_json_rpc_message_is_answered_below_500(
    rid: Any, method: str, body_params: Any, jsonrpc: str, consistent_headers: bool
) -> None:
    message: dict[str, Any] = {"jsonrpc": jsonrpc, "method": method, "params": body_params}
    if rid is not None:
        message["id"] = rid
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    if consistent_headers:
        headers |= {"mcp-protocol-version": VERSION, "mcp-method": method}
        if isinstance(body_params, dict) and isinstance(body_params.get("name"), str):
            headers["mcp-name"] = body_params["name"]
    body = json.dumps(message).encode()
    assert_well_answered(handle(HttpRequest("POST", headers, body, deadline=_soon())))


# -- requestState -----------------------------------------------------------------------------

CODEC = RequestStateCodec(SECRET)
BINDING = {"m": "tools/call", "n": "t", "a": digest({}), "p": digest("anonymous")}
SEALED = CODEC.seal(
    BINDING,
    SealedRound(
        answers={"k": {"action": "accept"}},
        steps={"step:s": 1},
        outstanding=frozenset({"q"}),
    ),
)


@BOUNDED
@given(token=st.text(max_size=200) | st.binary(max_size=150).map(lambda b: "v2." + _b64(b)))
def test_any_state_opens_or_is_invalid_params(token: str) -> None:
    with contextlib.suppress(InvalidParams):
        CODEC.open(token, BINDING)


@BOUNDED
@given(
    position=st.integers(min_value=0, max_value=len(SEALED) - 1),
    replacement=st.characters(min_codepoint=0x21, max_codepoint=0x7E),
    cut=st.integers(min_value=0, max_value=len(SEALED)),
    suffix=st.text(max_size=4),
)
def test_a_mutated_state_is_refused_unless_unchanged(
    position: int, replacement: str, cut: int, suffix: str
) -> None:
    for mutated in (
        SEALED[:position] + replacement + SEALED[position + 1 :],
        SEALED[:cut] + suffix,
    ):
        if mutated == SEALED:
            continue
        try:
            CODEC.open(mutated, BINDING)
        except InvalidParams:
            continue
        raise AssertionError(f"a mutated state opened: {mutated!r}")


@BOUNDED
@given(
    state=st.text(max_size=120) | st.just(SEALED),
    responses=json_value,
    tool=st.sampled_from(TOOLS),
)
def test_any_state_and_answers_on_a_call_are_answered_below_500(
    state: str, responses: Any, tool: str
) -> None:
    body_params = {
        "name": tool,
        "arguments": {},
        "requestState": state,
        "inputResponses": responses,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "sampling": {}},
        },
    }
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": body_params}
    headers = {
        "content-type": "application/json",
        "mcp-protocol-version": VERSION,
        "mcp-method": "tools/call",
        "mcp-name": tool,
    }
    body = json.dumps(message).encode()
    assert_well_answered(handle(HttpRequest("POST", headers, body, deadline=_soon())))


def _soon() -> float:
    return time.monotonic() + 2


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
