"""A 2025-11-25 call that may ask the client something (its session declared elicitation,
sampling or roots) needs a client that accepts `text/event-stream`: refused 406 before the tool
runs, rather than after it did its work and parked questions nobody can read."""

from __future__ import annotations

from typing import Any

import pytest

from server.legacy.legacy_tools import effects, hardening_transport
from support.legacy import LegacyClient


def _session(capabilities: dict[str, Any]) -> LegacyClient:
    effects.clear()
    transport, _ = hardening_transport()
    client = LegacyClient(transport)
    client.initialize(capabilities)
    return client


@pytest.mark.parametrize(
    ("method", "name"), [("tools/call", "count_then_ask"), ("prompts/get", "count_then_ask_prompt")]
)
def test_a_call_that_may_ask_is_refused_before_it_runs(method: str, name: str) -> None:
    client = _session({"elicitation": {}})
    response = client.request(method, {"name": name, "arguments": {}}, accept="application/json")
    assert response.status == 406
    assert response.json["error"]["code"] == -32600
    assert "text/event-stream" in response.json["error"]["message"]
    assert effects == []


def test_a_session_that_cannot_be_asked_anything_gets_json() -> None:
    client = _session({})
    response = client.request(
        "tools/call", {"name": "count_once", "arguments": {}}, accept="application/json"
    )
    assert response.status == 200
    assert response.json["result"]["content"][0]["text"] == "counted"
    assert effects == ["counted"]
