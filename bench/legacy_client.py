"""A small MCP 2025-11-25 client over plain HTTP, for the sections that measure legacy tasks.

It does what any client of that revision does: `initialize` (the session id comes back in
`Mcp-Session-Id`), then every request with that id and the negotiated `MCP-Protocol-Version`;
a task-augmented `tools/call` (`params.task`), `tasks/get`, `tasks/list`, `tasks/cancel`,
`tasks/result` (reading an SSE answer), and the answer to a server->client request. Only
loopback URLs are accepted.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit

from mcp_client import TERMINAL, McpHttpError

LEGACY_VERSION = "2025-11-25"
REQUEST_TIMEOUT_S = 30
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class LegacyHttpClient:
    def __init__(self, url: str) -> None:
        host = urlsplit(url).hostname or ""
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError(f"the bench talks to loopback servers only, not {url}")
        self.url = url
        self.session_id: str | None = None
        self._next_id = 0

    def _send(self, body: dict[str, Any]) -> tuple[int, dict[str, str], str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **({"Mcp-Session-Id": self.session_id} if self.session_id else {}),
            **({"MCP-Protocol-Version": LEGACY_VERSION} if self.session_id else {}),
        }
        data = json.dumps(body).encode()
        request = urllib.request.Request(self.url, data=data, method="POST", headers=headers)
        try:
            with _OPENER.open(request, timeout=REQUEST_TIMEOUT_S) as response:
                answer = {k.lower(): v for k, v in response.headers.items()}
                return response.status, answer, response.read().decode()
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode(errors="replace")
            raise McpHttpError(f"{body.get('method')}: HTTP {exc.code}: {detail}") from exc
        except OSError as exc:
            raise McpHttpError(f"{body.get('method')}: {exc}") from exc

    def initialize(self) -> dict[str, Any]:
        self.session_id = None
        params = {
            "protocolVersion": LEGACY_VERSION,
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "bench", "version": "1"},
        }
        _, headers, text = self._send(
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
        )
        self.session_id = headers.get("mcp-session-id")
        if not self.session_id:
            raise McpHttpError("initialize: no Mcp-Session-Id")
        result: dict[str, Any] = json.loads(text)["result"]
        return result

    def initialized(self) -> None:
        """The notification that ends the handshake."""
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def connect(self) -> dict[str, Any]:
        result = self.initialize()
        self.initialized()
        return result

    def messages(self, method: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """One request's answer: its JSON-RPC messages (JSON, or the events of a stream)."""
        self._next_id += 1
        body = {"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params or {}}
        _, headers, text = self._send(body)
        return parse(text, headers.get("content-type", ""))

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The `result` of a request (McpHttpError on a JSON-RPC error); server->client
        requests on its stream are left out (`messages` has them)."""
        answer = self.messages(method, params)[-1]
        if "result" not in answer:
            raise McpHttpError(f"{method}: {json.dumps(answer)[:300]}")
        result: dict[str, Any] = answer["result"]
        return result

    def create_task(self, name: str, arguments: dict[str, Any]) -> str:
        created = self.request("tools/call", {"name": name, "arguments": arguments, "task": {}})
        task = created.get("task") or {}
        if not task.get("taskId"):
            raise McpHttpError(f"tools/call did not create a task: {json.dumps(created)[:300]}")
        return str(task["taskId"])

    def get_task(self, task_id: str) -> dict[str, Any]:
        return self.request("tasks/get", {"taskId": task_id})

    def wait_for_task(
        self, task_id: str, until: frozenset[str] | set[str] = TERMINAL, *, timeout: float = 30.0
    ) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            task = self.get_task(task_id)
            if task.get("status") in until:
                return task
            if task.get("status") in TERMINAL or time.monotonic() > deadline:
                raise McpHttpError(f"task {task_id} is {task.get('status')}, not {sorted(until)}")
            time.sleep(0.01)

    def answer(self, request_id: Any, result: dict[str, Any]) -> int:
        status, _, _ = self._send({"jsonrpc": "2.0", "id": request_id, "result": result})
        return status


def parse(text: str, content_type: str) -> list[dict[str, Any]]:
    if not content_type.startswith("text/event-stream"):
        return [json.loads(text)]
    data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    return [json.loads(d) for d in data if d]
