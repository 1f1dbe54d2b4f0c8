"""A resumed call's answer stays readable a few minutes after the call ended: if the stream that
carried it is lost, the reconnect with the same `Last-Event-ID` reads it again (the tool does not
run again), instead of a 404 for a call whose tool ran."""

from __future__ import annotations

import time

from mcp_tasks_aws.server.legacy.sessions import InMemoryLegacySessionStore
from server.legacy.legacy_tools import NAME, effects, hardening_transport
from support.legacy import LegacyClient, messages, priming_id, questions


class Clock:
    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


def _answered_call(client: LegacyClient, tool: str, arguments: dict[str, object]) -> str:
    asked = client.request("tools/call", {"name": tool, "arguments": arguments})
    [question] = questions(asked)
    assert client.answer(question["id"], NAME).status == 202
    return priming_id(asked)


def test_a_lost_answer_is_read_again_and_then_goes() -> None:
    effects.clear()
    clock = Clock()
    transport, _ = hardening_transport(sessions=InMemoryLegacySessionStore(clock=clock))
    client = LegacyClient(transport)
    client.initialize()
    event_id = _answered_call(client, "greet_once", {})
    first = messages(client.resume(event_id))[-1]  # suppose this never reached the client
    assert first["result"]["content"][0]["text"] == "Hello, Alice!"
    again = messages(client.resume(event_id))
    assert again == [first]
    assert effects == ["greeted Alice"]
    clock.offset = 301  # past the grace period: the call is gone
    gone = client.resume(event_id)
    assert gone.status == 404


def test_an_answer_too_large_to_keep_is_replaced_by_an_error_saying_so() -> None:
    transport, _ = hardening_transport()
    client = LegacyClient(transport)
    client.initialize()
    event_id = _answered_call(client, "ask_then_answer_big", {"size": 300_000})
    first = messages(client.resume(event_id))[-1]
    assert len(first["result"]["content"][0]["text"]) == 300_000
    [again] = messages(client.resume(event_id))
    assert again["id"] == first["id"]
    assert again["error"]["message"] == (
        "The call's result was sent once and is too large to be sent again"
    )
