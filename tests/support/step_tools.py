"""A tools module for the step tests: side effects counted, so a test can tell a replay from
a rerun (served by an embedded stack with MCP_TASKS_TOOLS=support.step_tools)."""

from __future__ import annotations

from collections import Counter

from mcp_tasks_aws import TaskPolicy, ToolContext, ToolSet

tools = ToolSet(name="step-tools", version="0")
side_effects: Counter[str] = Counter()

_CONFIRM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def _charge(label: str) -> str:
    side_effects[label] += 1
    return f"charge-{label}-{side_effects[label]}"


@tools.tool(task=TaskPolicy.OPTIONAL, poll_interval_ms=100)
async def charge_then_confirm(label: str, ctx: ToolContext) -> str:
    """Charges once, asks for a confirmation, then reports what the step returned.

    Args:
        label: Names the side effect to count.
    """
    receipt = ctx.step("charge", lambda: _charge(label))
    answer = await ctx.elicit("Confirm?", _CONFIRM, key="confirm")
    return f"{receipt}; confirmed={(answer.content or {}).get('ok')}"
