"""Waiting by listening, against a scripted fake session: windows, their `tasks/get`, fallbacks.

No HTTP here: `ListenSession` stands in for the SDK's `ClientSession`. A listen request plays
the next scripted window: its notifications go to the `TaskListener` (as the SDK's notification
binding would hand them over), then the window lasts its duration and ends, or fails.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import anyio
import pytest
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    ElicitRequest,
    ElicitResult,
    ErrorData,
    ServerCapabilities,
    SubscriptionsListenResult,
)

from mcp_tasks_aws.client.listen_stream import TaskListener, TaskNotificationParams
from mcp_tasks_aws.client.polling import PollPolicy
from mcp_tasks_aws.client.waiter import TaskProgress, WaitOptions, wait_for_task
from mcp_tasks_aws.client.wire import TASKS_EXTENSION, TaskAck, TaskSnapshot

pytestmark = pytest.mark.anyio

FAST = PollPolicy(floor=0.001, cap=0.005, default=0.001, jitter=0.0)


def task(status: str, at: str = "10:00:00", **fields: Any) -> dict[str, Any]:
    return {
        "taskId": "t1",
        "status": status,
        "createdAt": "2026-07-28T10:00:00Z",
        "lastUpdatedAt": f"2026-07-28T{at}Z",
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


DONE = task("completed", "10:00:09", result={"content": [{"type": "text", "text": "done"}]})


@dataclass
class Window:
    """One scripted listen window: what it delivers, how long it lasts, how it ends."""

    notify: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.01
    error: Exception | None = None


class ListenSession:
    """Plays scripted windows and `tasks/get` answers (the last entry of each repeats)."""

    def __init__(
        self,
        listener: TaskListener,
        windows: list[Window],
        gets: list[dict[str, Any]],
        *,
        advertised: bool = True,
        protocol_version: str = "2026-07-28",
        answer: Callable[[str], ElicitResult | ErrorData] | None = None,
    ) -> None:
        self.listener = listener
        self.windows = windows
        self.gets = gets
        self.protocol_version = protocol_version
        extensions = {TASKS_EXTENSION: {}} if advertised else None
        self.server_capabilities = ServerCapabilities(extensions=extensions)
        self.answer = answer or (lambda _key: ElicitResult(action="accept", content={"ok": True}))
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.asked: list[str] = []

    async def send_request(self, request: Any, result_type: Any, timeout: Any = None) -> Any:
        dumped = request.model_dump(by_alias=True, mode="json", exclude_none=True)
        method = dumped["method"]
        self.sent.append((method, dumped["params"]))
        if method == "subscriptions/listen":
            assert dumped["params"]["notifications"] == {"taskIds": ["t1"]}
            window = self.windows.pop(0) if len(self.windows) > 1 else self.windows[0]
            for params in window.notify:
                await self.listener.deliver(TaskNotificationParams.model_validate(params))
            await anyio.sleep(window.seconds)
            self.sent.append(("(window ended)", {}))
            if window.error is not None:
                raise window.error
            return SubscriptionsListenResult()
        if method == "tasks/get":
            entry = self.gets.pop(0) if len(self.gets) > 1 else self.gets[0]
            return TaskSnapshot.model_validate({"resultType": "complete", **entry}, by_name=False)
        return TaskAck()

    async def dispatch_input_request(
        self, ctx: ClientRequestContext, request: ElicitRequest
    ) -> ElicitResult | ErrorData:
        self.asked.append(str(ctx.request_id))
        return self.answer(str(ctx.request_id))

    def methods(self) -> list[str]:
        return [method for method, _ in self.sent if method != "(window ended)"]

    def count(self, method: str) -> int:
        return self.methods().count(method)


async def run(session: ListenSession, answered: set[str] | None = None, **options: Any) -> Any:
    reattach = options.pop("reattach", False)
    values: dict[str, Any] = {"policy": FAST, "listener": session.listener, **options}
    with anyio.fail_after(5):
        return await wait_for_task(
            cast(ClientSession, session),
            "t1",
            options=WaitOptions(**values),
            answered=answered,
            initial=None if reattach else CREATED,
        )


CREATED = TaskSnapshot.model_validate({"resultType": "task", **task("working")}, by_name=False)


async def test_a_terminal_notification_ends_the_wait_without_polling() -> None:
    session = ListenSession(TaskListener(), [Window([DONE], seconds=0.05)], [task("working")])
    result = await run(session)
    assert result.content[0].text == "done"
    assert session.methods() == ["subscriptions/listen"]


async def test_every_window_without_the_end_costs_one_tasks_get() -> None:
    windows = [Window(), Window([task("working", "10:00:01")]), Window(), Window([DONE])]
    session = ListenSession(TaskListener(), windows, [task("working")])
    result = await run(session)
    assert result.content[0].text == "done"
    assert session.count("subscriptions/listen") == 4
    assert session.count("tasks/get") == 3


async def test_the_windows_tasks_get_is_sent_while_the_window_is_open() -> None:
    """A change made before the window opened is seen within `listen_check_after`."""
    asking = task("input_required", "10:00:01", inputRequests={"k1": elicit("?")})
    windows = [Window(seconds=0.5), Window([DONE], seconds=0.05)]
    session = ListenSession(TaskListener(), windows, [asking])
    await run(session, listen_check_after=0.05)
    assert [m for m, _ in session.sent][:4] == [
        "subscriptions/listen",
        "tasks/get",
        "tasks/update",
        "(window ended)",
    ]
    assert session.asked == ["k1"]


async def test_input_requests_from_notifications_are_answered_once() -> None:
    asking = task("input_required", "10:00:01", inputRequests={"k1": elicit("one")})
    windows = [
        Window([asking]),
        Window([asking]),  # repeated: not yet applied
        Window([task("working", "10:00:02")]),
        Window([DONE]),
    ]
    statuses: list[str] = []
    session = ListenSession(TaskListener(), windows, [asking, task("working", "10:00:02")])
    await run(session, on_status=lambda p: statuses.append(p.status))
    assert session.asked == ["k1"]
    updates = [params for method, params in session.sent if method == "tasks/update"]
    assert updates == [
        {"taskId": "t1", "inputResponses": {"k1": {"action": "accept", "content": {"ok": True}}}}
    ]
    assert statuses == ["working", "input_required", "working", "completed"]


async def test_a_late_older_notification_does_not_move_the_status_back() -> None:
    seen: list[tuple[str, str | None]] = []

    def on_status(progress: TaskProgress) -> None:
        seen.append((progress.status, progress.status_message))

    windows = [
        Window(),
        Window([task("working", "10:00:01", statusMessage="old")]),  # older than the get
        Window([DONE]),
    ]
    gets = [task("working", "10:00:05", statusMessage="new")]
    session = ListenSession(TaskListener(), windows, gets)
    await run(session, on_status=on_status)
    assert seen == [("working", None), ("working", "new"), ("completed", None)]


async def test_reattaching_looks_at_the_task_before_listening() -> None:
    session = ListenSession(TaskListener(), [Window([DONE])], [task("working")])
    await run(session, reattach=True)
    assert session.methods()[:2] == ["tasks/get", "subscriptions/listen"]


async def test_a_server_that_does_not_advertise_the_extension_is_polled() -> None:
    session = ListenSession(
        TaskListener(), [Window([DONE])], [task("working"), DONE], advertised=False
    )
    await run(session)
    assert session.methods() == ["tasks/get", "tasks/get"]


async def test_an_older_protocol_version_is_polled() -> None:
    session = ListenSession(TaskListener(), [Window([DONE])], [DONE], protocol_version="2025-11-25")
    await run(session)
    assert session.methods() == ["tasks/get"]


async def test_poll_mode_never_listens() -> None:
    session = ListenSession(TaskListener(), [Window([DONE])], [task("working"), DONE])
    await run(session, wait_mode="poll")
    assert "subscriptions/listen" not in session.methods()


async def test_without_a_listener_the_wait_polls() -> None:
    session = ListenSession(TaskListener(), [Window([DONE])], [DONE])
    await run(session, listener=None)
    assert session.methods() == ["tasks/get"]


async def test_method_not_found_falls_back_to_polling_and_is_remembered() -> None:
    missing = MCPError(code=METHOD_NOT_FOUND, message="Method not found: subscriptions/listen")
    listener = TaskListener()
    session = ListenSession(listener, [Window(error=missing)], [task("working"), DONE])
    result = await run(session)
    assert result.content[0].text == "done"
    assert session.methods()[0] == "subscriptions/listen"
    assert session.count("subscriptions/listen") == 1
    assert not listener.available(cast(ClientSession, session))

    session.gets = [DONE]
    await run(session)
    assert session.count("subscriptions/listen") == 1  # not asked again on this session


async def test_a_failed_window_falls_back_to_polling_for_that_wait_only() -> None:
    broken = MCPError(code=INTERNAL_ERROR, message="SSE stream ended without a response")
    listener = TaskListener()
    session = ListenSession(
        listener, [Window(error=broken), Window([DONE])], [task("working"), DONE]
    )
    result = await run(session)
    assert result.content[0].text == "done"
    assert session.count("subscriptions/listen") == 1
    assert session.count("tasks/get") == 2
    assert listener.available(cast(ClientSession, session))

    await run(session)  # the next wait listens again
    assert session.count("subscriptions/listen") == 2


async def test_any_exception_from_a_window_falls_back() -> None:
    session = ListenSession(TaskListener(), [Window(error=ValueError("junk"))], [DONE])
    result = await run(session)
    assert result.content[0].text == "done"


async def test_a_server_closing_windows_at_once_is_listened_to_at_the_polling_pace() -> None:
    session = ListenSession(
        TaskListener(), [Window(seconds=0)], [task("working", pollIntervalMs=50)]
    )
    policy = PollPolicy(floor=0.05, cap=0.05, default=0.05, jitter=0.0)
    with anyio.move_on_after(0.5):
        await run(session, policy=policy, cancel_if_abandoned=False)
    assert 3 <= session.count("subscriptions/listen") <= 12


async def test_cancelling_a_listening_wait_sends_tasks_cancel() -> None:
    session = ListenSession(TaskListener(), [Window(seconds=30)], [task("working")])
    with anyio.move_on_after(0.1):
        await run(session)
    assert session.methods()[-1] == "tasks/cancel"
    assert session.count("subscriptions/listen") == 1


async def test_notifications_for_other_tasks_are_not_delivered() -> None:
    other = {**DONE, "taskId": "t2"}
    session = ListenSession(TaskListener(), [Window([other]), Window([DONE])], [task("working")])
    await run(session)
    assert session.count("subscriptions/listen") == 2
