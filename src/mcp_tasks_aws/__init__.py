"""mcp-tasks-aws: Python functions as MCP tools on AWS serverless, with durable tasks.

The public surface for tool authors::

    from mcp_tasks_aws import ToolSet, ToolContext, ToolError, ToolResult, TaskPolicy
"""

from mcp_tasks_aws.tools.context import ElicitResult, RootsResult, SamplingResult, ToolContext
from mcp_tasks_aws.tools.registry import TaskPolicy, ToolError, ToolResult, ToolSet

__all__ = [
    "ElicitResult",
    "RootsResult",
    "SamplingResult",
    "TaskPolicy",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "ToolSet",
]
