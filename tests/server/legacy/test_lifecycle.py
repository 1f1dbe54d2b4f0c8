"""The 2025-11-25 lifecycle beside 2026-07-28: initialize, the sealed session, its end, and
each request that is refused (missing, unknown, foreign, tampered or ended sessions; a modern
request carrying one), which must change nothing."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest

from mcp_tasks_aws.protocol.transport import HttpResponse, HttpTransport
from support.legacy import LegacyClient, legacy_transport, messages, visible_ascii
from support.mcp import McpClient, envelope


def assert_error(response: HttpResponse, status: int, code: int) -> str:
    assert response.status == status, response.body
    message = response.json
    assert "result" not in message, message
    assert message["error"]["code"] == code
    text: str = message["error"]["message"]
    assert text
    return text


# -- initialize ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("asked", "answered"),
    [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
        ("not a version", "2025-11-25"),
    ],
)
def test_initialize_answers_a_legacy_version_as_asked_and_anything_else_with_the_latest(
    transport: HttpTransport, asked: str, answered: str
) -> None:
    result = LegacyClient(transport).initialize(version=asked)
    assert result["protocolVersion"] == answered


def test_initialize_declares_the_servers_capabilities_and_identity(legacy: LegacyClient) -> None:
    client = LegacyClient(legacy.http.transport)
    result = client.initialize()
    assert result["serverInfo"] == {"name": "mcp-tasks-aws-conformance", "version": "0.1.0"}
    capabilities = result["capabilities"]
    assert capabilities["tools"] == {}
    assert capabilities["logging"] == {}
    assert capabilities["resources"] == {"subscribe": True}
    # 2026-07-28 only: extensions (the Tasks extension) are not offered to a legacy session.
    assert "extensions" not in capabilities
    assert "resultType" not in result


def test_the_session_id_is_visible_ascii_and_differs_per_session(transport: HttpTransport) -> None:
    first, second = LegacyClient(transport), LegacyClient(transport)
    first.initialize()
    second.initialize()
    assert first.session_id
    assert second.session_id
    assert visible_ascii(first.session_id)
    assert first.session_id != second.session_id


def test_initialize_inside_a_session_is_refused(legacy: LegacyClient) -> None:
    params = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "x", "version": "1"},
    }
    response = legacy.send({"jsonrpc": "2.0", "id": 9, "method": "initialize", "params": params})
    assert "without Mcp-Session-Id" in assert_error(response, 400, -32600)


def test_initialize_with_oversized_capabilities_is_refused(transport: HttpTransport) -> None:
    client = McpClient(transport)
    params = {
        "protocolVersion": "2025-11-25",
        "capabilities": {"experimental": {"x": {"blob": "a" * 5000}}},
        "clientInfo": {"name": "x", "version": "1"},
    }
    response = client.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
    assert response.status == 200
    assert response.json["error"]["code"] == -32602
    assert "mcp-session-id" not in response.headers


# -- inside a session ---------------------------------------------------------------------------


def test_initialized_notification_is_202(legacy: LegacyClient) -> None:
    response = legacy.notify("notifications/initialized")
    assert response.status == 202
    assert response.body == b""


def test_ping_answers_an_empty_result(legacy: LegacyClient) -> None:
    assert legacy.result("ping") == {}


def test_results_carry_no_2026_fields(legacy: LegacyClient) -> None:
    for method in ("tools/list", "prompts/list", "resources/list", "resources/templates/list"):
        result = legacy.result(method)
        assert not {"resultType", "ttlMs", "cacheScope"} & set(result), method
    read = legacy.result("resources/read", {"uri": "conformance://readme"})
    assert not {"resultType", "ttlMs", "cacheScope"} & set(read)


def test_tools_list_says_each_tools_task_support(legacy: LegacyClient) -> None:
    tools = {t["name"]: t for t in legacy.result("tools/list")["tools"]}
    assert tools["greet"]["execution"] == {"taskSupport": "forbidden"}
    assert tools["failing_job"]["execution"] == {"taskSupport": "required"}
    # Optional tools run inline for legacy clients until legacy tasks are served.
    assert tools["slow_compute"]["execution"] == {"taskSupport": "forbidden"}


def test_a_task_only_tool_called_without_a_task_is_method_not_found(legacy: LegacyClient) -> None:
    response = legacy.request("tools/call", {"name": "failing_job", "arguments": {}})
    assert response.status == 200
    assert response.json["error"]["code"] == -32601
    assert "only as a task" in response.json["error"]["message"]


def test_an_optional_task_tool_runs_inline(legacy: LegacyClient) -> None:
    result = legacy.result(
        "tools/call", {"name": "slow_compute", "arguments": {"seconds": 0, "label": "x"}}
    )
    assert result["content"][0]["text"] == "Computed x after 0.0s."


def test_unknown_method_inside_a_session_is_a_json_rpc_error(legacy: LegacyClient) -> None:
    # A method only 2026-07-28 has: the session answers -32601 as its transport does (200).
    response = legacy.request("subscriptions/listen", {"notifications": {}})
    assert response.status == 200
    assert response.json["error"]["code"] == -32601


def test_a_method_no_era_serves_is_404_even_without_a_session(transport: HttpTransport) -> None:
    response = McpClient(transport).send({"jsonrpc": "2.0", "id": 1, "method": "no/such"})
    assert_error(response, 404, -32601)


def test_set_level_governs_log_notifications_for_the_session(legacy: LegacyClient) -> None:
    quiet = legacy.request("tools/call", {"name": "test_tool_with_logging", "arguments": {}})
    assert [m for m in messages(quiet) if m.get("method") == "notifications/message"] == []
    assert legacy.result("logging/setLevel", {"level": "info"}) == {}
    loud = legacy.request("tools/call", {"name": "test_tool_with_logging", "arguments": {}})
    logs = [
        m["params"]["data"] for m in messages(loud) if m.get("method") == "notifications/message"
    ]
    assert logs == ["Tool execution started", "Tool processing data", "Tool execution completed"]
    assert legacy.result("logging/setLevel", {"level": "error"}) == {}
    again = legacy.request("tools/call", {"name": "test_tool_with_logging", "arguments": {}})
    assert [m for m in messages(again) if m.get("method") == "notifications/message"] == []


def test_set_level_rejects_an_unknown_level(legacy: LegacyClient) -> None:
    response = legacy.request("logging/setLevel", {"level": "loud"})
    assert response.json["error"]["code"] == -32602


def test_capabilities_declared_at_initialize_govern_what_a_tool_may_ask(
    transport: HttpTransport,
) -> None:
    client = LegacyClient(transport)
    client.initialize(capabilities={"sampling": {}})
    response = client.request(
        "tools/call", {"name": "test_elicitation", "arguments": {"message": "hi"}}
    )
    error = response.json["error"]
    assert error["code"] == -32021
    assert error["data"] == {"requiredCapabilities": {"elicitation": {}}}


def test_capabilities_in_a_requests_meta_do_not_widen_the_session(transport: HttpTransport) -> None:
    client = LegacyClient(transport)
    client.initialize(capabilities={})
    params = {
        "name": "test_elicitation",
        "arguments": {"message": "hi"},
        "_meta": {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}},
    }
    assert client.request("tools/call", params).json["error"]["code"] == -32021


def test_subscribe_and_unsubscribe_a_known_resource(legacy: LegacyClient) -> None:
    assert legacy.result("resources/subscribe", {"uri": "test://watched-resource"}) == {}
    assert legacy.result("resources/unsubscribe", {"uri": "test://watched-resource"}) == {}
    response = legacy.request("resources/subscribe", {"uri": "test://nothing-here"})
    assert response.json["error"]["code"] == -32602


def test_a_legacy_probe_of_discover_gets_the_modern_answer(transport: HttpTransport) -> None:
    response = McpClient(transport).send({"jsonrpc": "2.0", "id": 1, "method": "server/discover"})
    assert response.status == 200
    result = response.json["result"]
    assert result["supportedVersions"] == ["2026-07-28"]
    assert result["resultType"] == "complete"


# -- ending a session ---------------------------------------------------------------------------


def test_delete_ends_the_session_and_it_is_unknown_afterwards(legacy: LegacyClient) -> None:
    assert legacy.delete().status == 204
    assert_error(legacy.request("tools/list"), 404, -32600)
    assert legacy.notify("notifications/initialized").status == 404
    assert_error(legacy.delete(), 404, -32600)


def test_an_ended_session_keeps_its_log_level_unchanged(legacy: LegacyClient) -> None:
    legacy.delete()
    assert_error(legacy.request("logging/setLevel", {"level": "debug"}), 404, -32600)


def test_a_session_expires(transport: HttpTransport) -> None:
    expiring = legacy_transport(session_ttl_seconds=1)
    client = LegacyClient(expiring)
    client.initialize()
    assert client.result("ping") == {}
    time.sleep(1.1)
    assert_error(client.request("ping"), 404, -32600)


# -- bad input: each is refused and changes nothing ---------------------------------------------


def test_a_legacy_request_without_its_session_is_400(transport: HttpTransport) -> None:
    response = McpClient(transport).send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    text = assert_error(response, 400, -32600)
    assert "Mcp-Session-Id" in text
    assert "initialize" in text


def test_a_modern_request_carrying_a_session_id_is_400(legacy: LegacyClient) -> None:
    assert legacy.session_id is not None
    response = legacy.http.request("tools/list", headers={"mcp-session-id": legacy.session_id})
    assert "Mcp-Session-Id" in assert_error(response, 400, -32600)


def test_another_callers_session_is_unknown(transport: HttpTransport) -> None:
    owner = LegacyClient(transport, principal="jwt:issuer|alice|app")
    owner.initialize()
    intruder = LegacyClient(transport, principal="jwt:issuer|mallory|app")
    intruder.session_id, intruder.version = owner.session_id, owner.version
    assert_error(intruder.request("tools/list"), 404, -32600)
    assert_error(intruder.delete(), 404, -32600)
    # The owner's session is untouched.
    assert owner.result("ping") == {}


def _tampered(session_id: str, change: dict[str, Any]) -> str:
    kind, kid, body, mac = session_id.split(".")
    payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    payload.update(change)
    forged = base64.urlsafe_b64encode(json.dumps(payload).encode()).rstrip(b"=").decode()
    return f"{kind}.{kid}.{forged}.{mac}"


@pytest.mark.parametrize(
    "forge",
    [
        lambda sid: _tampered(sid, {"c": {"elicitation": {}, "sampling": {}, "roots": {}, "x": 1}}),
        lambda sid: _tampered(sid, {"exp": 9_999_999_999}),
        lambda sid: sid[:-2] + ("AA" if not sid.endswith("AA") else "BB"),
        lambda sid: "s1." + sid.split(".")[1] + ".e30.AAAAAAAAAAAAAAAAAAAAAA",
        lambda sid: "not-a-session",
        lambda sid: sid.replace("s1.", "q1.", 1),
    ],
    ids=["capabilities", "expiry", "mac", "empty-payload", "garbage", "other-kind"],
)
def test_a_tampered_session_is_404_and_the_real_one_still_works(
    legacy: LegacyClient, forge: Any
) -> None:
    assert legacy.session_id is not None
    real = legacy.session_id
    legacy.session_id = forge(real)
    assert_error(legacy.request("tools/list"), 404, -32600)
    legacy.session_id = real
    assert legacy.result("ping") == {}


def test_a_protocol_version_header_other_than_the_sessions_is_400(legacy: LegacyClient) -> None:
    response = legacy.request("tools/list", **{"mcp-protocol-version": "2025-06-18"})
    assert_error(response, 400, -32600)


def test_get_without_last_event_id_is_405_and_without_session_stays_405_post(
    legacy: LegacyClient,
) -> None:
    response = legacy.http.send(
        b"", http_method="GET", headers={**legacy.headers(), "accept": "text/event-stream"}
    )
    assert response.status == 405
    assert response.headers["allow"] == "POST, DELETE"
    bare = legacy.http.send(b"", http_method="GET")
    assert bare.status == 405
    assert bare.headers["allow"] == "POST"


def test_a_foreign_origin_is_refused_on_get_and_delete(legacy: LegacyClient) -> None:
    for verb in ("GET", "DELETE"):
        response = legacy.http.send(
            b"",
            http_method=verb,
            headers={**legacy.headers(), "origin": "http://evil.example", "last-event-id": "x"},
        )
        assert response.status == 403, verb
    assert legacy.result("ping") == {}


def test_modern_requests_are_untouched_by_the_legacy_side(transport: HttpTransport) -> None:
    modern = McpClient(transport)
    assert modern.result("tools/list")["resultType"] == "complete"
    assert modern.request("initialize", {}, meta=envelope()).status == 404


def test_a_throttled_session_table_answers_busy_not_internal_error(
    transport: HttpTransport, legacy: LegacyClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The session read every request makes (and `DELETE`'s write after it) may stay throttled
    past the SDK's retries: the client is told to retry (503, Retry-After), as for tasks."""
    from mcp_tasks_aws.tasks.ports import Throttled

    def throttled(*args: object, **kwargs: object) -> None:
        raise Throttled(2)

    assert transport.legacy is not None
    endpoint = transport.legacy._get()  # type: ignore[attr-defined]  # built by initialize
    monkeypatch.setattr(endpoint.sessions, "state", throttled)
    for response in (
        legacy.request("tools/list"),
        legacy.http.send(b"", http_method="DELETE", headers=legacy.headers()),
    ):
        assert response.status == 503, response.body
        assert response.headers["retry-after"] == "2"
        assert "busy" in response.json["error"]["message"]
    monkeypatch.undo()
    assert legacy.result("ping") == {}
