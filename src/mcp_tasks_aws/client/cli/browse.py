"""The `mcp-tasks` commands that look around a server: tools, prompts, resources, templates.

    mcp-tasks tools URL                      each tool: arguments, defaults, allowed values,
                                             task policy
    mcp-tasks prompts URL                    each prompt and its arguments
    mcp-tasks prompt URL NAME [key=value...] the prompt's messages (images saved to files)
    mcp-tasks resources URL                  the server's resources
    mcp-tasks templates URL                  its resource templates
    mcp-tasks read URL URI                   a resource's contents (binary saved to a file)

Each is a method of `BrowseCommands`, which `cli.main.Cli` mixes in; what they print is `display`'s.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from typing import Any

from mcp import Client
from mcp_types import Prompt, Resource, ResourceTemplate, Tool

from mcp_tasks_aws.client.cli.display import Output
from mcp_tasks_aws.client.cli.forms import ArgumentError, parse_arguments

__all__ = ["EXIT_OK", "EXIT_USAGE", "BrowseCommands", "find_tool", "list_all"]

EXIT_OK, EXIT_USAGE = 0, 2


async def list_all(fetch: Callable[[str | None], Awaitable[Any]], attribute: str) -> list[Any]:
    """Every item of a paginated list (`tools`, `prompts`, ...), page after page."""
    items: list[Any] = []
    cursor: str | None = None
    while True:
        page = await fetch(cursor)
        items.extend(getattr(page, attribute))
        cursor = page.next_cursor
        if cursor is None:
            return items


async def find_tool(client: Client, name: str) -> Tool | None:
    tools: list[Tool] = await list_all(lambda c: client.list_tools(cursor=c), "tools")
    return next((t for t in tools if t.name == name), None)


def _prompt_schema(prompt: Prompt) -> dict[str, Any]:
    """A prompt's arguments as an object schema of strings (for `parse_arguments`)."""
    arguments = prompt.arguments or []
    return {
        "type": "object",
        "properties": {a.name: {"type": "string"} for a in arguments},
        "required": [a.name for a in arguments if a.required],
        "additionalProperties": False,
    }


class BrowseCommands:
    """Commands that list and read what a server offers (mixed into `cli.main.Cli`)."""

    args: argparse.Namespace
    output: Output

    async def cmd_tools(self, client: Client) -> int:
        tools: list[Tool] = await list_all(lambda c: client.list_tools(cursor=c), "tools")
        self.output.tools(tools)
        return EXIT_OK

    async def cmd_prompts(self, client: Client) -> int:
        prompts: list[Prompt] = await list_all(lambda c: client.list_prompts(cursor=c), "prompts")
        self.output.prompts(prompts)
        return EXIT_OK

    async def cmd_prompt(self, client: Client) -> int:
        prompts: list[Prompt] = await list_all(lambda c: client.list_prompts(cursor=c), "prompts")
        prompt = next((p for p in prompts if p.name == self.args.name), None)
        if prompt is None:
            return self.output.error(
                "usage", f"the server has no prompt {self.args.name!r}", EXIT_USAGE
            )
        try:
            arguments = parse_arguments(self.args.arguments, _prompt_schema(prompt))
        except ArgumentError as exc:
            return self.output.error("usage", f"{prompt.name}: {exc}", EXIT_USAGE)
        result = await client.get_prompt(prompt.name, {k: str(v) for k, v in arguments.items()})
        self.output.prompt(prompt.name, result)
        return EXIT_OK

    async def cmd_resources(self, client: Client) -> int:
        resources: list[Resource] = await list_all(
            lambda c: client.list_resources(cursor=c), "resources"
        )
        self.output.resources(resources)
        return EXIT_OK

    async def cmd_templates(self, client: Client) -> int:
        templates: list[ResourceTemplate] = await list_all(
            lambda c: client.list_resource_templates(cursor=c), "resource_templates"
        )
        self.output.templates(templates)
        return EXIT_OK

    async def cmd_read(self, client: Client) -> int:
        result = await client.read_resource(self.args.uri)
        self.output.read(self.args.uri, result)
        return EXIT_OK
