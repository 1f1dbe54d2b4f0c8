"""Which argument names a tool's `inputSchema` admits, and the closest known name for a typo.

Shared by the server (a `tools/call` naming an argument the tool does not take is refused with
-32602, instead of the argument being dropped) and the `mcp-tasks` CLI (which warns before it
sends such a call). Both read the same schema the same way:

- the names a schema *knows* are its root `properties`, plus any name matching one of its
  root `patternProperties`;
- a schema *allows* other names unless it says otherwise: `additionalProperties: false` closes
  it. The server also treats the schemas it derives from type hints as closed (the function
  has no parameter to receive anything else), although they do not spell that out.

It imports nothing but the standard library (`difflib` only when a name is unknown), so the
Lambda functions and the client can both use it without paying for the other.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["closes", "closest_name", "unknown_argument_message", "unknown_names"]


def closes(schema: Mapping[str, Any]) -> bool:
    """Whether the schema itself refuses names it does not know (`additionalProperties: false`)."""
    return schema.get("additionalProperties") is False


def _known(schema: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    properties = schema.get("properties")
    names = [str(n) for n in properties] if isinstance(properties, Mapping) else []
    patterns = schema.get("patternProperties")
    return names, [str(p) for p in patterns] if isinstance(patterns, Mapping) else []


def _matches(pattern: str, name: str) -> bool:
    try:
        return re.search(pattern, name) is not None
    except re.error:  # a pattern Python cannot read: do not refuse on its account
        return True


def unknown_names(schema: Mapping[str, Any], arguments: Iterable[str]) -> list[str]:
    """The names in `arguments` the schema does not know, in the order given."""
    names, patterns = _known(schema)
    known = set(names)
    return [
        name
        for name in arguments
        if name not in known and not any(_matches(p, name) for p in patterns)
    ]


def closest_name(name: str, known: Iterable[str]) -> str | None:
    """The known name `name` most likely misspells (difflib's closest match), if any is close."""
    import difflib  # only a call with an unknown name pays for it

    candidates = list(known)
    folded = {candidate.casefold(): candidate for candidate in candidates}
    if name.casefold() in folded:  # `Height` for `height`
        return folded[name.casefold()]
    matches = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    return matches[0] if matches else None


def unknown_argument_message(
    tool: str, schema: Mapping[str, Any], unknown: list[str], *, kind: str = "tool"
) -> str:
    """One line naming the unknown argument(s) of `tool` and what was probably meant.

    `Unknown argument 'heigth' for tool sparkline: did you mean 'height'?`; without a close
    match the line lists the names the tool takes instead. `kind` is "tool" or "prompt".
    """
    names, _ = _known(schema)
    takes = f"it takes {', '.join(names)}" if names else "it takes no arguments"
    if len(unknown) == 1:
        guess = closest_name(unknown[0], names)
        head = f"Unknown argument {unknown[0]!r} for {kind} {tool}"
        return f"{head}: did you mean {guess!r}?" if guess else f"{head}: {takes}"
    described = []
    for name in unknown:
        guess = closest_name(name, names)
        described.append(f"{name!r}" + (f" (did you mean {guess!r}?)" if guess else ""))
    return f"Unknown arguments {', '.join(described)} for {kind} {tool}: {takes}"
