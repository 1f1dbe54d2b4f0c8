"""mcp-tasks-aws: Python functions as MCP tools on AWS serverless, with durable tasks.

The public surface for tool authors::

    from mcp_tasks_aws import ToolSet, ToolContext, ToolError, ToolResult, TaskPolicy
    from mcp_tasks_aws import Image, Audio, Text, ResourceLink, EmbeddedResource, Message
    from mcp_tasks_aws import Header, ResourceNotFound
"""

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
from mcp_tasks_aws.tools.context import ElicitResult, RootsResult, SamplingResult, ToolContext
from mcp_tasks_aws.tools.registry import TaskPolicy, ToolError, ToolResult, ToolSet
from mcp_tasks_aws.tools.resources import ResourceNotFound
from mcp_tasks_aws.tools.signature import Header, ToolDefinitionError

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
