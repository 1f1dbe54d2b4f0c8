"""2025-11-25 inline calls, and the runs that resume them, stop at the request's deadline with
the isError answer 2026-07-28 gives ("did not finish in time"), instead of dying with the
function; a call stopped so is over: no reconnect runs it again.

A deadline already past when the run starts is how these tests reach it without waiting: the
run's time limit stops it at once, exactly as it would mid-run.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from mcp_tasks_aws.protocol.legacy import LegacySession
from mcp_tasks_aws.protocol.sealing import Sealer
from mcp_tasks_aws.server.legacy.questions import InlineQuestions, Resumable, StreamIds
from mcp_tasks_aws.server.legacy.sessions import InMemoryLegacySessionStore, ParkedCall
from server.legacy.legacy_tools import (
    NAME,
    as_transport,
    effects,
    hardening_transport,
    with_deadline,
)
from support.legacy import LegacyClient, messages, priming_id, questions


@pytest.fixture
def timed() -> tuple[LegacyClient, Any]:
    effects.clear()
    transport, _ = hardening_transport()
    deadlined = with_deadline(transport)
    client = LegacyClient(as_transport(deadlined))
    client.initialize()
    return client, deadlined


def _out_of_time(message: dict[str, Any], tool: str) -> None:
    result = message["result"]
    assert result["isError"] is True
    assert result["content"][0]["text"].startswith(f"Tool {tool} did not finish in time")


def test_an_inline_call_stops_at_its_deadline_with_the_is_error_answer(
    timed: tuple[LegacyClient, Any],
) -> None:
    client, deadlined = timed
    deadlined.deadline = time.monotonic() - 1
    response = client.request("tools/call", {"name": "count_once", "arguments": {}})
    assert response.status == 200
    [message] = messages(response)
    _out_of_time(message, "count_once")
    assert effects == []


def test_a_resumed_run_stops_at_its_deadline_and_the_call_is_over(
    timed: tuple[LegacyClient, Any],
) -> None:
    client, deadlined = timed
    asked = client.request("tools/call", {"name": "greet_once", "arguments": {}})
    [question] = questions(asked)
    assert client.answer(question["id"], NAME).status == 202
    deadlined.deadline = time.monotonic() - 1  # the resuming GET has no time left
    resumed = messages(client.resume(priming_id(asked)))
    _out_of_time(resumed[-1], "greet_once")
    # Nothing is left parked to run again: a reconnect does not re-run the tool.
    deadlined.deadline = None
    again = client.resume(priming_id(asked))
    assert all("result" not in m or m["result"].get("isError") for m in messages(again))
    assert effects == []


def test_the_wait_for_answers_leaves_half_the_requests_time_to_the_run() -> None:
    sessions = InMemoryLegacySessionStore()
    session = LegacySession("sid", "2025-11-25", {}, "caller", int(time.time()) + 3600)
    call = ParkedCall(
        ref="call",
        sid=session.sid,
        request_id=1,
        method="tools/call",
        params={"name": "greet_once", "arguments": {}, "_meta": {}},
        request_state=None,
        asked={"name": {"method": "elicitation/create", "params": {}}},
        round=0,
        expires_at=session.expires_at,
    )
    sessions.park(call)
    now = [100.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    questions_ = InlineQuestions(
        sessions,
        StreamIds(Sealer(b"k" * 32, "test")),
        window_ms=20_000,
        poll_ms=500,
        clock=lambda: now[0],
        sleep=sleep,
    )
    resumable = Resumable(session, "caller", deadline=now[0] + 10)

    def rerun(resumable: Resumable, request: Any) -> Any:
        raise AssertionError("nothing was answered")

    events = list(questions_.resume(resumable, {"c": call.ref, "n": 0}, rerun))
    assert len(events) == 1  # the priming event: the client comes back
    assert now[0] == pytest.approx(105.0)  # 5 s of the 10 s left, not the 20 s window
