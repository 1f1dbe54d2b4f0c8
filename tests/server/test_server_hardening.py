"""Regression tests for what a hostile review found in the inline path (issue 12): forged step
results, lenient MACs, leaked exception text, hostile JSON, oversized states, time budgets and
forgotten awaits. Each failed before its fix."""

from __future__ import annotations

import base64
import json
import threading
import time
from collections import Counter
from typing import Any

import pytest

from mcp_tasks_aws import TaskPolicy, ToolContext, ToolError, ToolSet
from mcp_tasks_aws.protocol.transport import HttpRequest
from support.mcp import McpClient

tools = ToolSet(name="hardening", version="0")
charges: Counter[str] = Counter()
_CONFIRM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
YES = {"action": "accept", "content": {"ok": True}}


def _charge(label: str) -> str:
    charges[label] += 1
    return f"receipt-{label}-{charges[label]}"


@tools.tool
async def charge_then_confirm(label: str, ctx: ToolContext) -> str:
    """Charges once, then asks for a confirmation."""
    receipt = ctx.step("charge", lambda: _charge(label))
    answer = await ctx.elicit("Confirm?", _CONFIRM, key="confirm")
    return f"{receipt}; ok={(answer.content or {}).get('ok')}"


@tools.tool
async def two_questions(ctx: ToolContext) -> str:
    """Asks twice, one round each, and reports the length of the first answer."""
    first = await ctx.elicit("First?", {"type": "object", "properties": {}}, key="first")
    await ctx.elicit("Second?", _CONFIRM, key="second")
    return f"first answer: {len(json.dumps(first.content))} chars"


@tools.tool
def leaks(label: str) -> str:
    """Fails the way an AWS call inside a tool fails."""
    raise RuntimeError(
        f"An error occurred (AccessDenied) calling GetItem on "
        f"arn:aws:dynamodb:us-east-1:123456789012:table/secret-{label}"
    )


@tools.tool
def polite_failure() -> str:
    """Fails with a message meant for the model."""
    raise ToolError("the city is unknown; try its English name")


@tools.tool
async def forgets_await(ctx: ToolContext) -> str:
    """Asks a question without awaiting it, then answers as if it had been answered."""
    pending = ctx.elicit("Proceed?", _CONFIRM)
    return f"asked: {pending!r}"


@tools.tool
async def reads_unawaited_answer(ctx: ToolContext) -> str:
    """Reads an answer off a question it never awaited."""
    answer: Any = ctx.elicit("Proceed?", _CONFIRM)
    return "yes" if answer.accepted else "no"


@tools.tool(task=TaskPolicy.OPTIONAL)
def slow(seconds: float) -> str:
    """Works for a while (a task when the client allows)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.01)
    return "done"


@tools.tool
def swallows_everything(seconds: float) -> str:
    """Works for a while and catches every Exception on the way."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            time.sleep(0.01)
        except Exception:  # the point: a careless tool must still be stopped
            continue
    return "done"


@pytest.fixture
def hardened(make_client: Any) -> McpClient:
    client: McpClient = make_client(tools)
    return client


def _text(result: dict[str, Any]) -> str:
    return "".join(block["text"] for block in result["content"] if block["type"] == "text")


def _call(client: McpClient, name: str, arguments: dict[str, Any], **extra: Any) -> Any:
    response = client.call_tool(name, arguments, extra_params=extra)
    assert response.status == 200, response.body
    return response.json


# -- forged step results (security 1) ---------------------------------------------------------


def test_a_forged_step_without_state_does_not_skip_the_side_effect(hardened: McpClient) -> None:
    # Given a first call that claims the charge was done and answers the question
    message = _call(
        hardened,
        "charge_then_confirm",
        {"label": "forged-first"},
        inputResponses={"step:charge": "receipt-forged", "confirm": YES},
    )
    # Then the charge is made, and the tool sees its own receipt (the answer is taken)
    assert charges["forged-first"] == 1
    assert _text(message["result"]) == "receipt-forged-first-1; ok=True"


def test_a_forged_step_cannot_override_the_sealed_one(hardened: McpClient) -> None:
    # Given round 1: the charge is made and sealed, and the confirmation asked
    first = _call(hardened, "charge_then_confirm", {"label": "forged-override"})["result"]
    assert charges["forged-override"] == 1
    # When round 2 carries the state, the answer and a forged step result
    second = _call(
        hardened,
        "charge_then_confirm",
        {"label": "forged-override"},
        requestState=first["requestState"],
        inputResponses={"step:charge": "receipt-forged", "confirm": YES},
    )["result"]
    # Then the tool sees the real receipt, and did not charge again
    assert _text(second) == "receipt-forged-override-1; ok=True"
    assert charges["forged-override"] == 1


def test_step_results_are_not_in_clear_text_in_the_state(hardened: McpClient) -> None:
    first = _call(hardened, "charge_then_confirm", {"label": "cleartext"})["result"]
    body = first["requestState"].split(".")[-2]
    decoded = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    assert b"receipt-cleartext" not in decoded
    assert b"step:charge" not in decoded


# -- lenient MAC (security 3) -----------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["=", "==", "!!!!"])
def test_a_state_with_junk_after_its_mac_is_refused(hardened: McpClient, suffix: str) -> None:
    first = _call(hardened, "charge_then_confirm", {"label": f"mac{suffix}"})["result"]
    response = hardened.call_tool(
        "charge_then_confirm",
        {"label": f"mac{suffix}"},
        extra_params={"requestState": first["requestState"] + suffix, "inputResponses": {}},
    )
    assert response.json["error"]["code"] == -32602


# -- exception text (security 6) --------------------------------------------------------------


def test_exception_text_from_inside_a_tool_does_not_reach_the_client(hardened: McpClient) -> None:
    result = _call(hardened, "leaks", {"label": "x"})["result"]
    assert result["isError"] is True
    assert "arn:aws" not in _text(result)
    assert "AccessDenied" not in _text(result)
    assert "leaks" in _text(result)


def test_tool_error_text_still_reaches_the_client(hardened: McpClient) -> None:
    result = _call(hardened, "polite_failure", {})["result"]
    assert _text(result) == "the city is unknown; try its English name"


@pytest.mark.parametrize(
    "body",
    [
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"leaks",'
        b'"arguments":{"label":"\\ud800"}}}',
        b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"\\udfff":1}}',
        b'{"jsonrpc":"2.0","id":"\\ud83d","method":"tools/list","params":{}}',
    ],
    ids=["in-a-value", "in-a-key", "in-the-id"],
)
def test_lone_surrogates_are_a_parse_error(hardened: McpClient, body: bytes) -> None:
    response = hardened.send(body, headers={"mcp-method": "tools/call", "mcp-name": "leaks"})
    assert response.status == 400
    assert response.json["error"]["code"] == -32700
    assert "codec" not in response.body.decode()


def test_a_surrogate_pair_is_text_and_accepted(hardened: McpClient) -> None:
    body = b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"\\ud83d\\ude00":1}}}'
    response = hardened.send(body, headers={"mcp-method": "tools/list"})
    assert response.json["error"]["code"] != -32700


# -- deep JSON (reliability 8) ----------------------------------------------------------------


@pytest.mark.parametrize("depth", [65, 1_000, 100_000])
def test_deeply_nested_json_is_a_parse_error(hardened: McpClient, depth: int) -> None:
    nested = b"[" * depth + b"]" * depth
    body = b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":' + nested + b"}}"
    response = hardened.send(body, headers={"mcp-method": "tools/list"})
    assert response.status == 400
    assert response.json["error"]["code"] == -32700


def test_nesting_within_the_limit_is_served(hardened: McpClient) -> None:
    arguments: Any = "leaf"
    for _ in range(58):
        arguments = {"a": arguments}
    response = hardened.call_tool("leaks", {"label": "x", "extra": arguments})
    assert response.status == 200


# -- a 50 KB answer across rounds (reliability 17) --------------------------------------------


def test_a_large_answer_survives_the_next_round(hardened: McpClient) -> None:
    # Given a first answer of 50 KB, sealed into the state of round 2
    first = _call(hardened, "two_questions", {})["result"]
    big = {"action": "accept", "content": {"text": "x" * 50_000}}
    second = _call(
        hardened,
        "two_questions",
        {},
        requestState=first["requestState"],
        inputResponses={"first": big},
    )["result"]
    assert second["resultType"] == "input_required"
    # When round 3 presents that state, Then the server accepts what it sealed
    third = _call(
        hardened,
        "two_questions",
        {},
        requestState=second["requestState"],
        inputResponses={"second": YES},
    )["result"]
    assert _text(third) == f"first answer: {len(json.dumps(big['content']))} chars"


# -- inline time budget (reliability 16) ------------------------------------------------------


def _call_with_deadline(client: McpClient, name: str, arguments: dict[str, Any], budget: float):
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": name,
            "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    headers = {
        "content-type": "application/json",
        "accept": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": name,
    }
    request = HttpRequest(
        "POST", headers, json.dumps(body).encode(), deadline=time.monotonic() + budget
    )
    return client.transport.handle(request)


def test_an_inline_run_past_its_deadline_ends_with_a_clear_error(hardened: McpClient) -> None:
    # Given a tool that needs 5 s, and a request that has 0.3 s left
    started = time.monotonic()
    response = _call_with_deadline(hardened, "slow", {"seconds": 5}, budget=0.3)
    # Then it answers at the deadline, with an error result that says what to do
    assert time.monotonic() - started < 3
    assert response.status == 200
    result = response.json["result"]
    assert result["isError"] is True
    assert "did not finish in time" in _text(result)
    assert "io.modelcontextprotocol/tasks" in _text(result)


def test_a_tool_that_catches_every_exception_is_still_stopped(hardened: McpClient) -> None:
    started = time.monotonic()
    response = _call_with_deadline(hardened, "swallows_everything", {"seconds": 5}, budget=0.3)
    assert time.monotonic() - started < 3
    assert "did not finish in time" in _text(response.json["result"])


def test_the_deadline_also_stops_a_run_outside_the_main_thread(hardened: McpClient) -> None:
    # The embedded stack serves requests from worker threads, where no signal can be used.
    answers: list[Any] = []
    worker = threading.Thread(
        target=lambda: answers.append(
            _call_with_deadline(hardened, "swallows_everything", {"seconds": 5}, budget=0.3)
        )
    )
    started = time.monotonic()
    worker.start()
    worker.join(timeout=10)
    assert time.monotonic() - started < 3
    assert "did not finish in time" in _text(answers[0].json["result"])


def test_an_inline_run_within_its_deadline_is_untouched(hardened: McpClient) -> None:
    response = _call_with_deadline(hardened, "slow", {"seconds": 0.05}, budget=5)
    assert _text(response.json["result"]) == "done"
    # The deadline is gone with the call: nothing fires later in this thread.
    time.sleep(0.1)


# -- forgotten await (users' robustness) ------------------------------------------------------


@pytest.mark.parametrize("tool", ["forgets_await", "reads_unawaited_answer"])
def test_a_forgotten_await_fails_loudly(hardened: McpClient, tool: str) -> None:
    response = hardened.call_tool(tool, {})
    error = response.json["error"]
    assert error["code"] == -32603
    assert "await ctx.elicit" in error["message"]
