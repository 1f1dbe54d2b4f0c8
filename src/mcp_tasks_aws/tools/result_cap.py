"""The one cap on the size of a tool's result, whoever made it and however it is returned.

A result is counted as `protocol.jsonrpc.encoded_size` counts it (the bytes it takes inside a
Lambda response, escapes included) against `protocol.jsonrpc.MAX_RESULT_BYTES`. A larger one
becomes a tool error saying so: inline, the function's response would pass Lambda's 6 MB and the
client would read API Gateway's 5xx; in a task, it could never be read back. Code tools' inline
results (`server.inline`) and declared targets' results (`targets.tools`) pass through `capped`;
a task's leg applies the same cap with its own wording (`tasks.legs`). A prompt's result has no
error form of its own, so one too large is refused as a request error (`refuse_large_prompt`).
"""

from __future__ import annotations

import logging
from typing import Any

from mcp_tasks_aws.protocol.errors import McpError
from mcp_tasks_aws.protocol.jsonrpc import MAX_RESULT_BYTES, encoded_size
from mcp_tasks_aws.tools.specs import text_result

logger = logging.getLogger(__name__)


def _over_cap(kind: str, name: str, result: dict[str, Any]) -> int | None:
    """`result`'s encoded size when it is over the cap (logged), else None."""
    size = encoded_size(result)
    if size <= MAX_RESULT_BYTES:
        return None
    logger.warning("%s %s: a result of %d bytes (encoded) refused", kind, name, size)
    return size


def capped(
    tool: str, result: dict[str, Any], *, answered: str = "its target answered"
) -> dict[str, Any]:
    """`result`, or a tool error saying it is larger than a result may be (`answered` says
    who made it: "its target answered" for a declared target, "it returned" for code)."""
    size = _over_cap("tool", tool, result)
    if size is None:
        return result
    return text_result(
        f"Tool {tool}: {answered} {size / 1e6:.1f} MB (as encoded in a response); "
        f"a result may be at most {MAX_RESULT_BYTES / 1e6:.1f} MB",
        is_error=True,
    )


def refuse_large_prompt(prompt: str, result: dict[str, Any]) -> dict[str, Any]:
    """`result`, or McpError (-32603) saying the prompt's messages are larger than an answer
    may be: Lambda would refuse the response and the client would read API Gateway's 5xx."""
    size = _over_cap("prompt", prompt, result)
    if size is None:
        return result
    raise McpError(
        f"Prompt {prompt}: its messages take {size / 1e6:.1f} MB (as encoded in a response); "
        f"an answer may be at most {MAX_RESULT_BYTES / 1e6:.1f} MB"
    )
