"""A 2025-11-25 client over the real transport, and reading its SSE answers, for the dual-era
tests (the 2025-11-25 schema is `support.schemas.LEGACY_MCP`)."""

from __future__ import annotations

import json
import re
from typing import Any

from mcp_tasks_aws.app import build_transport
from mcp_tasks_aws.protocol.transport import HttpResponse, HttpTransport
from support.mcp import SECRET, McpClient, conformance_settings

LEGACY_VERSION = "2025-11-25"
ALL_CAPABILITIES: dict[str, Any] = {"elicitation": {}, "sampling": {}, "roots": {}}

MODERN_ONLY = {"resultType", "ttlMs", "cacheScope"}
"""2026-07-28 fields a legacy answer must not carry (the schema lets results carry extras)."""


def legacy_transport(**settings: Any) -> HttpTransport:
    """The conformance tools, both eras, with short resume windows (tests wait on them)."""
    values: dict[str, Any] = {"listen_window_ms": 300, "listen_poll_ms": 20}
    values.update(settings)
    return build_transport(conformance_settings(**values))


def sse_events(response: HttpResponse) -> list[dict[str, Any]]:
    """Each SSE event of a body as {id?, retry?, data?} (data parsed as JSON)."""
    events = []
    for block in response.read_all().decode().split("\n\n"):
        if not block.strip():
            continue
        event: dict[str, Any] = {}
        for line in block.split("\n"):
            field, _, value = line.partition(": ")
            if field == "id":
                event["id"] = value
            elif field == "retry":
                event["retry"] = int(value)
            elif field == "data" and value.strip():
                event["data"] = json.loads(value)
        events.append(event)
    return events


def messages(response: HttpResponse) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a response, JSON or SSE."""
    if response.headers.get("content-type") == "application/json":
        return [response.json]
    return [e["data"] for e in sse_events(response) if "data" in e]


class LegacyClient:
    """Speaks 2025-11-25 to an `HttpTransport`: a session id and its version on each request."""

    def __init__(self, transport: HttpTransport, principal: str = "anonymous") -> None:
        self.http = McpClient(transport)
        self.principal = principal
        self.session_id: str | None = None
        self.version = LEGACY_VERSION
        self._next_id = 0

    def initialize(
        self,
        capabilities: dict[str, Any] | None = None,
        version: str = LEGACY_VERSION,
    ) -> dict[str, Any]:
        response = self.http.send(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": version,
                    "capabilities": ALL_CAPABILITIES if capabilities is None else capabilities,
                    "clientInfo": {"name": "legacy-test", "version": "1.0.0"},
                },
            },
            principal=self.principal,
        )
        assert response.status == 200, response.body
        self.session_id = response.headers["mcp-session-id"]
        result: dict[str, Any] = response.json["result"]
        self.version = result["protocolVersion"]
        assert self.notify("notifications/initialized").status == 202
        return result

    def headers(self, **extra: str | None) -> dict[str, str | None]:
        extra = {k.replace("_", "-"): v for k, v in extra.items()}
        headers: dict[str, str | None] = {
            "mcp-session-id": self.session_id,
            "mcp-protocol-version": self.version,
        }
        headers.update(extra)
        return headers

    def send(self, message: Any, **headers: str | None) -> HttpResponse:
        return self.http.send(message, headers=self.headers(**headers), principal=self.principal)

    def request(
        self, method: str, params: dict[str, Any] | None = None, **headers: Any
    ) -> HttpResponse:
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            message["params"] = params
        return self.send(message, **headers)

    def result(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The result of a request that must succeed (the last message of its response)."""
        response = self.request(method, params)
        assert response.status == 200, response.body
        final = messages(response)[-1]
        assert "error" not in final, final
        result: dict[str, Any] = final["result"]
        return result

    def notify(self, method: str, params: dict[str, Any] | None = None) -> HttpResponse:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        return self.send(message)

    def answer(self, request_id: Any, result: Any = None, error: Any = None) -> HttpResponse:
        """POST the client's response to a server->client request."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        if error is not None:
            message["error"] = error
        else:
            message["result"] = result
        return self.send(message)

    def resume(self, last_event_id: str, **headers: str | None) -> HttpResponse:
        return self.http.send(
            b"",
            http_method="GET",
            headers={
                "accept": "text/event-stream",
                **self.headers(**headers),
                "last-event-id": last_event_id,
            },
            principal=self.principal,
        )

    def delete(self) -> HttpResponse:
        return self.http.send(
            b"", http_method="DELETE", headers=self.headers(), principal=self.principal
        )


def priming_id(response: HttpResponse) -> str:
    """The id of a stream's priming event (the first event, data-less, with an id)."""
    first = sse_events(response)[0]
    assert "data" not in first, first
    assert "id" in first, first
    return str(first["id"])


def last_event_id(response: HttpResponse) -> str:
    """The id a client resumes from: the last event id the stream carried."""
    ids = [e["id"] for e in sse_events(response) if "id" in e]
    assert ids, response.body
    return str(ids[-1])


def questions(response: HttpResponse) -> list[dict[str, Any]]:
    """The server->client requests on a stream."""
    return [m for m in messages(response) if "method" in m and "id" in m]


def visible_ascii(text: str) -> bool:
    return re.fullmatch(r"[\x21-\x7e]+", text) is not None


def task_transport(service: Any, toolset: Any, **options: Any) -> HttpTransport:
    """Both eras over `service` (a `TaskService`, usually a test domain's in-memory one), with
    the 2025-11-25 tasks utility for its sessions and short windows (300 ms, polled every 20 ms);
    `page_size` pages `tasks/list` only; `sessions` is the session store (a fresh in-memory
    one by default)."""
    from mcp_tasks_aws.protocol.request_state import RequestStateCodec
    from mcp_tasks_aws.server.legacy.endpoint import install_legacy
    from mcp_tasks_aws.server.legacy.sessions import InMemoryLegacySessionStore
    from mcp_tasks_aws.server.methods import SUPPORTED_VERSIONS, McpServer
    from mcp_tasks_aws.server.tasks import TasksEndpoint

    values: dict[str, Any] = {"window_ms": 300, "poll_ms": 20, "page_size": 50}
    sessions = options.pop("sessions", None) or InMemoryLegacySessionStore()
    values.update(options)
    server = McpServer(toolset, state_codec=RequestStateCodec(SECRET), tasks=TasksEndpoint(service))
    gate = install_legacy(server, secret=SECRET, sessions=sessions, tasks=service, **values)
    return HttpTransport(server, supported_versions=SUPPORTED_VERSIONS, legacy=gate)
