"""End to end over real HTTP on 127.0.0.1: the embedded stack, the emulated edge, the handler."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_tasks_aws.local.apigw_emulator import LocalLambdaContext, build_event
from mcp_tasks_aws.local.stack import EmbeddedStack
from support.mcp import PROTOCOL_VERSION, envelope, running_stack

# Never let an environment proxy see loopback traffic.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@pytest.fixture(scope="module")
def stack() -> Iterator[EmbeddedStack]:
    with running_stack(MCP_TASKS_TOOLS="conformance") as running:
        yield running


def http(
    url: str,
    *,
    method: str = "POST",
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with _OPENER.open(request, timeout=10) as response:
            return (
                response.status,
                {k.lower(): v for k, v in response.headers.items()},
                response.read(),
            )
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()


def rpc(
    stack: EmbeddedStack,
    method: str,
    params: dict[str, Any] | None = None,
    *,
    name: str | None = None,
    token: str | None = None,
    extra_headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], Any]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": method,
        "params": {**(params or {}), "_meta": envelope()},
    }
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL_VERSION,
        "Mcp-Method": method,
    }
    if name is not None:
        headers["Mcp-Name"] = name
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    headers.update(extra_headers or {})
    status, response_headers, raw = http(stack.url, body=json.dumps(body).encode(), headers=headers)
    return status, response_headers, json.loads(raw) if raw else None


def jwt(sub: str) -> str:
    def b64(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    return f"{b64({'alg': 'none'})}.{b64({'iss': 'https://idp.local', 'sub': sub})}.sig"


def test_stack_listens_on_loopback(stack: EmbeddedStack) -> None:
    assert stack.host == "127.0.0.1"
    assert stack.port > 0
    assert stack.url == f"http://127.0.0.1:{stack.port}/mcp"


def test_discover_over_http(stack: EmbeddedStack) -> None:
    status, headers, message = rpc(stack, "server/discover")
    assert status == 200
    assert headers["content-type"] == "application/json"
    assert message["id"] == 1
    result = message["result"]
    assert result["resultType"] == "complete"
    assert result["supportedVersions"] == [PROTOCOL_VERSION]
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == (
        "mcp-tasks-aws-conformance"
    )


def test_tool_call_over_http(stack: EmbeddedStack) -> None:
    status, _, message = rpc(
        stack, "tools/call", {"name": "greet", "arguments": {"name": "Ada"}}, name="greet"
    )
    assert status == 200
    assert message["result"]["content"] == [{"type": "text", "text": "Hello, Ada!"}]


@pytest.mark.parametrize("path", ["/", "/other", "/mcp/extra", "/MCP"])
def test_other_paths_are_404(stack: EmbeddedStack, path: str) -> None:
    url = f"http://{stack.host}:{stack.port}{path}"
    status, _, body = http(url, body=b"{}", headers={"Content-Type": "application/json"})
    assert status == 404
    assert b"/mcp" in body


def test_query_string_does_not_change_the_endpoint(stack: EmbeddedStack) -> None:
    body = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
    status, _, raw = http(
        stack.url + "?x=1", body=body, headers={"Content-Type": "application/json"}
    )
    assert status == 202
    assert raw == b""


def test_get_is_405_over_http(stack: EmbeddedStack) -> None:
    status, headers, _ = http(stack.url, method="GET")
    assert status == 405
    assert headers["allow"] == "POST"


def test_origin_allow_list_is_the_stack_own_address(stack: EmbeddedStack) -> None:
    own = {"Origin": f"http://127.0.0.1:{stack.port}"}
    assert rpc(stack, "server/discover", extra_headers=own)[0] == 200
    foreign = {"Origin": "http://attacker.example"}
    status, _, message = rpc(stack, "server/discover", extra_headers=foreign)
    assert status == 403
    assert message["error"]["code"] == -32600


def test_two_jwt_subjects_are_two_callers_end_to_end(stack: EmbeddedStack) -> None:
    # Given a request state issued to alice
    tool = "test_input_required_result_request_state"
    params: dict[str, Any] = {"name": tool, "arguments": {}}
    _, _, first = rpc(stack, "tools/call", params, name=tool, token=jwt("alice"))
    assert first["result"]["resultType"] == "input_required"
    retry = {
        **params,
        "requestState": first["result"]["requestState"],
        "inputResponses": {"confirm": {"action": "accept", "content": {"ok": True}}},
    }
    # When bob, or an anonymous caller, presents it, Then it is refused
    _, _, as_bob = rpc(stack, "tools/call", retry, name=tool, token=jwt("bob"))
    assert as_bob["error"]["code"] == -32602
    _, _, anonymous = rpc(stack, "tools/call", retry, name=tool)
    assert anonymous["error"]["code"] == -32602
    # And alice can use it
    _, _, as_alice = rpc(stack, "tools/call", retry, name=tool, token=jwt("alice"))
    assert "state-ok" in as_alice["result"]["content"][0]["text"]


def test_undecodable_body_is_answered_as_a_json_rpc_error(stack: EmbeddedStack) -> None:
    # Given an event whose base64 body cannot be decoded (the edge refuses it)
    event = build_event(
        method="POST", path="/mcp", headers={"Content-Type": "application/json"}, body=b"{}"
    )
    event["body"] = "%%% not base64 %%%"
    event["isBase64Encoded"] = True
    # When the API handler answers it
    answer = stack.api_handler(event, LocalLambdaContext())
    # Then, like every error on the wire, it is a JSON-RPC error object (errors.py invariant)
    assert answer["statusCode"] == 400
    assert (answer.get("headers") or {}).get("content-type") == "application/json"
    message = json.loads(answer["body"])
    assert message["jsonrpc"] == "2.0"
    assert message["error"]["code"] == -32600


def test_a_stack_keeps_its_own_resources_whatever_the_callers_environment_says() -> None:
    # Given a caller's environment naming deployed resources (as a shell that deploys might)
    deployed = {
        "MCP_TASKS_TOOLS": "conformance",
        "MCP_TASKS_TABLE": "somebody-elses-table",
        "MCP_TASKS_WORKER_FUNCTION": "somebody-elses-worker",
    }
    with running_stack(**deployed) as stack:
        # Then each function uses this stack's table, and only the API names this stack's worker
        assert stack.api_app.settings.task_table == stack.aws.table_name
        assert stack.api_app.settings.worker_function == stack.aws.function_name("WorkerFunction")
        assert stack.worker_app.settings.worker_function == ""
        assert stack.api_app.tasks is not None
        assert stack.api_app.tasks.direct_legs is not None
    # And an empty worker name turns direct legs off: every leg in an execution
    with running_stack(MCP_TASKS_TOOLS="conformance", MCP_TASKS_WORKER_FUNCTION="") as stack:
        assert stack.api_app.tasks is not None
        assert stack.api_app.tasks.direct_legs is None
