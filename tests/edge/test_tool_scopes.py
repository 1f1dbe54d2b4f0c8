"""Scopes are declared on the tool decorator; the edge advertises them (the server checks them)."""

from __future__ import annotations

import pytest

from mcp_tasks_aws.app import App
from mcp_tasks_aws.config import Settings
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


def test_the_edge_advertises_the_configured_tools_scopes() -> None:
    class Transport:
        def handle(self, request: object) -> object:
            raise AssertionError("not called")

    edge = App(Settings(tools_module="demo")).edge(Transport())  # type: ignore[arg-type]
    assert edge.all_scopes == ["deploy"]
