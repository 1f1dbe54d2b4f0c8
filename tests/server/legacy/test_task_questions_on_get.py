"""A 2025-11-25 task's questions on the stream of a `tasks/get` (`legacy.task_questions`), for
clients that poll `tasks/get` and never open `tasks/result` (the Inspector's default era,
ext-tasks' 2025-11-25 requester): the outstanding `elicitation/create` before the answer,
tagged with the related-task `_meta`, answered once through the `tasks/update` path, and
sent to one poller at a time.

The transport is the real one over the in-memory task domain; legs run when a test says so.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from mcp_tasks_aws.protocol.transport import HttpResponse, HttpTransport
from mcp_tasks_aws.server.legacy.sessions import InMemoryLegacySessionStore
from support.clock import Clock
from support.domain import Domain, accept, tools
from support.legacy import LegacyClient, last_event_id, messages, questions, task_transport

RELATED = "io.modelcontextprotocol/related-task"


@pytest.fixture
def domain() -> Domain:
    return Domain()


@pytest.fixture
def clock() -> Clock:
    # The session store's clock: the holds' expiry is epoch seconds (time.time()).
    return Clock(time.time())


@pytest.fixture
def transport(domain: Domain, clock: Clock) -> HttpTransport:
    sessions = InMemoryLegacySessionStore(clock=clock)
    return task_transport(domain.service, tools, sessions=sessions)


def session(transport: HttpTransport, capabilities: dict[str, Any] | None = None) -> LegacyClient:
    client = LegacyClient(transport)
    client.initialize(capabilities)
    return client


@pytest.fixture
def legacy(transport: HttpTransport) -> LegacyClient:
    return session(transport)


def asking(legacy: LegacyClient, domain: Domain, tool: str = "confirm") -> str:
    """A task of `tool`, run until it waits on its questions."""
    arguments = {"name": "a.txt"} if tool == "confirm" else {}
    params = {"name": tool, "arguments": arguments, "task": {}}
    task_id: str = legacy.result("tools/call", params)["task"]["taskId"]
    domain.run_leg(task_id)
    assert domain.record(task_id).visible_status == "input_required"
    return task_id


def poll(legacy: LegacyClient, task_id: str, **headers: str) -> HttpResponse:
    response = legacy.request("tasks/get", {"taskId": task_id}, **headers)
    assert response.status == 200, response.body
    return response


def answer_of(response: HttpResponse) -> dict[str, Any]:
    last = messages(response)[-1]
    assert "result" in last, last
    result: dict[str, Any] = last["result"]
    return result


def test_a_poll_carries_the_tasks_question_before_its_answer(
    legacy: LegacyClient, domain: Domain
) -> None:
    task_id = asking(legacy, domain)
    response = poll(legacy, task_id)
    assert response.headers["content-type"] == "text/event-stream"
    question, answer = messages(response)
    assert question["method"] == "elicitation/create"
    assert question["params"]["message"] == "Delete a.txt?"
    assert question["params"]["_meta"] == {RELATED: {"taskId": task_id}}
    # Then the tasks/get answer itself, under the request's id.
    assert answer["id"] == legacy._next_id
    assert answer["result"]["taskId"] == task_id
    assert answer["result"]["status"] == "input_required"


def test_the_answer_takes_the_path_of_tasks_update_and_the_task_resumes(
    legacy: LegacyClient, domain: Domain
) -> None:
    task_id = asking(legacy, domain)
    [question] = questions(poll(legacy, task_id))
    assert legacy.answer(question["id"], accept(ok=True)).status == 202
    record = domain.record(task_id)
    assert (record.input_requests, record.answers) == ({}, {"confirm": accept(ok=True)})
    assert domain.runner.named("resume") == [record.task_token]
    assert answer_of(poll(legacy, task_id))["status"] == "working"
    domain.run_leg(task_id)
    assert answer_of(poll(legacy, task_id))["status"] == "completed"
    # A second answer (a duplicate) changes nothing: the first one won.
    assert legacy.answer(question["id"], accept(ok=False)).status == 202
    assert domain.record(task_id).answers == {"confirm": accept(ok=True)}


def test_the_next_poll_is_not_sent_the_question_again(legacy: LegacyClient, domain: Domain) -> None:
    task_id = asking(legacy, domain)
    assert len(questions(poll(legacy, task_id))) == 1
    again = poll(legacy, task_id)
    assert questions(again) == []
    assert again.headers["content-type"] == "application/json"
    assert answer_of(again)["status"] == "input_required"


def test_another_poller_is_not_sent_a_question_in_flight(
    transport: HttpTransport, legacy: LegacyClient, domain: Domain
) -> None:
    task_id = asking(legacy, domain)
    assert len(questions(poll(legacy, task_id))) == 1
    other = session(transport)  # another session of the same caller
    assert questions(poll(other, task_id)) == []
    # Nor on its tasks/result stream.
    assert questions(other.request("tasks/result", {"taskId": task_id})) == []


def test_a_question_whose_hold_lapsed_is_sent_again(
    legacy: LegacyClient, domain: Domain, clock: Clock
) -> None:
    task_id = asking(legacy, domain)
    [first] = questions(poll(legacy, task_id))
    clock.advance(3600)  # far past the hold: the question was never answered
    [again] = questions(poll(legacy, task_id))
    assert again["params"]["message"] == first["params"]["message"]
    assert legacy.answer(first["id"], accept(ok=True)).status == 202  # the first still counts
    assert domain.record(task_id).answers == {"confirm": accept(ok=True)}


def test_two_questions_go_out_together_and_each_is_answered_once(
    legacy: LegacyClient, domain: Domain
) -> None:
    task_id = asking(legacy, domain, "two_questions")
    asked = questions(poll(legacy, task_id))
    assert sorted(q["params"]["message"] for q in asked) == ["First?", "Second?"]
    legacy.answer(asked[0]["id"], accept(ok=True))
    assert questions(poll(legacy, task_id)) == []  # the second is still in flight
    legacy.answer(asked[1]["id"], accept(ok=True))
    assert domain.record(task_id).input_requests == {}


def test_a_client_polling_then_opening_tasks_result_is_asked_once(
    legacy: LegacyClient, domain: Domain
) -> None:
    # The TypeScript SDK 1.x polls tasks/get until input_required, then opens tasks/result.
    task_id = asking(legacy, domain)
    [question] = questions(poll(legacy, task_id))
    window = legacy.request("tasks/result", {"taskId": task_id})
    assert questions(window) == []
    legacy.answer(question["id"], accept(ok=True))
    resumed = legacy.resume(last_event_id(window))
    assert [m["params"]["status"] for m in messages(resumed) if "method" in m] == ["working"]


def test_a_result_stream_holds_its_question_from_pollers(
    legacy: LegacyClient, domain: Domain
) -> None:
    task_id = asking(legacy, domain)
    assert len(questions(legacy.request("tasks/result", {"taskId": task_id}))) == 1
    assert questions(poll(legacy, task_id)) == []


def test_a_json_only_poll_carries_no_question_and_takes_no_hold(
    legacy: LegacyClient, domain: Domain
) -> None:
    task_id = asking(legacy, domain)
    plain = poll(legacy, task_id, accept="application/json")
    assert plain.headers["content-type"] == "application/json"
    assert plain.json["result"]["status"] == "input_required"
    assert len(questions(poll(legacy, task_id))) == 1  # still free for a poller that can read it


def test_a_session_without_the_channel_is_not_asked(
    transport: HttpTransport, legacy: LegacyClient, domain: Domain
) -> None:
    task_id = asking(legacy, domain)
    silent = session(transport, {"sampling": {}})  # no elicitation
    response = poll(silent, task_id)
    assert questions(response) == []
    assert answer_of(response)["status"] == "input_required"
    assert len(questions(poll(legacy, task_id))) == 1  # nor did it take the question


def test_a_working_task_answers_in_json_as_before(legacy: LegacyClient, domain: Domain) -> None:
    params = {"name": "echo", "arguments": {"text": "x"}, "task": {}}
    task_id = legacy.result("tools/call", params)["task"]["taskId"]
    response = poll(legacy, task_id)
    assert response.headers["content-type"] == "application/json"
    assert response.json["result"]["status"] == "working"
