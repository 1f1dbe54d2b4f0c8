"""The wait loop against a scripted fake session: dedup, updates, terminal states, abandoning.

No HTTP here: `FakeSession` stands in for the SDK's `ClientSession` (the two methods the loop
uses) and plays a scripted sequence of `tasks/get` answers.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, cast

import anyio
import pytest
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, ElicitRequest, ElicitResult, ErrorData

from mcp_tasks_aws.client.errors import (
    TaskCancelledError,
    TaskFailedError,
    TaskInputError,
    TaskNotFoundError,
)
from mcp_tasks_aws.client.polling import Backoff, PollPolicy
from mcp_tasks_aws.client.waiter import TaskProgress, WaitOptions, wait_for_task
from mcp_tasks_aws.client.wire import TaskAck, TaskSnapshot

pytestmark = pytest.mark.anyio

FAST = PollPolicy(floor=0.001, cap=0.005, default=0.001, jitter=0.0)


def task(status: str, **fields: Any) -> dict[str, Any]:
    return {
        "resultType": "complete",
        "taskId": "t1",
        "status": status,
        "createdAt": "2026-07-28T10:00:00Z",
        "lastUpdatedAt": "2026-07-28T10:00:00Z",
        "ttlMs": 60000,
        "pollIntervalMs": 1,
        **fields,
    }


def elicit(message: str) -> dict[str, Any]:
    return {
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
        },
    }


DONE = task("completed", result={"content": [{"type": "text", "text": "done"}]})


class FakeSession:
    """Answers tasks/get from a script (the last entry repeats); records everything else."""

    def __init__(
        self,
        script: list[dict[str, Any] | Exception],
        answer: Callable[[str], ElicitResult | ErrorData] | None = None,
    ) -> None:
        self.script = script
        self.answer = answer or (lambda _key: ElicitResult(action="accept", content={"ok": True}))
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.asked: list[str] = []

    async def send_request(self, request: Any, result_type: Any, timeout: Any = None) -> Any:
        dumped = request.model_dump(by_alias=True, mode="json", exclude_none=True)
        self.sent.append((dumped["method"], dumped["params"]))
        if dumped["method"] != "tasks/get":
            return TaskAck()
        entry = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if isinstance(entry, Exception):
            raise entry
        return TaskSnapshot.model_validate(entry, by_name=False)

    async def dispatch_input_request(
        self, ctx: ClientRequestContext, request: ElicitRequest
    ) -> ElicitResult | ErrorData:
        self.asked.append(str(ctx.request_id))
        return self.answer(str(ctx.request_id))

    def methods(self) -> list[str]:
        return [method for method, _ in self.sent]

    def updates(self) -> list[dict[str, Any]]:
        return [
            params["inputResponses"] for method, params in self.sent if method == "tasks/update"
        ]


async def run(session: FakeSession, answered: set[str] | None = None, **options: Any) -> Any:
    with anyio.fail_after(5):
        return await wait_for_task(
            cast(ClientSession, session),
            "t1",
            options=WaitOptions(policy=FAST, **options),
            answered=answered,
        )


async def test_completed_returns_the_call_tool_result() -> None:
    session = FakeSession([task("working"), DONE])
    result = await run(session)
    assert result.content[0].text == "done"
    assert session.methods() == ["tasks/get", "tasks/get"]


async def test_input_requests_are_answered_once_per_key_across_polls() -> None:
    session = FakeSession(
        [
            task("input_required", inputRequests={"k1": elicit("one")}),
            task("input_required", inputRequests={"k1": elicit("one")}),  # not yet applied
            task("input_required", inputRequests={"k1": elicit("one"), "k2": elicit("two")}),
            task("input_required", inputRequests={"k2": elicit("two")}),
            task("working"),
            DONE,
        ]
    )
    await run(session)
    assert sorted(session.asked) == ["k1", "k2"]
    answered = [key for update in session.updates() for key in update]
    assert sorted(answered) == ["k1", "k2"]
    assert session.updates()[0]["k1"] == {"action": "accept", "content": {"ok": True}}


async def test_keys_answered_by_an_earlier_wait_are_not_asked_again() -> None:
    answered: set[str] = set()
    script = [task("input_required", inputRequests={"k1": elicit("one")}), task("working")]
    with anyio.move_on_after(0.05):
        await run(FakeSession(list(script)), answered=answered, cancel_if_abandoned=False)
    assert answered == {"k1"}
    again = FakeSession([task("input_required", inputRequests={"k1": elicit("one")}), DONE])
    await run(again, answered=answered)
    assert again.asked == []


async def test_every_tasks_request_names_the_task() -> None:
    session = FakeSession([task("input_required", inputRequests={"k": elicit("?")}), DONE])
    await run(session)
    assert {params["taskId"] for _, params in session.sent} == {"t1"}


async def test_status_changes_reach_the_callback_once_each() -> None:
    seen: list[tuple[str, str | None]] = []

    def on_status(progress: TaskProgress) -> None:
        seen.append((progress.status, progress.status_message))

    session = FakeSession(
        [
            task("working", statusMessage="1/2"),
            task("working", statusMessage="1/2"),
            task("working", statusMessage="2/2"),
            DONE,
        ]
    )
    await run(session, on_status=on_status)
    assert seen == [("working", "1/2"), ("working", "2/2"), ("completed", None)]


async def test_failed_raises_with_the_json_rpc_error() -> None:
    error = {"code": -32603, "message": "upstream broke", "data": {"why": "x"}}
    session = FakeSession([task("failed", error=error, statusMessage="upstream broke")])
    with pytest.raises(TaskFailedError) as caught:
        await run(session)
    assert (caught.value.code, caught.value.message, caught.value.data) == (
        -32603,
        "upstream broke",
        {"why": "x"},
    )
    assert isinstance(caught.value, MCPError)
    assert caught.value.task_id == "t1"


async def test_cancelled_raises_its_own_error() -> None:
    session = FakeSession([task("cancelled", statusMessage="by someone")])
    with pytest.raises(TaskCancelledError, match="by someone"):
        await run(session)


async def test_a_refused_input_request_fails_and_cancels_the_task() -> None:
    session = FakeSession(
        [task("input_required", inputRequests={"k": elicit("?")})],
        answer=lambda _key: ErrorData(code=-32600, message="no user here"),
    )
    with pytest.raises(TaskInputError, match="no user here") as caught:
        await run(session)
    assert caught.value.key == "k"
    assert caught.value.method == "elicitation/create"
    assert session.methods()[-1] == "tasks/cancel"
    assert "tasks/update" not in session.methods()


async def test_an_unknown_kind_of_input_request_fails_clearly() -> None:
    session = FakeSession(
        [task("input_required", inputRequests={"k": {"method": "x/unknown", "params": {}}})]
    )
    with pytest.raises(TaskInputError, match="does not understand"):
        await run(session, cancel_if_abandoned=False)
    assert "tasks/cancel" not in session.methods()


async def test_transient_poll_errors_are_retried() -> None:
    closed = MCPError(code=CONNECTION_CLOSED, message="Connection closed")
    session = FakeSession([closed, closed, DONE])
    result = await run(session)
    assert result.content[0].text == "done"


async def test_persistent_poll_errors_end_the_wait() -> None:
    closed = MCPError(code=CONNECTION_CLOSED, message="Connection closed")
    session = FakeSession([closed])
    with pytest.raises(MCPError, match="Connection closed"):
        await run(session, max_transient_errors=2, cancel_if_abandoned=False)


async def test_unknown_task_raises_not_found() -> None:
    session = FakeSession([MCPError(code=-32602, message="Task not found")])
    with pytest.raises(TaskNotFoundError):
        await run(session)
    assert "tasks/cancel" not in session.methods()


async def test_cancelling_the_wait_sends_tasks_cancel() -> None:
    session = FakeSession([task("working")])
    with anyio.move_on_after(0.05):
        await run(session)
    assert session.methods()[-1] == "tasks/cancel"


async def test_cancelling_the_wait_can_leave_the_task_running() -> None:
    session = FakeSession([task("working")])
    with anyio.move_on_after(0.05):
        await run(session, cancel_if_abandoned=False)
    assert set(session.methods()) == {"tasks/get"}


class HintLog(PollPolicy):
    """A cadence that records the hint of each response it paces by (and waits 1 ms)."""

    def __init__(self) -> None:
        super().__init__(floor=0.001, cap=0.005, default=0.001, jitter=0.0)
        object.__setattr__(self, "hints", [])

    def backoff(self, rng: Any = None) -> Backoff:
        hints: list[Any] = self.hints  # type: ignore[attr-defined]

        class Recording(Backoff):
            def next_delay(self, poll_interval_ms: int | float | None) -> float:
                hints.append(poll_interval_ms)
                return 0.001

        return Recording(self, random.Random(0))


async def test_the_wait_paces_each_poll_by_the_latest_hint_as_it_grows() -> None:
    # Given a server whose suggested interval grows with the task's age (adaptive polling)
    session = FakeSession(
        [
            task("working", pollIntervalMs=500),
            task("working", pollIntervalMs=1000),
            task("working", pollIntervalMs=4000),
            task("completed", pollIntervalMs=10000, result={"content": []}),
        ]
    )
    policy = HintLog()
    # When the client waits by polling
    with anyio.fail_after(5):
        await wait_for_task(cast(ClientSession, session), "t1", options=WaitOptions(policy=policy))
    # Then each sleep followed the hint of the answer just read, not the first one
    assert policy.hints == [500, 1000, 4000]  # type: ignore[attr-defined]
