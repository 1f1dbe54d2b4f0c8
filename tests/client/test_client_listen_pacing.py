"""Listening at the polling pace: a window that brought no news (nothing the wait had not seen,
such as the server's snapshot of an unchanged task) is followed by the polling delay, however
long it lasted, and an answer to the task's questions cuts that delay short.

Against the scripted fake session of `test_client_listen_waiter`.
"""

from __future__ import annotations

import anyio
import pytest

from client.test_client_listen_waiter import ListenSession, Window, elicit, run, task
from mcp_tasks_aws.client.listen_stream import TaskListener
from mcp_tasks_aws.client.polling import PollPolicy

pytestmark = pytest.mark.anyio

INTERVAL = PollPolicy(floor=0.05, cap=0.05, default=0.05, jitter=0.0)


def note(snapshot: dict[str, object]) -> dict[str, object]:
    """The `notifications/tasks` params of a snapshot (what the server's window sends)."""
    return {**snapshot, "_meta": {"io.modelcontextprotocol/subscriptionId": 1}}


async def test_windows_that_resend_an_unchanged_snapshot_are_paced_like_polls() -> None:
    unchanged = task("working", pollIntervalMs=50)
    session = ListenSession(
        TaskListener(), [Window(notify=[note(unchanged)], seconds=0.001)], [unchanged]
    )
    with anyio.move_on_after(0.5):
        await run(session, policy=INTERVAL, cancel_if_abandoned=False)
    # One window per 50 ms pause at most (without the pause: one every few milliseconds).
    assert 3 <= session.count("subscriptions/listen") <= 12


async def test_a_long_window_without_news_is_followed_by_the_pause_too() -> None:
    unchanged = task("working", pollIntervalMs=200)
    session = ListenSession(
        TaskListener(), [Window(notify=[note(unchanged)], seconds=0.1)], [unchanged]
    )
    slow = PollPolicy(floor=0.2, cap=0.2, default=0.2, jitter=0.0)
    with anyio.move_on_after(0.65):
        await run(session, policy=slow, cancel_if_abandoned=False)
    # Each cycle is a 0.1 s window then a 0.2 s pause: two or three windows, not six.
    assert 2 <= session.count("subscriptions/listen") <= 3


async def test_a_window_with_news_is_followed_by_the_next_at_once() -> None:
    first = task("working", "10:00:01", pollIntervalMs=10_000)
    later = task("working", "10:00:02", statusMessage="half way", pollIntervalMs=10_000)
    done = task("completed", "10:00:03", result={"content": [{"type": "text", "text": "ok"}]})
    session = ListenSession(
        TaskListener(),
        [Window(notify=[note(first)]), Window(notify=[note(later)]), Window(notify=[note(done)])],
        [first, later, done],
    )
    with anyio.fail_after(2):  # a 10 s pause anywhere would time out
        result = await run(session, policy=PollPolicy(floor=10, cap=10, default=10, jitter=0.0))
    assert result.content[0].text == "ok"


async def test_answering_a_question_cuts_the_pause_short() -> None:
    asking = task("input_required", "10:00:01", inputRequests={"a": elicit("ok?")})
    asking["pollIntervalMs"] = 10_000  # a parked task's hint: the longest interval
    done = task("completed", "10:00:03", result={"content": [{"type": "text", "text": "ok"}]})
    session = ListenSession(
        TaskListener(),
        [Window(notify=[note(asking)]), Window(notify=[note(asking)]), Window(notify=[note(done)])],
        [asking, asking, done],
    )
    with anyio.fail_after(2):
        result = await run(session, policy=PollPolicy(floor=10, cap=10, default=10, jitter=0.0))
    assert result.content[0].text == "ok"
    assert session.asked == ["a"]
