"""A tools module for the live-progress tests: tools that report progress at a known pace, one
of them asking a question between two paced stretches (served by an embedded stack with
MCP_TASKS_TOOLS=support.paced_tools)."""

from __future__ import annotations

import time

from mcp_tasks_aws import ToolContext, ToolSet

tools = ToolSet(name="paced-tools", version="0")

_GO_ON = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def _pace(ctx: ToolContext, steps: int, seconds: float, first: int, total: int) -> int:
    """Reports progress `first` .. `first + steps - 1`, each then `seconds` of work."""
    for index in range(steps):
        ctx.report("working", progress=first + index, total=total)
        time.sleep(seconds)
    return steps


@tools.tool()
def paced(steps: int, seconds_per_step: float, ctx: ToolContext) -> str:
    """Reports progress before each step of work, then answers.

    Args:
        steps: How many steps.
        seconds_per_step: How long each step takes.
    """
    _pace(ctx, steps, seconds_per_step, 0, steps)
    return f"{steps} steps done"


@tools.tool()
async def paced_question(steps: int, seconds_per_step: float, ctx: ToolContext) -> str:
    """Works `steps` paced steps, asks whether to go on, then works as many again.

    Args:
        steps: How many steps before the question (and after it).
        seconds_per_step: How long each step takes.
    """
    # Done once: a replay after the answer does not work (nor report) the first stretch again.
    ctx.step("before", lambda: _pace(ctx, steps, seconds_per_step, 0, 2 * steps))
    answer = await ctx.elicit("Go on?", _GO_ON, key="go_on")
    if not (answer.content or {}).get("ok"):
        return "stopped"
    _pace(ctx, steps, seconds_per_step, steps, 2 * steps)
    return f"{2 * steps} steps done"
