"""Two GETs with the same `Last-Event-ID`: only one runs the call's round again (it claims it in
the session store), so a side effect after the question happens once per call; the other waits
for the outcome, or sends the next round's questions when the call asked again."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Any

from mcp_tasks_aws.protocol.legacy import LegacySession
from mcp_tasks_aws.protocol.sealing import Sealer
from mcp_tasks_aws.server.legacy.questions import InlineQuestions, Resumable, StreamIds
from mcp_tasks_aws.server.legacy.sessions import InMemoryLegacySessionStore, ParkedCall
from server.legacy.legacy_tools import NAME, after_question, effects, hardening_transport
from support.legacy import LegacyClient, messages, priming_id, questions, sse_events

ELICIT = {"method": "elicitation/create", "params": {"message": "Color?", "requestedSchema": {}}}


def test_a_second_resume_of_the_same_round_does_not_run_it_again() -> None:
    effects.clear()
    transport, _ = hardening_transport()
    client = LegacyClient(transport)
    client.initialize()
    asked = client.request("tools/call", {"name": "greet_once", "arguments": {}})
    [question] = questions(asked)
    client.answer(question["id"], NAME)
    event_id = priming_id(asked)
    second: dict[str, Any] = {}

    def resume_meanwhile() -> None:
        # The first resume is running the tool (after its answer, before its side effect):
        # another GET with the same Last-Event-ID arrives now, on another function.
        def other_function() -> None:
            second["response"] = client.resume(event_id)
            second["response"].read_all()

        thread = threading.Thread(target=other_function)
        thread.start()
        thread.join()

    after_question.append(resume_meanwhile)
    first = messages(client.resume(event_id))
    assert effects == ["greeted Alice"]  # once, though two resumes found the call ready
    assert first[-1]["result"]["content"][0]["text"] == "Hello, Alice!"
    # The other stream ran nothing: its window ended with the priming event alone.
    assert all("data" not in event for event in sse_events(second["response"]))


def test_a_resume_that_lost_the_round_sends_the_next_rounds_questions() -> None:
    sessions = InMemoryLegacySessionStore()
    session = LegacySession("sid", "2025-11-25", {}, "caller", int(time.time()) + 3600)
    call = ParkedCall(
        ref="call",
        sid=session.sid,
        request_id=1,
        method="tools/call",
        params={"name": "two_rounds", "arguments": {}, "_meta": {}},
        request_state=None,
        asked={"name": ELICIT},
        round=0,
        expires_at=session.expires_at,
    )
    sessions.park(call)
    sessions.answer(call.ref, "name", {"action": "accept", "content": {}})
    assert sessions.claim(call.ref, 0, int(time.time()) + 60)  # another resume runs round 0
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds
        # ... and asks the next round's question meanwhile.
        sessions.park(replace(call, round=1, asked={"color": ELICIT}), previous_round=0)

    ids = StreamIds(Sealer(b"k" * 32, "test"))
    inline = InlineQuestions(
        sessions, ids, window_ms=20_000, poll_ms=500, clock=lambda: now[0], sleep=sleep
    )

    def rerun(resumable: Resumable, request: Any) -> Any:
        raise AssertionError("the round is another resume's to run")

    events = list(inline.resume(Resumable(session, "caller"), {"c": call.ref, "n": 0}, rerun))
    moved = [e for e in events if e.data is None]
    assert len(moved) == 2  # this stream's position, then the next round's
    assert ids.open_event_id(session, str(moved[-1].event_id))[1] == {"c": "call", "n": 1}
    [asked] = [e.data for e in events if e.data is not None]
    assert asked["method"] == "elicitation/create"
