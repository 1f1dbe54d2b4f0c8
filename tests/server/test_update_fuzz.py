"""Property-based fuzzing of `tasks/update` payloads over the real transport and the in-memory
store: whatever a client sends, the answer is an acknowledgement or a -32602, never a 5xx or an
escaped exception, and the task's record only ever changes by an answer that fits an
outstanding request."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mcp_tasks_aws.protocol.request_state import RequestStateCodec
from mcp_tasks_aws.protocol.transport import HttpTransport
from mcp_tasks_aws.server.methods import SUPPORTED_VERSIONS, McpServer
from mcp_tasks_aws.server.tasks import TasksEndpoint
from support.domain import ALICE, Domain, accept, tools
from support.mcp import SECRET, TASKS_EXTENSION, McpClient

OPTED_IN: dict[str, Any] = {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    # JSON has no NaN nor Infinity: the server refuses both as a parse error (issue 26).
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)
answers = st.one_of(
    json_values,
    st.builds(accept, ok=st.booleans()),
    st.fixed_dictionaries({"action": st.sampled_from(["accept", "decline", "cancel", "bogus"])}),
    st.fixed_dictionaries({"roots": st.lists(st.fixed_dictionaries({"uri": st.text()}))}),
)
keys = st.one_of(st.sampled_from(["first", "second", "confirm", ""]), st.text(max_size=200))
payloads = st.dictionaries(keys, answers, max_size=6)


def fresh() -> tuple[Domain, McpClient, str]:
    domain = Domain()
    server = McpServer(
        tools, state_codec=RequestStateCodec(SECRET), tasks=TasksEndpoint(domain.service)
    )
    client = McpClient(HttpTransport(server, supported_versions=SUPPORTED_VERSIONS))
    task_id = domain.create("two_questions")
    domain.run_leg(task_id)
    return domain, client, task_id


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payload=payloads)
@example(payload={"first": accept(ok=True), "zzz": 1})  # lands: first is recorded
@example(payload={"first": {"roots": []}})  # refused: roots for an elicitation
def test_any_update_is_acknowledged_or_refused_and_only_fitting_answers_land(
    payload: dict[str, Any],
) -> None:
    domain, client, task_id = fresh()
    before = domain.record(task_id)
    response = client.request(
        "tasks/update",
        {"taskId": task_id, "inputResponses": payload},
        capabilities=OPTED_IN,
        headers={"mcp-name": task_id},
        principal=ALICE,  # the task's owner: anyone else only ever gets "not found"
    )
    # Never a server error, always one JSON-RPC message
    assert response.status == 200, response.body
    message = response.json
    after = domain.record(task_id)
    if "error" in message:
        assert message["error"]["code"] == -32602
        assert "does not answer its request" in message["error"]["message"]
        assert after == before  # a refused update records nothing
        return
    assert message["result"] == {"resultType": "complete"}
    # Only keys that were outstanding are ever stored, each with an answer of its kind
    assert set(after.answers) <= set(before.input_requests)
    for key, value in after.answers.items():
        assert value == payload[key]
        assert value.get("action") in ("accept", "decline", "cancel")
    if after.answers == before.answers:
        assert after == before  # nothing recorded: not even lastUpdatedAt moved


@settings(max_examples=100, deadline=None)
@given(body=st.dictionaries(st.text(max_size=12), json_values, max_size=5))
def test_malformed_update_params_are_invalid_params(body: dict[str, Any]) -> None:
    _, client, task_id = fresh()
    params = {**body, "taskId": task_id}
    response = client.send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tasks/update",
            "params": {
                **params,
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": OPTED_IN,
                },
            },
        },
        headers={
            "mcp-method": "tasks/update",
            "mcp-name": task_id,
            "mcp-protocol-version": "2026-07-28",
        },
        principal=ALICE,
    )
    assert response.status < 500, response.body
    message = json.loads(response.body)
    assert ("result" in message) != ("error" in message)
