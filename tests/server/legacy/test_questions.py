"""Inline questions in a legacy session: asked as server->client requests on the POST's stream,
answered by separate POSTs routed by their sealed ids, resumed with `GET` + `Last-Event-ID`.

The transport is the real one, with short resume windows (300 ms, polled every 20 ms).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from mcp_tasks_aws.protocol.era import Era
from mcp_tasks_aws.protocol.legacy import LegacySession
from mcp_tasks_aws.protocol.sealing import Sealer
from mcp_tasks_aws.protocol.transport import HttpResponse, HttpTransport
from mcp_tasks_aws.server.legacy.questions import InlineQuestions, Resumable, StreamIds
from mcp_tasks_aws.server.legacy.sessions import InMemoryLegacySessionStore, ParkedCall
from support.legacy import LegacyClient, last_event_id, messages, priming_id, questions, sse_events

NAME = {"action": "accept", "content": {"name": "Alice"}}


def ask(legacy: LegacyClient, tool: str, arguments: dict[str, Any] | None = None) -> HttpResponse:
    response = legacy.request("tools/call", {"name": tool, "arguments": arguments or {}})
    assert response.status == 200, response.body
    assert response.headers["content-type"] == "text/event-stream"
    return response


def final(response: HttpResponse) -> dict[str, Any]:
    """The response message a stream ends with."""
    last = messages(response)[-1]
    assert "method" not in last, last
    return last


def test_a_question_goes_out_on_the_stream_after_a_priming_event(legacy: LegacyClient) -> None:
    response = ask(legacy, "test_input_required_result_elicitation")
    events = sse_events(response)
    assert "data" not in events[0]
    assert events[0]["id"]
    assert events[0]["retry"] > 0
    [question] = questions(response)
    assert question["method"] == "elicitation/create"
    assert question["params"]["message"] == "What is your name?"
    assert isinstance(question["id"], str)
    # The stream ends without the call's response: the client resumes for it.
    assert all("result" not in m and "error" not in m for m in messages(response))


def test_the_answer_then_a_resume_completes_the_call(legacy: LegacyClient) -> None:
    response = ask(legacy, "test_input_required_result_elicitation")
    [question] = questions(response)
    assert legacy.answer(question["id"], NAME).status == 202
    resumed = legacy.resume(priming_id(response))
    assert resumed.status == 200
    assert resumed.headers["content-type"] == "text/event-stream"
    done = final(resumed)
    assert done["id"] == legacy._next_id  # the original tools/call's id
    assert done["result"] == {"content": [{"type": "text", "text": "Hello, Alice!"}]}


def test_a_resume_that_comes_first_waits_for_the_answer_within_its_window(
    legacy: LegacyClient,
) -> None:
    response = ask(legacy, "test_input_required_result_elicitation")
    [question] = questions(response)
    early = legacy.resume(priming_id(response))
    # The window ended with nothing to send: the priming event alone, the same position.
    assert [e.get("id") for e in sse_events(early)] == [priming_id(response)]
    legacy.answer(question["id"], NAME)
    assert (
        final(legacy.resume(priming_id(early)))["result"]["content"][0]["text"] == "Hello, Alice!"
    )


def test_sampling_and_roots_questions_are_answered_the_same_way(legacy: LegacyClient) -> None:
    response = ask(legacy, "test_input_required_result_multiple_inputs")
    answers = {
        "elicitation/create": NAME,
        "sampling/createMessage": {
            "role": "assistant",
            "content": {"type": "text", "text": "Hi!"},
            "model": "m",
        },
        "roots/list": {"roots": [{"uri": "file:///work"}]},
    }
    asked = questions(response)
    assert sorted(q["method"] for q in asked) == sorted(answers)
    for question in asked:
        assert legacy.answer(question["id"], answers[question["method"]]).status == 202
    done = final(legacy.resume(priming_id(response)))
    assert "result" in done
    assert not done["result"].get("isError")


def test_a_call_over_several_rounds_resumes_round_by_round(legacy: LegacyClient) -> None:
    response = ask(legacy, "test_input_required_result_multi_round")
    [first] = questions(response)
    legacy.answer(first["id"], NAME)
    second_round = legacy.resume(priming_id(response))
    [second] = questions(second_round)
    assert second["params"]["message"] == "Step 2: What is your favorite color?"
    # The new round has its own position: the client resumes from the latest event id.
    assert last_event_id(second_round) != priming_id(response)
    legacy.answer(second["id"], {"action": "accept", "content": {"color": "blue"}})
    done = final(legacy.resume(last_event_id(second_round)))
    assert "result" in done


def test_a_prompt_asks_the_same_way(legacy: LegacyClient) -> None:
    response = legacy.request("prompts/get", {"name": "test_input_required_result_prompt"})
    [question] = questions(response)
    legacy.answer(question["id"], {"action": "accept", "content": {"context": "docs"}})
    done = final(legacy.resume(priming_id(response)))
    assert done["result"]["messages"][0]["content"]["text"] == "Use this context: docs"
    assert "resultType" not in done["result"]


def test_logs_of_the_first_round_go_before_the_questions(legacy: LegacyClient) -> None:
    legacy.result("logging/setLevel", {"level": "debug"})
    response = ask(legacy, "test_input_required_result_elicitation")
    kinds = [m.get("method") for m in messages(response)]
    assert kinds[-1] == "elicitation/create"


def test_a_finished_stream_resumed_again_reads_the_same_answer(legacy: LegacyClient) -> None:
    response = ask(legacy, "test_input_required_result_elicitation")
    [question] = questions(response)
    legacy.answer(question["id"], NAME)
    done = final(legacy.resume(priming_id(response)))
    assert "result" in done
    # The stream that carried it may have been lost: for a while, the same answer again.
    assert final(legacy.resume(priming_id(response))) == done


def test_a_lost_round_is_asked_again_on_resume(legacy: LegacyClient) -> None:
    response = ask(legacy, "test_input_required_result_multi_round")
    [first] = questions(response)
    legacy.answer(first["id"], NAME)
    lost = legacy.resume(priming_id(response))  # suppose this response never arrived
    [second] = questions(lost)
    replayed = legacy.resume(priming_id(response))
    assert [q["id"] for q in questions(replayed)] == [second["id"]]
    assert priming_id(replayed) == last_event_id(lost)


# -- answers that change nothing ----------------------------------------------------------------


def test_an_answer_whose_id_maps_to_nothing_is_400(legacy: LegacyClient) -> None:
    response = ask(legacy, "test_input_required_result_elicitation")
    [question] = questions(response)
    for bogus in (42, "q1.bogus.id", question["id"][:-3] + "xyz", question["id"] + "x"):
        refused = legacy.answer(bogus, NAME)
        assert refused.status == 400, bogus
        assert refused.json["error"]["code"] == -32600
    # Nothing was recorded: the call still waits for its answer.
    early = legacy.resume(priming_id(response))
    assert len(sse_events(early)) == 1


def test_an_answer_from_another_session_is_refused(
    legacy: LegacyClient, transport: HttpTransport
) -> None:
    response = ask(legacy, "test_input_required_result_elicitation")
    [question] = questions(response)
    other = LegacyClient(transport)
    other.initialize()
    assert other.answer(question["id"], NAME).status == 400
    assert len(sse_events(legacy.resume(priming_id(response)))) == 1
    # Nor can another session resume this session's stream.
    assert other.resume(priming_id(response)).status == 404


def test_an_answer_of_the_wrong_shape_is_refused_and_not_recorded(legacy: LegacyClient) -> None:
    response = ask(legacy, "test_input_required_result_elicitation")
    [question] = questions(response)
    refused = legacy.answer(question["id"], {"role": "assistant"})
    assert refused.status == 400
    assert refused.json["error"]["code"] == -32602
    assert len(sse_events(legacy.resume(priming_id(response)))) == 1
    legacy.answer(question["id"], NAME)
    assert "result" in final(legacy.resume(priming_id(response)))


def test_the_first_answer_wins(legacy: LegacyClient) -> None:
    response = ask(legacy, "test_input_required_result_elicitation")
    [question] = questions(response)
    assert legacy.answer(question["id"], NAME).status == 202
    second = {"action": "accept", "content": {"name": "Bob"}}
    assert legacy.answer(question["id"], second).status == 202
    text = final(legacy.resume(priming_id(response)))["result"]["content"][0]["text"]
    assert text == "Hello, Alice!"


def test_a_client_error_answer_fails_the_call_with_a_json_rpc_error(legacy: LegacyClient) -> None:
    response = ask(legacy, "test_input_required_result_elicitation")
    [question] = questions(response)
    declined = {"code": -32600, "message": "user closed the dialog"}
    assert legacy.answer(question["id"], error=declined).status == 202
    done = final(legacy.resume(priming_id(response)))
    assert done["id"] == legacy._next_id
    assert done["error"]["code"] == -32603
    assert "user closed the dialog" in done["error"]["message"]


def test_a_tampered_last_event_id_is_404(legacy: LegacyClient) -> None:
    response = ask(legacy, "test_input_required_result_elicitation")
    event_id = priming_id(response)
    for bogus in (event_id[:-2] + "AA", "e1.e30.AAAAAAAAAAAAAAAAAAAAAA", "nonsense"):
        assert legacy.resume(bogus).status == 404


def test_a_resume_must_accept_event_streams(legacy: LegacyClient) -> None:
    response = ask(legacy, "test_input_required_result_elicitation")
    refused = legacy.resume(priming_id(response), accept="application/json")
    assert refused.status == 406


@pytest.mark.parametrize("accept", ["application/json"])
def test_a_question_needs_a_client_that_accepts_event_streams(
    legacy: LegacyClient, accept: str
) -> None:
    params = {"name": "test_input_required_result_elicitation", "arguments": {}}
    response = legacy.request("tools/call", params, accept=accept)
    assert response.status == 406


def test_a_fault_while_resuming_ends_the_call_with_an_internal_error(
    legacy: LegacyClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = legacy.http.transport.server.methods
    params_model, call_tool = table[(Era.LEGACY, "tools/call")]

    reruns: list[Any] = []

    def faulty(call: Any, params: Any) -> Any:
        if params.input_responses:  # the resume, not the first round
            reruns.append(params)
            raise RuntimeError("a bug in the server")
        return call_tool(call, params)

    monkeypatch.setitem(table, (Era.LEGACY, "tools/call"), (params_model, faulty))
    response = ask(legacy, "test_input_required_result_elicitation")
    [question] = questions(response)
    legacy.answer(question["id"], NAME)
    done = final(legacy.resume(priming_id(response)))
    assert done["id"] == legacy._next_id
    assert done["error"] == {"code": -32603, "message": "Internal error"}
    # The call ended: reconnecting reads that answer, and does not run it into the fault again.
    assert final(legacy.resume(priming_id(response)))["error"] == done["error"]
    assert len(reruns) == 1


def test_a_resume_of_a_call_another_resume_ended_stops_waiting() -> None:
    """Two GETs with the same Last-Event-ID: once one has ended the call, the other closes at
    its next poll with the priming event alone, instead of holding its function all window."""
    sessions = InMemoryLegacySessionStore()
    session = LegacySession("sid", "2025-11-25", {}, "caller", int(time.time()) + 3600)
    call = ParkedCall(
        ref="call",
        sid=session.sid,
        request_id=1,
        method="tools/call",
        params={"name": "ask", "arguments": {}, "_meta": {}},
        request_state=None,
        asked={"name": {"method": "elicitation/create", "params": {}}},
        round=0,
        expires_at=session.expires_at,
    )
    sessions.park(call)
    now = [0.0]
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        now[0] += seconds
        sessions.finish(call.ref, call.round)  # the other resume ended the call meanwhile

    questions = InlineQuestions(
        sessions,
        StreamIds(Sealer(b"k" * 32, "test")),
        window_ms=20_000,
        poll_ms=500,
        clock=lambda: now[0],
        sleep=sleep,
    )

    def rerun(resumable: Resumable, request: Any) -> Any:
        raise AssertionError("an ended call is not run again")

    events = list(questions.resume(Resumable(session, "caller"), {"c": call.ref, "n": 0}, rerun))
    assert [event.retry_ms for event in events] == [questions.retry_ms]  # the priming event only
    assert sleeps == [0.5]
