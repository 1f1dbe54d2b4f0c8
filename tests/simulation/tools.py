"""The tools a simulated deployment serves: one of each shape the runners meet.

Each question's message is its key (a 2025-11-25 client, which is shown only the message,
knows what it answers). Every tool echoes the answers it used in its result (`{"tool",
"answers"}` as JSON text), so the checker can tell which answer each question got; every
`ctx.step` side effect is written to the run's ledger (`side_effects`), outside the system,
so the checker can count how often it really ran. `approve` is a declared Standard workflow
(`approval.yaml`): its execution is the task.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp_tasks_aws import TaskPolicy, ToolContext, ToolSet
from mcp_tasks_aws.targets.tools import declared_tools

ANSWER_SCHEMA = {"type": "object", "properties": {"v": {"type": "string"}}, "required": ["v"]}
SHORT_TTL_MS = 15 * 60 * 1000
"""`brief`'s retention: short enough that a run sees it expire."""

side_effects: Callable[[str, str], None] = lambda task_id, step: None  # noqa: E731
"""Where a step's side effect is recorded (set by the world for its run)."""
outside: Callable[[], int] = lambda: 0  # noqa: E731
"""What `depends` reads of the world outside (a number that changes all the time)."""


def _answered(value: Any) -> str:
    content = getattr(value, "content", None) or {}
    action = getattr(value, "action", "accept")
    return str(content.get("v")) if action == "accept" else action


def _result(tool: str, answers: dict[str, str]) -> str:
    return json.dumps({"tool": tool, "answers": answers}, sort_keys=True)


async def _one_question(tool: str, ctx: ToolContext) -> str:
    """Ask `k1`, then end with its answer."""
    first = await ctx.elicit("k1", ANSWER_SCHEMA, key="k1")
    return _result(tool, {"k1": _answered(first)})


def build() -> ToolSet:
    tools = ToolSet(name="simulation", version="1")

    @tools.tool(task=TaskPolicy.REQUIRED)
    async def quick(label: str, ctx: ToolContext) -> str:
        """Ends at once (a direct leg, no execution ever).

        Args:
            label: Free text.
        """
        return _result("quick", {})

    @tools.tool(task=TaskPolicy.REQUIRED)
    async def ask(label: str, ctx: ToolContext) -> str:
        """Asks one question, then ends with the answer.

        Args:
            label: Free text.
        """
        return await _one_question("ask", ctx)

    @tools.tool(task=TaskPolicy.REQUIRED)
    async def ask_twice(label: str, ctx: ToolContext) -> str:
        """Asks a question, then a second one: two rounds.

        Args:
            label: Free text.
        """
        first = await ctx.elicit("k1", ANSWER_SCHEMA, key="k1")
        ctx.report("between the rounds")
        second = await ctx.elicit("k2", ANSWER_SCHEMA, key="k2")
        return _result("ask_twice", {"k1": _answered(first), "k2": _answered(second)})

    @tools.tool(task=TaskPolicy.REQUIRED)
    async def pay_then_ask(label: str, ctx: ToolContext) -> str:
        """Pays (a step: once per task), asks, then ships (a step too).

        Args:
            label: Free text.
        """
        task_id = str(ctx.task_id)
        ctx.step("pay", lambda: side_effects(task_id, "pay") or "paid")
        first = await ctx.elicit("k1", ANSWER_SCHEMA, key="k1")
        ctx.step("ship", lambda: side_effects(task_id, "ship") or "shipped")
        return _result("pay_then_ask", {"k1": _answered(first)})

    @tools.tool(task=TaskPolicy.REQUIRED)
    async def progress(label: str, ctx: ToolContext) -> str:
        """Reports its progress three times (each a write that notices a cancel), then ends.

        Args:
            label: Free text.
        """
        for step in range(3):
            ctx.report("working", progress=step, total=3)
        return _result("progress", {})

    @tools.tool(task=TaskPolicy.REQUIRED, direct=False)
    async def on_machine(label: str, ctx: ToolContext) -> str:
        """Runs on Step Functions from its first leg; asks one question.

        Args:
            label: Free text.
        """
        return await _one_question("on_machine", ctx)

    @tools.tool(task=TaskPolicy.REQUIRED, direct=False)
    async def depends(label: str, ctx: ToolContext) -> str:
        """Asks only when the world outside says so (an odd number), read in a step (so a
        replay takes the path the first run took; two copies of one leg may still read the
        world differently, as tools that read the world do).

        Args:
            label: Free text.
        """
        task_id = str(ctx.task_id)
        if ctx.step("look", lambda: side_effects(task_id, "look") or outside() % 2):
            return await _one_question("depends", ctx)
        return _result("depends", {})

    @tools.tool(task=TaskPolicy.REQUIRED, ttl_ms=SHORT_TTL_MS)
    async def brief(label: str, ctx: ToolContext) -> str:
        """Asks one question, and is kept only a quarter of an hour.

        Args:
            label: Free text.
        """
        return await _one_question("brief", ctx)

    @tools.tool(task=TaskPolicy.REQUIRED)
    async def broken(label: str, ctx: ToolContext) -> str:
        """Raises: the task completes with a tool error.

        Args:
            label: Free text.
        """
        raise ValueError("broken on purpose")

    tools.include(declared_tools(Path(__file__).with_name("approval.yaml")))
    return tools


TOOLS = (
    "quick",
    "ask",
    "ask_twice",
    "pay_then_ask",
    "progress",
    "on_machine",
    "depends",
    "brief",
    "broken",
    "approve",
)
