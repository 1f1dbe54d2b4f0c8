"""mcp-tasks-aws: Python functions as MCP tools on AWS serverless, with durable tasks.

The public surface for tool authors::

    from mcp_tasks_aws import ToolSet, ToolContext, ToolError, ToolResult, TaskPolicy
    from mcp_tasks_aws import Image, Audio, Text, ResourceLink, EmbeddedResource, Message
    from mcp_tasks_aws import Header, ResourceNotFound
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp_tasks_aws.tools.content import (
        MAX_BINARY_BYTES,
        Audio,
        ContentError,
        EmbeddedResource,
        Image,
        Message,
        ResourceLink,
        Text,
    )
    from mcp_tasks_aws.tools.context import ToolContext
    from mcp_tasks_aws.tools.journal import ElicitResult, RootsResult, SamplingResult
    from mcp_tasks_aws.tools.registry import TaskPolicy, ToolError, ToolResult, ToolSet
    from mcp_tasks_aws.tools.resources import ResourceNotFound
    from mcp_tasks_aws.tools.signature import Header, ToolDefinitionError

# Every name is loaded on first use: importing a module of this package (`runtime`, which a
# handler enters before its imports) costs nothing more, and a Lambda cold start pays for
# content helpers and resources only when the tools module uses them.
_LAZY = {
    "ToolContext": "mcp_tasks_aws.tools.context",
    **dict.fromkeys(
        ("ElicitResult", "RootsResult", "SamplingResult"), "mcp_tasks_aws.tools.journal"
    ),
    **dict.fromkeys(
        ("TaskPolicy", "ToolError", "ToolResult", "ToolSet"), "mcp_tasks_aws.tools.registry"
    ),
    **dict.fromkeys(("Header", "ToolDefinitionError"), "mcp_tasks_aws.tools.signature"),
    **dict.fromkeys(
        (
            "MAX_BINARY_BYTES",
            "Audio",
            "ContentError",
            "EmbeddedResource",
            "Image",
            "Message",
            "ResourceLink",
            "Text",
        ),
        "mcp_tasks_aws.tools.content",
    ),
    "ResourceNotFound": "mcp_tasks_aws.tools.resources",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mcp_tasks_aws' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "MAX_BINARY_BYTES",
    "Audio",
    "ContentError",
    "ElicitResult",
    "EmbeddedResource",
    "Header",
    "Image",
    "Message",
    "ResourceLink",
    "ResourceNotFound",
    "RootsResult",
    "SamplingResult",
    "TaskPolicy",
    "Text",
    "ToolContext",
    "ToolDefinitionError",
    "ToolError",
    "ToolResult",
    "ToolSet",
]
