"""`InlineRunner.run_call` checks a tool's scopes before anything else happens to the call:
before it runs inline, and before it becomes a task (either era's creator), so a token
without the scopes never gets a task started either (issue 19.2)."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_tasks_aws.protocol import models as m
from mcp_tasks_aws.protocol.errors import InsufficientScope
from mcp_tasks_aws.protocol.jsonrpc import Request
from mcp_tasks_aws.protocol.request_state import RequestStateCodec
from mcp_tasks_aws.server.call import Call
from mcp_tasks_aws.server.methods import McpServer
from mcp_tasks_aws.tools.registry import TaskPolicy, ToolSet, ToolSpec
from support.mcp import SECRET, envelope

TOOLS = ToolSet(name="scoped-tasks")


@TOOLS.tool(task=TaskPolicy.REQUIRED, scopes=["deploy"])
def release(service: str) -> str:
    """Release a service, as a task."""
    return service


@TOOLS.tool(scopes=["deploy", "audit"])
def audit(service: str) -> str:
    """Audit a service, inline."""
    return f"audited {service}"


class Creator:
    """A task creator that records what it was asked to start."""

    def __init__(self) -> None:
        self.created: list[str] = []

    def create(
        self, call: Call, spec: ToolSpec, params: m.CallToolParams, journal: Any = None
    ) -> dict[str, Any]:
        self.created.append(spec.name)
        return {"resultType": "task"}


def call_of(name: str, granted: frozenset[str] | None) -> tuple[Call, m.CallToolParams]:
    params = {"name": name, "arguments": {"service": "api"}, "_meta": envelope()}
    meta = m.RequestMeta.model_validate(params["_meta"])
    call = Call(Request(1, "tools/call", params), "alice", meta, granted_scopes=granted)
    return call, m.CallToolParams.model_validate(params)


@pytest.fixture
def server() -> McpServer:
    return McpServer(TOOLS, state_codec=RequestStateCodec(SECRET))


def test_no_task_is_created_for_a_token_without_the_tools_scopes(server: McpServer) -> None:
    creator = Creator()
    call, params = call_of("release", frozenset({"mcp"}))
    with pytest.raises(InsufficientScope) as refused:
        server.inline.run_call(call, params, opted_in=True, creator=creator)
    assert creator.created == []
    assert (refused.value.tool, refused.value.missing) == ("release", {"deploy"})


def test_a_token_with_the_scopes_gets_its_task(server: McpServer) -> None:
    creator = Creator()
    call, params = call_of("release", frozenset({"mcp", "deploy"}))
    server.inline.run_call(call, params, opted_in=True, creator=creator)
    assert creator.created == ["release"]


def test_the_refusal_names_only_the_missing_scopes_and_asks_for_all(server: McpServer) -> None:
    call, params = call_of("audit", frozenset({"deploy"}))
    with pytest.raises(InsufficientScope) as refused:
        server.inline.run_call(call, params, opted_in=False, creator=None)
    assert refused.value.missing == {"audit"}
    assert refused.value.needed == {"audit", "deploy"}
    assert "audit" in refused.value.message


def test_without_a_token_tool_scopes_are_not_enforced(server: McpServer) -> None:
    call, params = call_of("audit", None)
    result = server.inline.run_call(call, params, opted_in=False, creator=None)
    assert result["content"][0]["text"] == "audited api"


def test_serve_hands_the_granted_scopes_to_the_call(server: McpServer) -> None:
    call, _ = call_of("audit", None)
    with pytest.raises(InsufficientScope):
        server.serve(call.request, call.meta, "alice", granted_scopes=frozenset())
