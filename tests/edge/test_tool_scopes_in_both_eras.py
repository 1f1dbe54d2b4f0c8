"""Issue 19.2: a tool's scopes hold for 2025-11-25 clients too, in AuthMode OAUTH and JWT.

A 2025-11-25 client sends no `Mcp-Method` header, so a scope check keyed on it never ran:
a legacy `tools/call release` ran with a token lacking `deploy`. The check now sits where
every era's `tools/call` passes (`InlineRunner.run_call`), on the body's `params.name`, with
the scopes the edge verified travelling with the call; the edge answers a refusal 403 with
`WWW-Authenticate: Bearer error="insufficient_scope", scope="…"` in both eras.
"""

from __future__ import annotations

import re
from typing import Any

from mcp_tasks_aws.protocol.transport import HttpResponse
from support.legacy import LegacyClient, messages, priming_id, questions
from support.mcp import McpClient

METADATA_URL = "https://mcp.example/.well-known/oauth-protected-resource/mcp"  # of RESOURCE


def challenge_params(response: HttpResponse) -> dict[str, str]:
    header = response.headers["www-authenticate"]
    assert header.startswith("Bearer ")
    return dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', header))


def legacy_client(front: Any) -> LegacyClient:
    client = LegacyClient(front)
    client.initialize()
    return client


def release(client: LegacyClient, tool: str = "release") -> HttpResponse:
    return client.request("tools/call", {"name": tool, "arguments": {"service": "api"}})


def test_a_legacy_call_without_the_tools_scope_is_refused_403(front: Any) -> None:
    response = release(legacy_client(front("mcp")))
    assert response.status == 403, response.body
    params = challenge_params(response)
    assert params["error"] == "insufficient_scope"
    assert params["scope"] == "deploy"
    assert "deploy" in params["error_description"]


def test_the_oauth_refusal_says_where_the_metadata_is_in_both_eras(oauth_front: Any) -> None:
    legacy = release(legacy_client(oauth_front("mcp")))
    modern = McpClient(oauth_front("mcp")).call_tool("release", {"service": "api"})
    for response in (legacy, modern):
        assert response.status == 403
        assert challenge_params(response)["resource_metadata"] == METADATA_URL
        assert response.headers["www-authenticate"] == modern.headers["www-authenticate"]


def test_a_legacy_call_with_the_tools_scope_runs(front: Any) -> None:
    client = legacy_client(front("mcp deploy"))
    response = release(client)
    assert response.status == 200, response.body
    assert messages(response)[-1]["result"]["content"][0]["text"] == "released api"


def test_a_tool_without_scopes_needs_none_in_either_era(front: Any) -> None:
    assert legacy_client(front("")).result("tools/call", {"name": "status"})["content"]
    assert McpClient(front("")).tool_result("status")["content"]


def test_the_modern_check_reads_the_body_whatever_the_headers_say(front: Any) -> None:
    # Headers that disagree with the body are refused before anything runs (-32020).
    client = McpClient(front("mcp"))
    response = client.call_tool("release", {"service": "api"}, headers={"mcp-name": "status"})
    assert response.status == 400
    assert client.error(response)["code"] == -32020


def test_a_resumed_legacy_call_is_checked_with_the_resuming_token(front: Any) -> None:
    """A call parked on a question reruns when its stream is resumed: the token that resumes
    it must grant the tool's scopes too (it may be a narrower one than the first)."""
    asked = legacy_client(front("mcp deploy"))
    first = release(asked, "approved_release")
    [question] = questions(first)
    assert asked.answer(question["id"], {"action": "accept", "content": {"approve": True}}).status
    narrower = LegacyClient(front("mcp"))
    narrower.session_id, narrower.version = asked.session_id, asked.version
    resumed = messages(narrower.resume(priming_id(first)))
    assert "result" not in resumed[-1], resumed[-1]
    assert "deploy" in resumed[-1]["error"]["message"]
