"""Both front doors on the embedded stack (`MCP_TASKS_FRONT_DOOR`), timed by the client.

- An inline call's progress notifications reach the client as the tool makes them, behind
  either door (before, they all came with the result).
- The streaming door serves the ASGI app the Lambda Web Adapter serves deployed, with the
  template's settings for it (240 s windows and inline runs, the function's 250 s); a run
  with nothing to say yet starts its answer with an SSE comment (API Gateway wants a first
  byte in time); one that outlasts its deadline ends as an inline run always has.
- A client that leaves an inline call or a listen window stops it: the function stops
  holding. CORS preflight is API Gateway's answer, never the function's.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_tasks_aws.local.stack import EmbeddedStack

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")
VERSION = "2026-07-28"
FILES, SECONDS_PER_FILE = 3, 0.5


@pytest.fixture(scope="module", params=["buffered", "streaming"])
def door_stack(request: pytest.FixtureRequest) -> Iterator[EmbeddedStack]:
    with EmbeddedStack(env={"MCP_TASKS_FRONT_DOOR": request.param}, sweep_interval_s=None) as stack:
        yield stack


@pytest.fixture(scope="module")
def streaming_stack() -> Iterator[EmbeddedStack]:
    env = {"MCP_TASKS_FRONT_DOOR": "streaming", "MCP_TASKS_INLINE_DEADLINE_MS": "1500"}
    with EmbeddedStack(env=env, sweep_interval_s=None) as stack:
        yield stack


def post(
    stack: EmbeddedStack, method: str, params: dict[str, Any], meta: dict[str, Any] | None = None
) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse, float]:
    """Send a 2026-07-28 request; the response is read by the caller (as it streams)."""
    full_meta = {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        **(meta or {}),
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": full_meta}}
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": VERSION,
        "mcp-method": method,
    }
    if "name" in params:
        headers["mcp-name"] = params["name"]
    conn = http.client.HTTPConnection(stack.host, stack.port, timeout=30)
    started = time.monotonic()
    conn.request("POST", "/mcp", json.dumps(body), headers)
    return conn, conn.getresponse(), started


def events(response: http.client.HTTPResponse, started: float) -> Iterator[tuple[float, Any]]:
    """Each SSE line as it arrives: (seconds since the request, message or comment)."""
    while line := response.readline():
        if line.startswith(b"data:"):
            yield time.monotonic() - started, json.loads(line[5:])
        elif line.startswith(b":"):
            yield time.monotonic() - started, line.decode().strip()


def checksum(stack: EmbeddedStack, files: int, meta: dict[str, Any] | None = None) -> Any:
    arguments = {"files": files, "seconds_per_file": SECONDS_PER_FILE}
    return post(stack, "tools/call", {"name": "checksum_archive", "arguments": arguments}, meta)


def test_inline_progress_reaches_the_client_as_the_tool_reports_it(
    door_stack: EmbeddedStack,
) -> None:
    _, response, started = checksum(door_stack, FILES, {"progressToken": "p"})
    assert response.getheader("content-type", "").startswith("text/event-stream")
    arrived = list(events(response, started))
    progress = [at for at, m in arrived if m.get("method") == "notifications/progress"]
    (done,) = [at for at, m in arrived if "result" in m]
    assert len(progress) == FILES
    # The tool reports file i at i * 0.5 s and ends at 1.5 s: each report arrives before the
    # next file is hashed, long before the result.
    for index, at in enumerate(progress):
        assert at < done - (FILES - 1 - index) * SECONDS_PER_FILE + 0.3, (index, arrived)
    assert progress[0] < 1.0 < done


def test_the_streaming_door_runs_with_the_templates_settings(
    streaming_stack: EmbeddedStack,
) -> None:
    # The template's ApiFunction as FrontDoor=STREAMING sets it (the inline deadline is this
    # module's override: the template's is 240 s)
    assert streaming_stack.front_door == "streaming"
    assert streaming_stack.aws.function_timeouts["ApiFunction"] == 250
    assert streaming_stack.settings.listen_window_ms == 240_000
    assert streaming_stack.settings.inline_deadline_ms == 1500


def test_a_run_with_nothing_to_say_starts_its_answer_and_ends_at_its_deadline(
    streaming_stack: EmbeddedStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_tasks_aws.server import live

    monkeypatch.setattr(live, "FIRST_BYTE_S", 0.3)
    # 10 files of 0.5 s, no progress token: silent for 5 s, past its 1.5 s deadline
    _, response, started = checksum(streaming_stack, 10)
    arrived = list(events(response, started))
    first_at, first = arrived[0]
    assert first == ": working"  # the answer started, with a comment
    assert first_at < 1.0  # before the deadline
    done_at, done = arrived[-1]
    assert done["result"]["isError"] is True
    assert "did not finish in time" in done["result"]["content"][0]["text"]
    assert 1.0 < done_at < 3.5


def inline_runs() -> int:
    """Threads of inline runs: the live run's, and the tool's own (`tools.deadline`)."""
    names = ("inline-run", "inline-tool")
    return sum(1 for thread in threading.enumerate() if thread.name in names)


def serving(stack: EmbeddedStack) -> int:
    return len(stack.app.handler._serving)  # type: ignore[union-attr]


def idle_within(stack: EmbeddedStack, seconds: float) -> None:
    """Wait up to `seconds` for no inline run and no request being served (the caller then
    asserts what it finds)."""
    deadline = time.monotonic() + seconds
    while (inline_runs() or serving(stack)) and time.monotonic() < deadline:
        time.sleep(0.05)


def test_a_client_that_leaves_an_inline_call_stops_the_tool(
    streaming_stack: EmbeddedStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    idle_within(streaming_stack, 5.0)  # an earlier test's run may still be ending
    # A deadline far past the bound below: a tool that stops only at its deadline fails
    monkeypatch.setattr(streaming_stack.app.handler, "inline_deadline_s", 30.0)
    conn, response, started = checksum(streaming_stack, 40, {"progressToken": "p"})
    first = next(events(response, started))
    assert first[1]["method"] == "notifications/progress"
    assert inline_runs() == 2
    assert serving(streaming_stack) == 1
    conn.close()  # 40 files would take 20 s
    idle_within(streaming_stack, 3.0)
    assert inline_runs() == 0, "the tool ran on for a client that left"
    assert serving(streaming_stack) == 0


def test_a_client_that_leaves_a_listen_window_stops_it(streaming_stack: EmbeddedStack) -> None:
    conn, response, started = post(
        streaming_stack, "subscriptions/listen", {"notifications": {"toolsListChanged": True}}
    )
    _, acknowledged = next(events(response, started))
    assert acknowledged["method"] == "notifications/subscriptions/acknowledged"
    assert serving(streaming_stack) == 1  # a 240 s window, holding
    conn.close()
    idle_within(streaming_stack, 3.0)
    assert serving(streaming_stack) == 0, "the window held for a client that left"


def test_preflight_is_answered_in_front_of_the_function(streaming_stack: EmbeddedStack) -> None:
    conn = http.client.HTTPConnection(streaming_stack.host, streaming_stack.port, timeout=10)
    conn.request("OPTIONS", "/mcp", headers={"origin": "http://127.0.0.1"})
    response = conn.getresponse()
    # The function would answer 405 (POST only): API Gateway's mock answers instead
    assert response.status == 204
    assert "POST" in (response.getheader("allow") or "")
