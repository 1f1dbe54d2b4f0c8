"""Issue 19.1: a tool's scopes are checked for the tool that runs, whatever form its name
travels in.

`Mcp-Name` may carry the tool name in the Base64 sentinel (`=?base64?…?=`, SEP-2243); the
transport decodes it and runs the decoded name. A scope check that read the raw header found
no tool called `=?base64?cmVsZWFzZQ==?=`, hence no scope to need, and let `release` run with a
token lacking `deploy`.
"""

from __future__ import annotations

import base64
import re
from typing import Any

from mcp_tasks_aws.protocol.transport import HttpResponse
from support.mcp import McpClient


def sentinel(name: str) -> str:
    return f"=?base64?{base64.b64encode(name.encode()).decode()}?="


def challenge_params(response: HttpResponse) -> dict[str, str]:
    header = response.headers["www-authenticate"]
    assert header.startswith("Bearer ")
    return dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', header))


def call_release(client: McpClient, mcp_name: str) -> HttpResponse:
    return client.call_tool("release", {"service": "api"}, headers={"mcp-name": mcp_name})


def test_a_base64_tool_name_needs_the_tools_scopes(front: Any) -> None:
    response = call_release(McpClient(front("mcp")), sentinel("release"))
    assert response.status == 403, response.body
    params = challenge_params(response)
    assert params["error"] == "insufficient_scope"
    assert params["scope"] == "deploy"


def test_a_base64_tool_name_runs_with_the_scopes(front: Any) -> None:
    response = call_release(McpClient(front("mcp deploy")), sentinel("release"))
    assert response.status == 200, response.body
    assert response.json["result"]["content"][0]["text"] == "released api"


def test_the_plain_name_is_refused_as_before(front: Any) -> None:
    assert call_release(McpClient(front("mcp")), "release").status == 403
