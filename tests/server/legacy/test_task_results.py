"""`tasks/result` for 2025-11-25 sessions: the outcome at once for a terminal task, otherwise SSE
windows (a priming event, the task's questions, status notifications) resumed with `GET` +
`Last-Event-ID` until the result; and the client's answers to those questions, which take the
path of `tasks/update`.

The transport is the real one over the in-memory task domain, with 300 ms windows; legs run
when a test says so (`domain.run_leg`).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from mcp_tasks_aws.protocol.legacy import SessionCodec
from mcp_tasks_aws.protocol.sealing import Sealer
from mcp_tasks_aws.protocol.transport import HttpResponse, HttpTransport
from mcp_tasks_aws.server.legacy.questions import StreamIds
from support.domain import Domain, accept, tools
from support.legacy import (
    LegacyClient,
    last_event_id,
    messages,
    priming_id,
    questions,
    sse_events,
    task_transport,
)
from support.mcp import SECRET

RELATED = "io.modelcontextprotocol/related-task"
OTHER = "jwt:https://issuer|grace|app"


@pytest.fixture
def domain() -> Domain:
    return Domain()


@pytest.fixture
def transport(domain: Domain) -> HttpTransport:
    return task_transport(domain.service, tools)


@pytest.fixture
def legacy(transport: HttpTransport) -> LegacyClient:
    client = LegacyClient(transport)
    client.initialize()
    return client


def create(legacy: LegacyClient, tool: str, arguments: dict[str, Any] | None = None) -> str:
    params = {"name": tool, "arguments": arguments or {}, "task": {}}
    task_id: str = legacy.result("tools/call", params)["task"]["taskId"]
    return task_id


def result_stream(legacy: LegacyClient, task_id: str) -> HttpResponse:
    response = legacy.request("tasks/result", {"taskId": task_id})
    assert response.status == 200, response.body
    assert response.headers["content-type"] == "text/event-stream"
    return response


def statuses(response: HttpResponse) -> list[str]:
    return [
        m["params"]["status"]
        for m in messages(response)
        if m.get("method") == "notifications/tasks/status"
    ]


def final(response: HttpResponse) -> dict[str, Any]:
    last = messages(response)[-1]
    assert "method" not in last, last
    return last


# -- a terminal task ------------------------------------------------------------------------------


def test_the_result_of_a_completed_task_is_the_calls_with_its_related_task(
    legacy: LegacyClient, domain: Domain
) -> None:
    task_id = create(legacy, "echo", {"text": "hi"})
    domain.run_leg(task_id)
    response = legacy.request("tasks/result", {"taskId": task_id})
    assert response.headers["content-type"] == "application/json"
    assert response.json["id"] == legacy._next_id
    assert response.json["result"] == {
        "content": [{"type": "text", "text": "hi"}],
        "_meta": {RELATED: {"taskId": task_id}},
    }


def test_the_result_of_a_tool_error_is_the_is_error_result(
    legacy: LegacyClient, domain: Domain
) -> None:
    task_id = create(legacy, "crashing")
    domain.run_leg(task_id)
    result = legacy.result("tasks/result", {"taskId": task_id})
    assert result["isError"] is True
    assert result["_meta"] == {RELATED: {"taskId": task_id}}


def test_the_result_of_a_failed_task_is_the_calls_json_rpc_error(
    legacy: LegacyClient, domain: Domain
) -> None:
    task_id = create(legacy, "protocol_fault")
    domain.run_leg(task_id)
    response = legacy.request("tasks/result", {"taskId": task_id})
    assert response.json["error"] == {"code": -32603, "message": "the backend refused"}


def test_the_result_of_a_cancelled_task_is_an_error_saying_so(legacy: LegacyClient) -> None:
    task_id = create(legacy, "echo", {"text": "x"})
    legacy.result("tasks/cancel", {"taskId": task_id})
    error = legacy.request("tasks/result", {"taskId": task_id}).json["error"]
    assert error["code"] == -32603
    assert "was cancelled" in error["message"]


def test_an_offloaded_result_is_read_back(legacy: LegacyClient, domain: Domain) -> None:
    domain.legs.result_budget = 10  # anything longer goes to the result bucket
    task_id = create(legacy, "echo", {"text": "a longer answer"})
    domain.run_leg(task_id)
    assert domain.record(task_id).result_ref is not None
    result = legacy.result("tasks/result", {"taskId": task_id})
    assert result["content"] == [{"type": "text", "text": "a longer answer"}]


# -- a running task: windows, resumed -------------------------------------------------------------


def test_a_working_task_streams_a_window_that_ends_with_where_it_is(
    legacy: LegacyClient,
) -> None:
    task_id = create(legacy, "echo", {"text": "later"})
    response = result_stream(legacy, task_id)
    events = sse_events(response)
    # Nothing happened within the window: the priming event alone, with retry.
    assert len(events) == 1
    assert "data" not in events[0]
    assert events[0]["retry"] > 0


def test_the_resumed_stream_carries_the_status_change_and_the_result(
    legacy: LegacyClient, domain: Domain
) -> None:
    task_id = create(legacy, "echo", {"text": "later"})
    response = result_stream(legacy, task_id)
    request_id = legacy._next_id
    domain.run_leg(task_id)
    resumed = legacy.resume(priming_id(response))
    assert resumed.status == 200
    assert statuses(resumed) == ["completed"]
    done = final(resumed)
    assert done["id"] == request_id  # the original tasks/result's id
    assert done["result"]["content"] == [{"type": "text", "text": "later"}]


def test_an_open_window_ends_with_the_result_when_the_task_ends(
    domain: Domain,
) -> None:
    legacy = LegacyClient(task_transport(domain.service, tools, window_ms=10_000))
    legacy.initialize()
    task_id = create(legacy, "echo", {"text": "soon"})
    leg = threading.Timer(0.05, domain.run_leg, args=(task_id,))
    leg.start()
    try:
        response = result_stream(legacy, task_id)
    finally:
        leg.join()
    assert final(response)["result"]["content"][0]["text"] == "soon"


def test_a_resume_of_a_task_that_has_expired_is_not_found(
    legacy: LegacyClient, domain: Domain
) -> None:
    task_id = create(legacy, "echo", {"text": "x"})
    response = result_stream(legacy, task_id)
    domain.clock.advance(3_600_001)
    resumed = legacy.resume(priming_id(response))
    assert resumed.status == 404
    assert "its task is gone" in resumed.json["error"]["message"]


def test_another_session_cannot_resume_the_stream(
    legacy: LegacyClient, transport: HttpTransport
) -> None:
    task_id = create(legacy, "echo", {"text": "x"})
    event_id = priming_id(result_stream(legacy, task_id))
    other = LegacyClient(transport)
    other.initialize()
    assert other.resume(event_id).status == 404


# -- a task's questions ---------------------------------------------------------------------------


def test_a_question_goes_out_on_the_result_stream_tied_to_its_task(
    legacy: LegacyClient, domain: Domain
) -> None:
    task_id = create(legacy, "confirm", {"name": "a.txt"})
    domain.run_leg(task_id)
    response = result_stream(legacy, task_id)
    [question] = questions(response)
    assert question["method"] == "elicitation/create"
    assert question["params"]["message"] == "Delete a.txt?"
    assert question["params"]["_meta"] == {RELATED: {"taskId": task_id}}
    # The window ends right after it, with an id to resume from.
    assert sse_events(response)[-1]["id"]
    assert not [m for m in messages(response) if "result" in m or "error" in m]


def test_the_answer_takes_the_path_of_tasks_update_and_the_task_resumes(
    legacy: LegacyClient, domain: Domain
) -> None:
    task_id = create(legacy, "confirm", {"name": "a.txt"})
    domain.run_leg(task_id)
    response = result_stream(legacy, task_id)
    [question] = questions(response)
    assert legacy.answer(question["id"], accept(ok=True)).status == 202
    record = domain.record(task_id)
    assert (record.input_requests, record.answers) == ({}, {"confirm": accept(ok=True)})
    assert domain.runner.named("resume") == [record.task_token]
    # The resumed stream says the task works again, then brings the result.
    resumed = legacy.resume(last_event_id(response))
    assert statuses(resumed) == ["working"]
    domain.run_leg(task_id)
    done = legacy.resume(last_event_id(resumed))
    assert statuses(done) == ["completed"]
    assert final(done)["result"]["content"][0]["text"] == "a.txt: True"


def test_a_question_is_sent_once_per_stream_and_again_from_an_earlier_position(
    legacy: LegacyClient, domain: Domain
) -> None:
    task_id = create(legacy, "two_questions")
    domain.run_leg(task_id)
    response = result_stream(legacy, task_id)
    asked = questions(response)
    assert sorted(q["params"]["message"] for q in asked) == ["First?", "Second?"]
    # From the last event: both were sent, nothing new.
    assert questions(legacy.resume(last_event_id(response))) == []
    # From the priming event (the client missed what followed): both again, same ids.
    again = questions(legacy.resume(priming_id(response)))
    assert [q["id"] for q in again] == [q["id"] for q in asked]


def test_a_partial_answer_leaves_the_other_question_outstanding(
    legacy: LegacyClient, domain: Domain
) -> None:
    task_id = create(legacy, "two_questions")
    domain.run_leg(task_id)
    first, second = questions(result_stream(legacy, task_id))
    legacy.answer(first["id"], accept(ok=True))
    task = legacy.result("tasks/get", {"taskId": task_id})
    assert task["status"] == "input_required"
    assert domain.runner.named("resume") == []
    legacy.answer(second["id"], accept(ok=False))
    domain.run_leg(task_id)
    assert legacy.result("tasks/result", {"taskId": task_id})["content"][0]["text"] == "True/False"


def test_first_answer_wins(legacy: LegacyClient, domain: Domain) -> None:
    task_id = create(legacy, "confirm", {"name": "a.txt"})
    domain.run_leg(task_id)
    [question] = questions(result_stream(legacy, task_id))
    assert legacy.answer(question["id"], accept(ok=True)).status == 202
    assert legacy.answer(question["id"], accept(ok=False)).status == 202
    assert domain.record(task_id).answers == {"confirm": accept(ok=True)}


def test_an_answer_of_the_wrong_shape_is_refused_and_nothing_changes(
    legacy: LegacyClient, domain: Domain
) -> None:
    task_id = create(legacy, "confirm", {"name": "a.txt"})
    domain.run_leg(task_id)
    [question] = questions(result_stream(legacy, task_id))
    before = domain.record(task_id)
    refused = legacy.answer(question["id"], {"roots": []})
    assert refused.status == 400
    assert "does not fit its request" in refused.json["error"]["message"]
    assert domain.record(task_id) == before


def test_an_error_answer_fails_the_task_with_it_and_releases_its_execution(
    legacy: LegacyClient, domain: Domain
) -> None:
    task_id = create(legacy, "confirm", {"name": "a.txt"})
    domain.run_leg(task_id)
    [question] = questions(result_stream(legacy, task_id))
    token = domain.record(task_id).task_token
    declined = legacy.answer(question["id"], error={"code": -1, "message": "user closed it"})
    assert declined.status == 202
    record = domain.record(task_id)
    assert record.status == "failed"
    assert record.error == {
        "code": -32603,
        "message": "The client answered elicitation/create with an error: user closed it",
        "data": {"clientErrorCode": -1},
    }
    assert domain.runner.named("interrupt") == [token]
    assert legacy.request("tasks/result", {"taskId": task_id}).json["error"] == record.error


@pytest.mark.parametrize(
    "rid",
    [
        "nobody-asked",
        "q1.e30.AAAAAAAAAAAAAAAAAAAAAA",  # the shape of a sealed id, forged
        12,
    ],
)
def test_an_answer_whose_id_maps_to_nothing_is_refused(
    legacy: LegacyClient, domain: Domain, rid: Any
) -> None:
    task_id = create(legacy, "confirm", {"name": "a.txt"})
    domain.run_leg(task_id)
    before = domain.record(task_id)
    response = legacy.answer(rid, accept(ok=True))
    assert response.status == 400
    assert domain.record(task_id) == before


def test_an_answer_from_another_session_maps_to_nothing(
    legacy: LegacyClient, transport: HttpTransport, domain: Domain
) -> None:
    task_id = create(legacy, "confirm", {"name": "a.txt"})
    domain.run_leg(task_id)
    [question] = questions(result_stream(legacy, task_id))
    other = LegacyClient(transport, principal=OTHER)
    other.initialize()
    assert other.answer(question["id"], accept(ok=True)).status == 400
    assert domain.record(task_id).answers == {}


def test_a_prelude_asks_inline_then_the_call_becomes_a_task(
    legacy: LegacyClient, domain: Domain
) -> None:
    response = legacy.request("tools/call", {"name": "ask_first", "arguments": {}, "task": {}})
    [question] = questions(response)
    assert question["params"]["message"] == "Your name?"
    assert domain.store.all_records() == []  # no task before the prelude is answered
    legacy.answer(question["id"], accept(name="Ada"))
    created = final(legacy.resume(priming_id(response)))["result"]
    task_id = created["task"]["taskId"]
    domain.run_leg(task_id)
    assert legacy.result("tasks/result", {"taskId": task_id})["content"][0]["text"] == (
        "Hello, Ada!"
    )


@pytest.mark.parametrize(
    "payload",
    [
        {"t": "0" * 32, "q": 1, "d": [], "u": "working"},  # a task that does not exist
        {"t": 7, "q": 1, "d": [], "u": "working"},
        {"t": "0" * 32, "q": True, "d": [], "u": "working"},
        {"t": "0" * 32, "q": 1, "d": "x", "u": "working"},
    ],
)
def test_a_sealed_event_id_that_names_no_task_stream_is_not_found(
    legacy: LegacyClient, payload: dict[str, Any]
) -> None:
    # Ids sealed with the deployment's secret, for this very session: only the content is wrong.
    sealer = Sealer(SECRET, "legacy-sessions")
    assert legacy.session_id is not None
    session = SessionCodec(sealer).open(legacy.session_id, legacy.principal)
    event_id = StreamIds(sealer).event_id(session, "task", payload)
    assert legacy.resume(event_id).status == 404
