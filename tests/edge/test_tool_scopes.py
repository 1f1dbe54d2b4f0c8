"""Scopes are declared on the tool decorator and reach the edge as tool -> scopes."""

from __future__ import annotations

import pytest

from mcp_tasks_aws.config import Settings, load_toolset
from mcp_tasks_aws.edge.gate import edge_for
from mcp_tasks_aws.tools.registry import ToolSet


def test_scopes_are_declared_on_the_decorator() -> None:
    tools = ToolSet()

    @tools.tool(scopes=["deploy", "audit"])
    def release(service: str) -> str:
        """Release a service."""
        return service

    @tools.tool
    def status() -> str:
        """Say how things are."""
        return "ok"

    assert tools.tools["release"].scopes == {"deploy", "audit"}
    assert tools.tools["status"].scopes == frozenset()


def test_one_string_is_not_taken_for_a_list_of_letters() -> None:
    tools = ToolSet()
    with pytest.raises(TypeError, match="list of scope names"):
        tools.tool(scopes="deploy")


def test_the_edge_knows_the_configured_tools_scopes() -> None:
    class Transport:
        def handle(self, request: object) -> object:
            raise AssertionError("not called")

    settings = Settings(tools_module="demo")
    edge = edge_for(settings, Transport(), load_toolset("demo"))  # type: ignore[arg-type]
    assert edge.tool_scopes("release") == {"deploy"}
    assert edge.tool_scopes("text_stats") == frozenset()
    assert edge.all_scopes == ["deploy"]
