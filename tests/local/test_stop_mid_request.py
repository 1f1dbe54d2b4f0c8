"""Stopping the embedded stack while requests are in flight is an expected path (`make
interop` and every test module stop stacks whose clients left calls or windows open): the
requests end, their clients get an answer (API Gateway's 500, or the end of a stream that
had started), and nothing is logged as an error. Before, uvicorn cancelled them at the end of
its graceful shutdown and logged a `CancelledError` traceback for each, behind either door.
"""

from __future__ import annotations

import http.client
import json
import logging
import threading
import time
from typing import Any

import pytest

from mcp_tasks_aws.local.stack import EmbeddedStack

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")
VERSION = "2026-07-28"


class Collected(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


class InFlight:
    """One long inline call sent from a thread of its own: what its client read, and how."""

    def __init__(self, stack: EmbeddedStack, progress: bool) -> None:
        meta: dict[str, Any] = {
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        if progress:
            meta["progressToken"] = "p"
        arguments = {"files": 40, "seconds_per_file": 0.5}  # 20 s: far past the stop
        self.body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "checksum_archive", "arguments": arguments, "_meta": meta},
        }
        self.stack = stack
        self.status: int | None = None
        self.read = b""
        self.outcome = "running"
        self.started = threading.Event()
        self.thread = threading.Thread(target=self._send, daemon=True)
        self.thread.start()

    def _send(self) -> None:
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": VERSION,
            "mcp-method": "tools/call",
            "mcp-name": "checksum_archive",
        }
        conn = http.client.HTTPConnection(self.stack.host, self.stack.port, timeout=30)
        try:
            conn.request("POST", "/mcp", json.dumps(self.body), headers)
            self.started.set()
            response = conn.getresponse()
            self.status = response.status
            while chunk := response.read1(65536):
                self.read += chunk
            self.outcome = "ended"
        except (OSError, http.client.HTTPException) as exc:
            self.outcome = type(exc).__name__
        finally:
            self.started.set()
            conn.close()


@pytest.mark.parametrize("door", ["buffered", "streaming"])
def test_stopping_the_stack_mid_request_ends_the_requests_without_a_traceback(door: str) -> None:
    stack = EmbeddedStack(env={"MCP_TASKS_FRONT_DOOR": door}, sweep_interval_s=None).start()
    collected = Collected()
    # After the start: uvicorn configures its own loggers (which do not reach the root's).
    watched = [logging.getLogger(), logging.getLogger("uvicorn")]
    for logger in watched:
        logger.addHandler(collected)
    try:
        # One answer already streaming (its progress), one not started yet (a silent run).
        calls = [InFlight(stack, progress=True), InFlight(stack, progress=False)]
        for call in calls:
            assert call.started.wait(10)
        deadline = time.monotonic() + 10
        while b"notifications/progress" not in calls[0].read and time.monotonic() < deadline:
            time.sleep(0.05)
        assert b"notifications/progress" in calls[0].read
        time.sleep(0.3)
        stopping = time.monotonic()
        stack.stop()
        stopped_in = time.monotonic() - stopping
        for call in calls:
            call.thread.join(10)
    finally:
        for logger in watched:
            logger.removeHandler(collected)

    loud = [
        (r.name, r.levelname, r.getMessage()[:200])
        for r in collected.records
        if r.exc_info is not None or r.levelno >= logging.ERROR
    ]
    assert loud == []
    # Each client was answered: the stream that had started ended, the other got a 500.
    assert [call.outcome for call in calls] == ["ended", "ended"]
    assert calls[0].status == 200
    assert calls[1].status == 500
    assert stopped_in < 5
