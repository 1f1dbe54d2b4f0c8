"""`make run` reloads a tools module on edit, but not a declaration: its stand-ins (functions,
machines created in moto, the HTTP stub) are made once, and a freshly loaded declaration would
not be bound to them (it would call AWS). The stack says so by having no watcher."""

from __future__ import annotations

from mcp_tasks_aws.local.stack import EmbeddedStack
from support.targets import EXAMPLE


def test_a_declaration_is_served_without_a_reload_watcher() -> None:
    stack = EmbeddedStack(env={"MCP_TASKS_TOOLS": str(EXAMPLE)}, reload_interval_s=0.05)
    try:
        assert stack.managed is not None
        assert stack.tools_watcher is None
    finally:
        stack.stop()


def test_a_tools_module_still_gets_its_watcher() -> None:
    stack = EmbeddedStack(env={"MCP_TASKS_TOOLS": "demo"}, reload_interval_s=0.05)
    try:
        assert stack.managed is None
        assert stack.tools_watcher is not None
    finally:
        stack.stop()
