"""The durable tools the `durable` bench section measures (served by its embedded stack).

`durable_plain` is one checkpointed step (cases 1 and 2 of the cost model); `durable_asking`
asks once, then runs its step (cases 3 and 4); `durable_nap` sleeps (the "one day's sleep"
case, shortened by the stack's clock). Each step sleeps `seconds` of wall time.
"""

from __future__ import annotations

import time

from mcp_tasks_aws import ToolContext, ToolSet

tools = ToolSet(name="bench-durable", version="0.1.0")
CONFIRM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


@tools.tool(task="required", runner="durable")
def durable_plain(ctx: ToolContext, seconds: float = 0.0) -> str:
    """One checkpointed step.

    Args:
        seconds: How long the step works.
    """
    return str(ctx.step("work", lambda: time.sleep(seconds) or "done"))


@tools.tool(task="required", runner="durable")
async def durable_asking(ctx: ToolContext, seconds: float = 0.0) -> str:
    """A question, then one checkpointed step.

    Args:
        seconds: How long the step works.
    """
    await ctx.elicit("go on?", CONFIRM)
    return str(ctx.step("work", lambda: time.sleep(seconds) or "done"))


@tools.tool(task="required", runner="durable")
def durable_nap(ctx: ToolContext, nap_seconds: int = 60) -> str:
    """Sleep without compute, then one checkpointed step.

    Args:
        nap_seconds: How long to sleep (durable time).
    """
    ctx.sleep(nap_seconds)
    return str(ctx.step("work", lambda: "done"))
