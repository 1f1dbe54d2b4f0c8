"""Local stand-ins for the example's Lambda functions (the embedded stack invokes them
in-process; deployed, the declaration names your real functions instead).

Each attribute is a Lambda handler named like the declared function (`word-count` ->
`word_count`).
"""

from __future__ import annotations

from typing import Any


def word_count(event: dict[str, Any], context: Any) -> dict[str, int]:
    """The `word-count` function: words and lines of `event["body"]`."""
    body = event.get("body")
    if not isinstance(body, str):
        raise TypeError("body must be a string")
    return {"words": len(body.split()), "lines": len(body.splitlines()) or (1 if body else 0)}
