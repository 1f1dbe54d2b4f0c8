"""2025-11-25 sessions and the ids sealed in them are bound to the deployment, as `requestState`
is: a stack that shares another's state secret opens none of its tokens."""

from __future__ import annotations

import pytest

from mcp_tasks_aws.protocol.legacy import LegacySession
from mcp_tasks_aws.protocol.sealing import Sealer, Unsealable
from mcp_tasks_aws.server.legacy.questions import INLINE_ROUTE, StreamIds
from support.legacy import LegacyClient, legacy_transport

SECRET = b"s" * 32


def test_a_session_of_one_stack_is_unknown_on_another_sharing_its_secret() -> None:
    # conformance_settings gives both stacks the same state secret.
    stack_a = legacy_transport(deployment_id="stack-a")
    stack_b = legacy_transport(deployment_id="stack-b")
    client = LegacyClient(stack_a)
    client.initialize()
    assert client.request("tools/list", {}).status == 200
    client.http = LegacyClient(stack_b).http
    refused = client.request("tools/list", {})
    assert refused.status == 404
    assert refused.json["error"]["code"] == -32600


def test_a_session_ended_on_one_stack_does_not_live_on_in_another() -> None:
    stack_a = legacy_transport(deployment_id="stack-a")
    stack_b = legacy_transport(deployment_id="stack-b")
    client = LegacyClient(stack_a)
    client.initialize()
    assert client.delete().status == 204
    client.http = LegacyClient(stack_b).http  # its store never heard of the DELETE
    assert client.request("tools/list", {}).status == 404


def test_stream_ids_open_only_in_the_deployment_that_sealed_them() -> None:
    session = LegacySession("sid", "2025-11-25", {}, "caller", 4_000_000_000)
    ours = StreamIds(Sealer(SECRET, "legacy-sessions", audience="stack-a"))
    theirs = StreamIds(Sealer(SECRET, "legacy-sessions", audience="stack-b"))
    event_id = ours.event_id(session, INLINE_ROUTE, {"c": "call", "n": 0})
    request_id = ours.request_id(session, INLINE_ROUTE, {"c": "call", "k": "name"})
    assert ours.open_event_id(session, event_id) == (INLINE_ROUTE, {"c": "call", "n": 0})
    with pytest.raises(Unsealable):
        theirs.open_event_id(session, event_id)
    with pytest.raises(Unsealable):
        theirs.open_request_id(session, request_id)
