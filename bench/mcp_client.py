"""A small MCP 2026-07-28 client over plain HTTP, shared by the task sections.

Speaks what any server of that revision expects: the routing and version headers
(`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`) and the per-request envelope in
`params._meta` (protocol version, client capabilities with the tasks extension). It runs
in the bench's interpreter against any server, ours or another, so both are measured with
the same client code. Only loopback URLs are accepted.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit

from common import PROTOCOL_VERSION

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
TERMINAL = frozenset({"completed", "failed", "cancelled"})
REQUEST_TIMEOUT_S = 15
# Capabilities of a client that opted in to tasks and can answer elicitations.
TASK_CAPABILITIES: dict[str, Any] = {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}

# Never let an environment proxy see loopback traffic.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
# Which param the Mcp-Name header mirrors, per method.
_NAME_PARAM = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}


class McpHttpError(RuntimeError):
    """A transport failure, a non-200 answer or a JSON-RPC error where a result was due."""


class McpHttpClient:
    def __init__(self, url: str, capabilities: dict[str, Any] | None = None) -> None:
        host = urlsplit(url).hostname or ""
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError(f"the bench talks to loopback servers only, not {url}")
        self.url = url
        self.capabilities = TASK_CAPABILITIES if capabilities is None else capabilities
        self._next_id = 0

    def request(
        self, method: str, params: dict[str, Any] | None = None, token: str | None = None
    ) -> dict[str, Any]:
        """Send one request and return its `result` (raises McpHttpError otherwise).

        `token` is sent as a bearer token (the embedded stack tells callers apart by it)."""
        self._next_id += 1
        params = dict(params or {})
        body = {
            "jsonrpc": "2.0",
            "id": self._next_id,
            "method": method,
            "params": {
                **params,
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
                    "io.modelcontextprotocol/clientCapabilities": self.capabilities,
                },
            },
        }
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": PROTOCOL_VERSION,
            "Mcp-Method": method,
        }
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        name_param = _NAME_PARAM.get(method)
        if name_param is not None and name_param in params:
            headers["Mcp-Name"] = str(params[name_param])
        request = urllib.request.Request(
            self.url, data=json.dumps(body).encode(), method="POST", headers=headers
        )
        try:
            with _OPENER.open(request, timeout=REQUEST_TIMEOUT_S) as response:
                status = response.status
                content_type = response.headers.get("content-type", "")
                raw = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode(errors="replace")
            raise McpHttpError(f"{method}: HTTP {exc.code}: {detail}") from exc
        except OSError as exc:
            raise McpHttpError(f"{method}: {exc}") from exc
        if status != 200:
            raise McpHttpError(f"{method}: HTTP {status}")
        message = _message_of(raw, content_type)
        if "result" not in message:
            raise McpHttpError(f"{method}: {json.dumps(message.get('error', message))[:300]}")
        result: dict[str, Any] = message["result"]
        return result

    def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return self.request("tools/call", {"name": name, "arguments": arguments})

    def get_task(self, task_id: str) -> dict[str, Any]:
        return self.request("tasks/get", {"taskId": task_id})

    def wait_for_task(
        self,
        task_id: str,
        until: frozenset[str] | set[str] = TERMINAL,
        *,
        timeout: float = 30.0,
        interval: float = 0.01,
        also: str | None = None,
    ) -> dict[str, Any]:
        """Poll tasks/get until the status is in `until` (and field `also` is present)."""
        deadline = time.monotonic() + timeout
        while True:
            task = self.get_task(task_id)
            if task.get("status") in until and (also is None or also in task):
                return task
            if task.get("status") in TERMINAL:
                raise McpHttpError(f"task {task_id} ended {task.get('status')}: {task}")
            if time.monotonic() > deadline:
                raise McpHttpError(f"task {task_id} still {task.get('status')} after {timeout}s")
            time.sleep(interval)


def _message_of(raw: bytes, content_type: str) -> dict[str, Any]:
    text = raw.decode()
    if content_type.startswith("text/event-stream"):
        data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        messages = [json.loads(d) for d in data if d]
        answers: list[dict[str, Any]] = [
            m for m in messages if isinstance(m, dict) and ("result" in m or "error" in m)
        ]
        if not answers:
            raise McpHttpError(f"no JSON-RPC answer in the event stream: {text[:300]}")
        return answers[-1]
    message = json.loads(text)
    if not isinstance(message, dict):
        raise McpHttpError(f"not a JSON-RPC answer: {text[:300]}")
    return message


def task_id_of(created: dict[str, Any]) -> str:
    """The task id of a CreateTaskResult (and a check that the call did become a task)."""
    if created.get("resultType") != "task" or not created.get("taskId"):
        raise McpHttpError(f"tools/call did not create a task: {json.dumps(created)[:300]}")
    return str(created["taskId"])
