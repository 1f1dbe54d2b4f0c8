"""Argument completion (`completion/complete`): suggestions for prompt arguments and
resource-template variables, from functions the tools module declares::

    @tools.completer(prompt="plan_trip", argument="city")
    def cities(value: str) -> list[str]:
        return [c for c in CITIES if c.lower().startswith(value.lower())]

    @tools.completer(resource="weather://{city}/today", argument="city")
    def more_cities(value: str, context: dict[str, str]) -> list[str]: ...

A completer takes the partial value and, if it wants it, the arguments already resolved
(`context`); it returns strings, best first. The server sends at most
:data:`MAX_COMPLETIONS` of them, with `total` and `hasMore` telling the client about the rest.

Invariants: a completer is attached to a prompt argument or template variable that exists
(checked when the tool set is checked at startup); a prompt argument or variable without a
completer completes to nothing; a completer that raises answers -32603 naming what it
completes, with the cause in the logs only.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from mcp_tasks_aws.protocol.errors import McpError

logger = logging.getLogger(__name__)

MAX_COMPLETIONS = 100
"""The spec's cap on `completion.values`."""

RefKind = Literal["prompt", "resource"]


@dataclass(frozen=True)
class CompleterSpec:
    """One completer: which prompt argument or template variable it completes, and how."""

    fn: Any
    kind: RefKind
    ref: str
    """The prompt's name, or the resource template (as written)."""
    argument: str

    @property
    def label(self) -> str:
        what = "prompt" if self.kind == "prompt" else "resource template"
        return f"argument {self.argument!r} of {what} {self.ref!r}"

    @property
    def wants_context(self) -> bool:
        return len(inspect.signature(self.fn).parameters) >= 2


def empty_completion() -> dict[str, Any]:
    return {"completion": {"values": [], "total": 0, "hasMore": False}}


def complete(spec: CompleterSpec, value: str, context: dict[str, str]) -> dict[str, Any]:
    """The CompleteResult (without `resultType`) for one partial value."""
    try:
        found = spec.fn(value, dict(context)) if spec.wants_context else spec.fn(value)
        if inspect.isawaitable(found):
            import asyncio  # only async completers pay for an event loop

            found = asyncio.run(_awaited(found))
        values = _strings(found)
    except McpError:
        raise
    except Exception as exc:
        logger.exception("completer for %s raised %s", spec.label, type(exc).__name__)
        raise McpError(f"Completing {spec.label} failed") from exc
    return {
        "completion": {
            "values": values[:MAX_COMPLETIONS],
            "total": len(values),
            "hasMore": len(values) > MAX_COMPLETIONS,
        }
    }


def _strings(found: Any) -> list[str]:
    if isinstance(found, str) or not isinstance(found, Iterable):
        raise TypeError(f"a completer returns a list of strings, not {type(found).__name__}")
    values = list(found)
    if not all(isinstance(v, str) for v in values):
        raise TypeError("a completer returns a list of strings")
    return values


async def _awaited(value: Any) -> Any:
    return await value
