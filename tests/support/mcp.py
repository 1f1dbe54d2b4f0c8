"""Request envelopes and an MCP client over the real transport (2026-07-28), the conformance
settings, and an embedded stack configured by its environment."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

from mcp_tasks_aws.config import Settings
from mcp_tasks_aws.local.stack import EmbeddedStack
from mcp_tasks_aws.protocol.transport import HttpRequest, HttpResponse, HttpTransport

PROTOCOL_VERSION = "2026-07-28"
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
ALL_INPUT_CAPABILITIES: dict[str, Any] = {"elicitation": {}, "sampling": {}, "roots": {}}
ALLOWED_ORIGIN = "http://localhost:8000"
SECRET = b"x" * 32

# Which param a method's Mcp-Name header mirrors.
_NAME_PARAM = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
_UNSET: Any = object()


def envelope(
    capabilities: dict[str, Any] | None = None,
    *,
    version: str = PROTOCOL_VERSION,
    log_level: str | None = None,
) -> dict[str, Any]:
    """A valid `params._meta` for one request."""
    meta: dict[str, Any] = {
        VERSION_KEY: version,
        CAPABILITIES_KEY: ALL_INPUT_CAPABILITIES if capabilities is None else capabilities,
    }
    if log_level is not None:
        meta[LOG_LEVEL_KEY] = log_level
    return meta


class McpClient:
    """Sends JSON-RPC requests through an `HttpTransport`, as an HTTP client would."""

    def __init__(self, transport: HttpTransport) -> None:
        self.transport = transport

    def send(
        self,
        body: bytes | dict[str, Any] | list[Any],
        *,
        http_method: str = "POST",
        headers: dict[str, str | None] | None = None,
        principal: str = "anonymous",
    ) -> HttpResponse:
        """POST a raw body with default content headers (a None header value removes it)."""
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        merged: dict[str, str | None] = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
        }
        merged.update({k.lower(): v for k, v in (headers or {}).items()})
        final = {k: v for k, v in merged.items() if v is not None}
        return self.transport.handle(HttpRequest(http_method, final, raw, principal))

    def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        rid: int | str = 1,
        meta: dict[str, Any] | None = _UNSET,
        capabilities: dict[str, Any] | None = None,
        version: str = PROTOCOL_VERSION,
        log_level: str | None = None,
        headers: dict[str, str | None] | None = None,
        principal: str = "anonymous",
    ) -> HttpResponse:
        """A well-formed request: envelope and matching headers unless overridden."""
        body_params = dict(params or {})
        if meta is _UNSET:
            body_params["_meta"] = envelope(capabilities, version=version, log_level=log_level)
        elif meta is not None:
            body_params["_meta"] = meta
        routing: dict[str, str | None] = {
            "mcp-method": method,
            "mcp-protocol-version": version,
        }
        name_param = _NAME_PARAM.get(method)
        if name_param is not None and isinstance(body_params.get(name_param), str):
            routing["mcp-name"] = body_params[name_param]
        routing.update({k.lower(): v for k, v in (headers or {}).items()})
        message = {"jsonrpc": "2.0", "id": rid, "method": method, "params": body_params}
        return self.send(message, headers=routing, principal=principal)

    def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, **kwargs: Any
    ) -> HttpResponse:
        extra = kwargs.pop("extra_params", {})
        params = {"name": name, "arguments": arguments or {}, **extra}
        return self.request("tools/call", params, **kwargs)

    def result(self, method: str, params: dict[str, Any] | None = None, **kwargs: Any) -> Any:
        """The `result` of a request that must succeed with HTTP 200 and JSON."""
        response = self.request(method, params, **kwargs)
        assert response.status == 200, response.body
        message = response.json
        assert "error" not in message, message
        return message["result"]

    def tool_result(self, name: str, arguments: dict[str, Any] | None = None, **kwargs: Any) -> Any:
        extra = kwargs.pop("extra_params", {})
        return self.result(
            "tools/call", {"name": name, "arguments": arguments or {}, **extra}, **kwargs
        )

    def error(self, response: HttpResponse) -> dict[str, Any]:
        message = response.json
        assert "result" not in message, message
        error: dict[str, Any] = message["error"]
        return error


def conformance_settings(**overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "tools_module": "conformance",
        "state_secret": SECRET,
        "allowed_origins": frozenset({ALLOWED_ORIGIN}),
    }
    values.update(overrides)
    return Settings(**values)


@contextlib.contextmanager
def running_stack(**env: str) -> Iterator[EmbeddedStack]:
    """An embedded stack configured by `env` alone (MCP_TASKS_* variables), stopped after."""
    with EmbeddedStack(env=env) as running:
        yield running
