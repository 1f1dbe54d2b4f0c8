"""The embedded stack's access log: one line per request naming the JSON-RPC method and the
tool (or prompt, resource, task) it is about, the HTTP status, the JSON-RPC error code when
the answer is one, and the time taken; never the arguments. Off unless asked for (tests), on
in `make run` (`MCP_TASKS_ACCESS_LOG=0` turns it off there)."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest

from mcp_tasks_aws.local.asgi import LambdaHttpApp


def exchange(app: LambdaHttpApp, body: bytes, path: str = "/mcp") -> None:
    sent_body = False

    async def receive() -> dict[str, Any]:
        nonlocal sent_body
        if not sent_body:
            sent_body = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        pass

    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "query_string": b"",
        "headers": [(b"content-type", b"application/json")],
        "client": ("127.0.0.1", 5000),
    }
    asyncio.run(app(scope, receive, send))


def answering(answer: dict[str, Any]) -> Any:
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return {
            "statusCode": 200,
            "headers": {"content-type": "application/json"},
            "body": json.dumps(answer),
        }

    return handler


def logged(answer: dict[str, Any], request: dict[str, Any] | bytes, path: str = "/mcp") -> str:
    lines: list[str] = []
    app = LambdaHttpApp(answering(answer), timeout_s=5, access_log=lines.append)
    try:
        body = request if isinstance(request, bytes) else json.dumps(request).encode()
        exchange(app, body, path)
    finally:
        app.close()
    [line] = lines
    return re.sub(r"in \d+ ms$", "in N ms", line)


CALL = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "sparkline", "arguments": {"values": [1], "secret": "hunter2"}},
}


def test_a_call_names_its_tool_and_never_its_arguments() -> None:
    line = logged({"jsonrpc": "2.0", "id": 1, "result": {}}, CALL)
    assert line == "POST tools/call sparkline -> 200 in N ms"


def test_an_error_answer_shows_its_code() -> None:
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "Unknown argument"}}
    assert logged(error, CALL) == "POST tools/call sparkline -> 200 error -32602 in N ms"


@pytest.mark.parametrize(
    ("request_body", "path", "expected"),
    [
        (
            {"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"taskId": "t1"}},
            "/mcp",
            "POST tasks/get t1 -> 200 in N ms",
        ),
        (
            {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
            "/mcp",
            "POST tools/list -> 200 in N ms",
        ),
        (b"not json", "/mcp", "POST (not JSON) -> 200 in N ms"),
        (b"{}", "/elsewhere", "POST /elsewhere -> 404 in N ms"),
    ],
    ids=["task", "list", "not-json", "wrong-path"],
)
def test_other_requests(request_body: Any, path: str, expected: str) -> None:
    assert logged({"jsonrpc": "2.0", "id": 1, "result": {}}, request_body, path) == expected


def test_no_log_unless_asked() -> None:
    app = LambdaHttpApp(answering({}), timeout_s=5)
    assert app.access_log is None
    app.close()
