"""A 2025-11-25 inline call on a host whose answers stream (`HttpRequest.streaming`), through
the real transport: what its stream starts with, and what stays as it was buffered.
(`tests/local/test_legacy_live_progress.py` times the same streams over HTTP.)"""

from __future__ import annotations

from dataclasses import replace

import pytest

from mcp_tasks_aws.protocol.transport import HttpRequest, HttpResponse, HttpTransport
from mcp_tasks_aws.server import live
from support.legacy import LegacyClient, messages, sse_events


class StreamingHost:
    """The transport as a streaming host drives it (`make run`, the `STREAMING` door)."""

    def __init__(self, transport: HttpTransport) -> None:
        self.transport = transport

    def handle(self, http: HttpRequest) -> HttpResponse:
        return self.transport.handle(replace(http, streaming=True))


@pytest.fixture
def streamed(transport: HttpTransport) -> LegacyClient:
    client = LegacyClient(StreamingHost(transport))  # type: ignore[arg-type]
    client.initialize()
    return client


def test_a_call_that_makes_no_notification_is_answered_as_when_buffered(
    streamed: LegacyClient,
) -> None:
    response = streamed.request("tools/call", {"name": "test_simple_text", "arguments": {}})
    assert response.status == 200
    assert response.headers["content-type"] == "application/json"
    assert response.stream is None
    assert "result" in response.json


def test_the_stream_starts_with_the_priming_event_then_progress_then_the_result(
    streamed: LegacyClient,
) -> None:
    params = {"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": 7}}
    response = streamed.request("tools/call", params)
    assert response.stream is not None  # written as it is made
    events = sse_events(response)
    assert "data" not in events[0]
    assert events[0]["id"]
    assert events[0]["retry"] > 0
    kinds = [m.get("method", "result" if "result" in m else "?") for m in messages(response)]
    assert kinds == [*["notifications/progress"] * 3, "result"]


def test_a_silent_run_starts_its_stream_with_the_priming_event_not_a_comment(
    streamed: LegacyClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live, "FIRST_BYTE_S", 0.05)
    # No progressToken: 0.6 s without a notification, past the first-byte wait.
    arguments = {"seconds": 0.6, "label": "quiet"}
    response = streamed.request("tools/call", {"name": "slow_compute", "arguments": arguments})
    assert response.stream is not None
    assert not response.read_all().startswith(b":")
    events = sse_events(response)
    assert "data" not in events[0]
    assert events[0]["id"]
    assert [e["data"]["result"]["content"][0]["text"] for e in events[1:]] == [
        "Computed quiet after 0.6s."
    ]
