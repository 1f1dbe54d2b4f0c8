"""A 2025-11-25 inline call streams live on a streaming host (`make run`, either door; the
`STREAMING` door deployed), timed by the client as `test_front_doors` times 2026-07-28:

- the POST's stream starts with its priming event (SEP-1699: the id it resumes from), then
  each progress notification as the tool makes it, then the result;
- a call that asks sends its question on that stream when the tool asks, after progress that
  arrived as it was made; the resumed stream (`GET` with `Last-Event-ID`) then carries the
  rest of the run's progress as it is made, and the result.

Before, the progress of a 2025-11-25 inline call came with its result (or its question).
"""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_tasks_aws.local.stack import EmbeddedStack

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")
VERSION = "2025-11-25"
STEPS, SECONDS_PER_STEP = 2, 0.5
MARGIN_S = 0.3
"""How late an event may arrive after it was made (a loaded machine), well under a step."""

Event = tuple[float, dict[str, Any]]
"""(seconds since the request was sent, the SSE event's fields: id, retry, data)."""


@pytest.fixture(scope="module", params=["buffered", "streaming"])
def stack(request: pytest.FixtureRequest) -> Iterator[EmbeddedStack]:
    env = {
        "MCP_TASKS_FRONT_DOOR": request.param,
        "MCP_TASKS_TOOLS": "support.paced_tools",
        "MCP_TASKS_LISTEN_POLL_MS": "50",
    }
    with EmbeddedStack(env=env, sweep_interval_s=None) as running:
        yield running


class Session:
    """A 2025-11-25 session over real HTTP, reading each answer as it arrives."""

    def __init__(self, stack: EmbeddedStack) -> None:
        self.stack = stack
        self.session_id = ""
        self.next_id = 0
        capabilities = {"elicitation": {}}
        answer = self.send(
            "POST",
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": VERSION,
                    "capabilities": capabilities,
                    "clientInfo": {"name": "live-test", "version": "0"},
                },
            },
        )
        self.session_id = answer.getheader("mcp-session-id") or ""
        answer.read()
        assert self.session_id
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert self.send("POST", initialized).status == 202

    def send(
        self, verb: str, message: dict[str, Any] | None, **headers: str
    ) -> http.client.HTTPResponse:
        all_headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            **headers,
        }
        if self.session_id:
            all_headers.update({"mcp-session-id": self.session_id, "mcp-protocol-version": VERSION})
        conn = http.client.HTTPConnection(self.stack.host, self.stack.port, timeout=30)
        body = json.dumps(message) if message is not None else None
        conn.request(verb, "/mcp", body, all_headers)
        return conn.getresponse()

    def call(self, tool: str, arguments: dict[str, Any]) -> list[Event]:
        self.next_id += 1
        params = {"name": tool, "arguments": arguments, "_meta": {"progressToken": "p"}}
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call", "params": params}
        started = time.monotonic()
        response = self.send("POST", message)
        assert response.status == 200
        assert response.getheader("content-type", "").startswith("text/event-stream")
        return list(events(response, started))

    def answer(self, request_id: Any, result: dict[str, Any]) -> None:
        response = self.send("POST", {"jsonrpc": "2.0", "id": request_id, "result": result})
        response.read()
        assert response.status == 202

    def resume(self, last_event_id: str) -> list[Event]:
        started = time.monotonic()
        response = self.send("GET", None, **{"last-event-id": last_event_id})
        assert response.status == 200
        return list(events(response, started))


def events(response: http.client.HTTPResponse, started: float) -> Iterator[Event]:
    """Each SSE event as it arrives (comments skipped)."""
    fields: dict[str, Any] = {}
    while line := response.readline():
        text = line.decode().rstrip("\r\n")
        if not text:
            if fields:
                yield time.monotonic() - started, fields
            fields = {}
            continue
        name, _, value = text.partition(":")
        value = value.removeprefix(" ")
        if name == "data" and value.strip():
            fields["data"] = json.loads(value)
        elif name in ("id", "retry"):
            fields[name] = value


def progress_times(arrived: list[Event]) -> list[float]:
    return [at for at, e in arrived if e.get("data", {}).get("method") == "notifications/progress"]


def assert_each_arrived_as_made(progress: list[float], end: float) -> None:
    """Progress made at the start of each of the steps that end at `end` arrived then, each
    step earlier than the event that follows the last step."""
    assert len(progress) == STEPS
    for index, at in enumerate(progress):
        assert at < end - (STEPS - index) * SECONDS_PER_STEP + MARGIN_S, (index, progress)


def test_the_priming_event_then_each_progress_as_it_is_made_then_the_result(
    stack: EmbeddedStack,
) -> None:
    session = Session(stack)
    arrived = session.call("paced", {"steps": STEPS, "seconds_per_step": SECONDS_PER_STEP})
    first_at, first = arrived[0]
    assert "data" not in first  # the priming event: an id to resume from, a retry delay
    assert first["id"]
    assert int(first["retry"]) > 0
    (done,) = [at for at, e in arrived if "result" in e.get("data", {})]
    assert arrived[-1][1]["data"]["result"]["content"][0]["text"] == f"{STEPS} steps done"
    progress = progress_times(arrived)
    assert first_at <= progress[0] < MARGIN_S
    # The tool reports step i at i * 0.5 s and ends at 1 s: each report before the result.
    assert_each_arrived_as_made(progress, done)


def test_a_question_arrives_when_asked_and_the_resumed_stream_is_live_too(
    stack: EmbeddedStack,
) -> None:
    session = Session(stack)
    arguments = {"steps": STEPS, "seconds_per_step": SECONDS_PER_STEP}
    arrived = session.call("paced_question", arguments)
    _, priming = arrived[0]
    assert "data" not in priming
    assert priming["id"]
    # One priming event: the call's question goes on the stream it opened.
    assert [e for _, e in arrived if "data" not in e] == [priming]
    [(asked_at, question)] = [
        (at, e["data"]) for at, e in arrived if "id" in e.get("data", {}) and "method" in e["data"]
    ]
    assert question["method"] == "elicitation/create"
    assert asked_at >= STEPS * SECONDS_PER_STEP - 0.05  # asked after the first stretch
    assert_each_arrived_as_made(progress_times(arrived), asked_at)
    assert all("result" not in e.get("data", {}) for _, e in arrived)

    session.answer(question["id"], {"action": "accept", "content": {"ok": True}})
    resumed = session.resume(priming["id"])
    (done,) = [at for at, e in resumed if "result" in e.get("data", {})]
    assert resumed[-1][1]["data"]["result"]["content"][0]["text"] == f"{2 * STEPS} steps done"
    assert_each_arrived_as_made(progress_times(resumed), done)
