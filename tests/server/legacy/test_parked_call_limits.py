"""What a 2025-11-25 parked call may hold: an answer to an inline question is at most 128 KB (as
a task's is), a call waits for answers only if its arguments, state and questions fit in 256 KB,
and answers that would take its item past 400 KB are refused: each is a clear JSON-RPC error,
never a 500 from a write DynamoDB refused."""

from __future__ import annotations

from mcp_tasks_aws.server.legacy.sessions import InMemoryLegacySessionStore
from server.legacy.legacy_tools import hardening_transport
from support.legacy import LegacyClient, messages, priming_id, questions, sse_events


def _client(**store: int) -> LegacyClient:
    transport, _ = hardening_transport(sessions=InMemoryLegacySessionStore(**store))
    client = LegacyClient(transport)
    client.initialize()
    return client


def _name(size: int) -> dict[str, object]:
    return {"action": "accept", "content": {"name": "A" * size}}


def test_an_answer_over_128_kb_is_refused_and_the_call_still_waits() -> None:
    client = _client()
    asked = client.request("tools/call", {"name": "greet_once", "arguments": {}})
    [question] = questions(asked)
    refused = client.answer(question["id"], _name(140_000))
    assert refused.status == 400
    assert refused.json["error"] == {
        "code": -32602,
        "message": "The answer is too large (over 128 KB)",
    }
    waiting = client.resume(priming_id(asked))
    assert all("data" not in event for event in sse_events(waiting))  # nothing recorded
    assert client.answer(question["id"], _name(5)).status == 202


def test_answers_that_would_outgrow_the_calls_item_are_refused() -> None:
    client = _client(item_limit_chars=20_000)  # a small stand-in for DynamoDB's 400 KB
    asked = client.request("tools/call", {"name": "greet_once", "arguments": {}})
    [question] = questions(asked)
    refused = client.answer(question["id"], _name(30_000))
    assert refused.status == 400
    assert refused.json["error"]["code"] == -32602
    assert "does not fit" in refused.json["error"]["message"]


def test_a_call_too_large_to_park_answers_an_error_before_asking() -> None:
    client = _client()
    response = client.request(
        "tools/call", {"name": "ask_big_then_greet", "arguments": {"size": 300_000}}
    )
    assert response.status == 200
    [message] = messages(response)
    assert message["error"]["code"] == -32603
    assert message["error"]["message"] == (
        "tools/call cannot wait for its answers: its arguments, questions and answers so far "
        "are over 256 KB"
    )
