"""The Tasks extension on the wire, over the real transport and the in-memory store (no moto):
what the use cases' outcomes and errors become for a client."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_tasks_aws.protocol.request_state import RequestStateCodec
from mcp_tasks_aws.protocol.transport import HttpTransport
from mcp_tasks_aws.server.methods import SUPPORTED_VERSIONS, McpServer
from mcp_tasks_aws.server.tasks import TasksEndpoint
from mcp_tasks_aws.tasks.ports import Throttled
from support.domain import Domain, accept, tools
from support.mcp import SECRET, TASKS_EXTENSION, McpClient

OPTED_IN: dict[str, Any] = {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}
ANONYMOUS = "anonymous"


@pytest.fixture
def domain() -> Domain:
    return Domain()


@pytest.fixture
def client(domain: Domain) -> McpClient:
    server = McpServer(
        tools, state_codec=RequestStateCodec(SECRET), tasks=TasksEndpoint(domain.service)
    )
    return McpClient(HttpTransport(server, supported_versions=SUPPORTED_VERSIONS))


def create(client: McpClient, tool: str, arguments: dict[str, Any]) -> str:
    result = client.result(
        "tools/call", {"name": tool, "arguments": arguments}, capabilities=OPTED_IN
    )
    assert result["resultType"] == "task"
    task_id: str = result["taskId"]
    return task_id


def call(client: McpClient, method: str, task_id: str, **params: Any) -> Any:
    return client.request(
        method, {"taskId": task_id, **params}, capabilities=OPTED_IN, headers={"mcp-name": task_id}
    )


def test_a_completed_result_is_a_call_tool_result_with_its_result_type(
    client: McpClient, domain: Domain
) -> None:
    task_id = create(client, "echo", {"text": "hi"})
    domain.run_leg(task_id)
    got = call(client, "tasks/get", task_id).json["result"]
    assert got["status"] == "completed"
    assert got["result"] == {"resultType": "complete", "content": [{"type": "text", "text": "hi"}]}


def test_an_answer_of_the_wrong_kind_is_invalid_params_naming_the_key(
    client: McpClient, domain: Domain
) -> None:
    task_id = create(client, "confirm", {"name": "a.txt"})
    domain.run_leg(task_id)
    response = call(client, "tasks/update", task_id, inputResponses={"confirm": {"roots": []}})
    error = response.json["error"]
    assert error["code"] == -32602
    assert "'confirm'" in error["message"]
    assert "elicitation/create" in error["message"]
    # And the right answer is still taken
    fixed = call(client, "tasks/update", task_id, inputResponses={"confirm": accept(ok=True)})
    assert fixed.json["result"] == {"resultType": "complete"}


@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
def test_a_throttled_backend_answers_503_with_retry_after_and_changes_nothing(
    client: McpClient, domain: Domain, method: str
) -> None:
    task_id = create(client, "confirm", {"name": "b.txt"})
    domain.run_leg(task_id)
    before = domain.record(task_id)

    def throttled(primitive: str, _: str) -> None:
        raise Throttled(retry_after_s=2)

    domain.store.before_call = throttled
    params = {"inputResponses": {"confirm": accept(ok=True)}} if method == "tasks/update" else {}
    response = call(client, method, task_id, **params)
    domain.store.before_call = None
    assert response.status == 503
    assert response.headers["retry-after"] == "2"
    assert response.json["error"]["code"] == -32603
    assert "busy" in response.json["error"]["message"]
    assert domain.record(task_id) == before


def test_a_create_whose_start_is_throttled_is_503_and_leaves_no_working_task(
    client: McpClient, domain: Domain
) -> None:
    def throttled_start(name: str, _: str) -> None:
        if name == "start":
            raise Throttled()

    domain.runner.before_call = throttled_start
    response = client.request(
        "tools/call",
        {"name": "echo", "arguments": {"text": "hi"}},
        capabilities=OPTED_IN,
    )
    assert response.status == 503
    assert response.headers["retry-after"] == "1"
    assert [r.status for r in domain.store.all_records()] == ["failed"]


def test_a_create_whose_direct_leg_is_throttled_is_503_and_leaves_no_working_task() -> None:
    domain = Domain(direct=True)
    domain.direct_legs.failing, domain.direct_legs.fault = True, Throttled()
    server = McpServer(
        tools, state_codec=RequestStateCodec(SECRET), tasks=TasksEndpoint(domain.service)
    )
    client = McpClient(HttpTransport(server, supported_versions=SUPPORTED_VERSIONS))
    response = client.request(
        "tools/call", {"name": "echo", "arguments": {"text": "hi"}}, capabilities=OPTED_IN
    )
    assert response.status == 503
    assert response.headers["retry-after"] == "1"
    assert [r.status for r in domain.store.all_records()] == ["failed"]
