"""Managed targets: existing AWS resources served as MCP tools from a declaration.

A declaration (YAML or JSON, `declaration.schema.json`) names Lambda functions, Step Functions
state machines and HTTP APIs (OpenAPI documents among them); each becomes a tool
(`targets.tools`). `MCP_TASKS_TOOLS=path/to/tools.yaml` serves one; a code tool set mixes one
in with `tools.include(declared_tools("managed.yaml"))`. The target logic lives here (payload
templates, result mapping, the declaration's checks, the IAM it needs: `targets.iam`); the
AWS calls are `aws.targets`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from mcp_tasks_aws.tools.registry import ToolSet

__all__ = ["declared_tools"]


def declared_tools(path: str | Path, **options: Any) -> ToolSet:
    """The ToolSet of the declaration at `path` (see `targets.tools.declared_tools`)."""
    from mcp_tasks_aws.targets.tools import declared_tools as build

    return build(path, **options)
