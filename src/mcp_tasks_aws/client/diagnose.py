"""Why a call to an MCP endpoint failed, in one line that says the cause and the fix.

The SDK turns an HTTP answer that is not MCP into a stand-in JSON-RPC error that has lost the
status ("Not Found", "Server returned an error response", "Unexpected content type: …"), and
a server that does not listen into a nested exception group. This module owns putting them
back into words a person can act on:

- `HttpTrace`: an httpx response hook (see `connect(on_response=…)`) that keeps the last POST
  answer that was not MCP (a 4xx/5xx without a JSON-RPC body, or a body of another type);
- `explain_failure(exc, url, trace)`: one line for a failure the user can fix (an address
  nobody listens at, a wrong path, a refused token, a server that failed (5xx), a server that
  does not speak MCP, a client capability the tool needs), or None when it has nothing better
  than the error itself.

The examples (`examples/*.py`) print it instead of a traceback; so does `mcp-tasks`.
"""

from __future__ import annotations

from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx2
from mcp.shared.exceptions import MCPError

from mcp_tasks_aws.protocol.errors import capability_names

__all__ = ["HttpAnswer", "HttpTrace", "explain_failure", "first_leaf", "missing_capabilities"]

MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
MCP_PATH = "/mcp"
_MCP_TYPES = ("application/json", "text/event-stream")
# The SDK's stand-ins for an HTTP answer without a JSON-RPC error (mcp.client.streamable_http).
_STAND_INS = ("Not Found", "Server returned an error response", "Session terminated")
_STAND_IN_PREFIXES = ("Unexpected content type:", "Failed to parse JSON response")
_REASONS = {401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed"}


@dataclass(frozen=True)
class HttpAnswer:
    """An HTTP answer to a POST that was not MCP."""

    status: int
    content_type: str
    path: str


class HttpTrace:
    """Keeps the last POST answer that was not MCP, as an httpx response hook."""

    def __init__(self) -> None:
        self.last: HttpAnswer | None = None

    async def __call__(self, response: httpx2.Response) -> None:
        if response.request.method != "POST" or response.status_code in (202, 204):
            return  # a GET stream a server does not offer (405) is ordinary; 202 acknowledges
        content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if response.status_code >= 400 or content_type not in _MCP_TYPES:
            self.last = HttpAnswer(response.status_code, content_type, response.request.url.path)


def first_leaf(exc: BaseException) -> BaseException:
    """The first non-group exception inside (possibly nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _is_stand_in(message: str) -> bool:
    return message in _STAND_INS or message.startswith(_STAND_IN_PREFIXES)


def _endpoint_hint(url: str) -> str:
    parts = urlsplit(url)
    if parts.path.rstrip("/") == MCP_PATH:
        return f"the MCP endpoint is usually {MCP_PATH}"
    suggested = urlunsplit((parts.scheme, parts.netloc, MCP_PATH, "", ""))
    return f"the MCP endpoint is usually {MCP_PATH}: try {suggested}"


def _explain_answer(answer: HttpAnswer, url: str) -> str:
    where = f"at {answer.path or '/'}"
    reason = _REASONS.get(answer.status, "")
    status = f"{answer.status} {reason}".strip()
    if answer.status == 401:
        return (
            f"the server answered {status} {where}: it wants a valid token; check --token or "
            "MCP_TASKS_TOKEN (without a token, mcp-tasks signs in where the server offers OAuth)"
        )
    if answer.status == 403:
        return (
            f"the server answered {status} {where}: it refused this token or this origin; check "
            "--token or MCP_TASKS_TOKEN (its audience and scopes)"
        )
    if answer.status == 404:
        return f"the server answered {status} {where}: nothing is served there; " + _endpoint_hint(
            url
        )
    if answer.status >= 500:
        # An MCP endpoint that failed (API Gateway's 500 for a function that crashed or timed
        # out), not one that is not MCP: the cause is in the server's log.
        try:
            phrase = HTTPStatus(answer.status).phrase
        except ValueError:
            phrase = ""
        return (
            f"the server failed: HTTP {answer.status} {phrase} {where}".replace("  ", " ")
            + "; the fault is on the server's side, not in this request: its log says why "
            "(make run's terminal; deployed, the API function's log)"
        )
    body = answer.content_type or "no content type"
    return (
        f"the server answered HTTP {status} ({body}) {where}, which is not MCP: is {url} an "
        f"MCP endpoint? ({_endpoint_hint(url)})"
    )


def missing_capabilities(exc: MCPError) -> list[str]:
    """The client capabilities a -32021 error names (`sampling`, `extension X`)."""
    data: Any = exc.data
    required = data.get("requiredCapabilities") if isinstance(data, dict) else None
    if not isinstance(required, dict):
        return []
    return capability_names(required)


def _is_loopback(url: str) -> bool:
    return (urlsplit(url).hostname or "") in ("127.0.0.1", "localhost", "::1")


def explain_failure(exc: BaseException, url: str, trace: HttpTrace | None = None) -> str | None:
    """One line for a failure the user can fix; None when the error says it best itself."""
    leaf = first_leaf(exc)
    if isinstance(leaf, MCPError):
        if leaf.code == MISSING_REQUIRED_CLIENT_CAPABILITY:
            names = missing_capabilities(leaf)
            if names:
                return (
                    f"the tool needs the client capability {' and '.join(names)}, which this "
                    "client did not declare"
                )
        if not _is_stand_in(leaf.message):
            return None
        if trace is not None and trace.last is not None:
            return _explain_answer(trace.last, url)
        if leaf.message == "Not Found":  # without a trace: the SDK's 404 before any session
            return _explain_answer(HttpAnswer(404, "", urlsplit(url).path), url)
        return (
            f"the server answered something that is not MCP ({leaf.message}): is {url} an MCP "
            f"endpoint? ({_endpoint_hint(url)})"
        )
    if isinstance(leaf, httpx2.ConnectError | ConnectionRefusedError):
        hint = " (`make run` serves http://127.0.0.1:8000/mcp)" if _is_loopback(url) else ""
        return f"cannot reach {url}: nothing answers there; is the server running?{hint}"
    if isinstance(leaf, httpx2.TimeoutException):
        return f"cannot reach {url}: it did not answer in time"
    if isinstance(leaf, httpx2.UnsupportedProtocol | httpx2.InvalidURL):
        return f"{url} is not an http:// or https:// URL"
    if isinstance(leaf, httpx2.HTTPError | OSError):
        return f"cannot reach {url}: {leaf}"
    return None
