"""The embedded stack's HTTP edge under abuse (issue 12, item 18), over raw sockets on
127.0.0.1: a burst of connections, malformed or chunked framing, HEAD, duplicate Origin
headers; and the functions' timeouts from the template, enforced locally (item 16)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from mcp_tasks_aws.local.aws import LAMBDAS
from mcp_tasks_aws.local.stack import EmbeddedStack
from support.mcp import PROTOCOL_VERSION, envelope, running_stack


@pytest.fixture(scope="module")
def stack() -> Iterator[EmbeddedStack]:
    with running_stack(MCP_TASKS_TOOLS="conformance") as running:
        yield running


def _body(method: str = "server/discover", params: dict[str, Any] | None = None) -> bytes:
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": method,
        "params": {**(params or {}), "_meta": envelope()},
    }
    return json.dumps(message).encode()


def _head(stack: EmbeddedStack, method: str = "POST", extra: str = "") -> bytes:
    return (
        f"{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1:{stack.port}\r\n"
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        f"MCP-Protocol-Version: {PROTOCOL_VERSION}\r\nMcp-Method: server/discover\r\n"
        f"Connection: close\r\n{extra}"
    ).encode()


def _exchange(stack: EmbeddedStack, raw: bytes, timeout: float = 10) -> bytes:
    """Send raw bytes, read until the server closes (every request says Connection: close)."""
    with socket.create_connection((stack.host, stack.port), timeout=timeout) as conn:
        conn.sendall(raw)
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def _status(response: bytes) -> int:
    return int(response.split(b" ", 2)[1])


def _split(response: bytes) -> tuple[bytes, bytes]:
    head, _, body = response.partition(b"\r\n\r\n")
    return head, body


def _post(stack: EmbeddedStack, body: bytes, extra: str = "") -> bytes:
    return _exchange(
        stack, _head(stack, extra=extra + f"Content-Length: {len(body)}\r\n\r\n") + body
    )


BURST = 200


def test_a_burst_of_simultaneous_connections_is_served(stack: EmbeddedStack) -> None:
    # Given 200 clients that connect at the same moment (the old server's backlog was 5),
    # and only then send their requests
    body = _head(stack, extra=f"Content-Length: {len(_body())}\r\n\r\n") + _body()
    ready = threading.Barrier(BURST, timeout=30)

    def one(_: int) -> int:
        ready.wait()
        return _status(_exchange(stack, body, timeout=30))

    with ThreadPoolExecutor(BURST) as pool:
        statuses = list(pool.map(one, range(BURST)))
    # Then every one of them is answered
    assert statuses == [200] * BURST


@pytest.mark.parametrize("length", ["abc", "-1", "1e3", "12, 13"])
def test_a_malformed_content_length_is_answered_400(stack: EmbeddedStack, length: str) -> None:
    started = time.monotonic()
    response = _exchange(stack, _head(stack, extra=f"Content-Length: {length}\r\n\r\n") + b"{}")
    assert _status(response) == 400
    assert time.monotonic() - started < 5  # answered, not left hanging


def test_a_chunked_body_is_read(stack: EmbeddedStack) -> None:
    body = _body()
    half = len(body) // 2
    chunked = b"".join(
        f"{len(part):x}\r\n".encode() + part + b"\r\n" for part in (body[:half], body[half:])
    )
    response = _exchange(
        stack, _head(stack, extra="Transfer-Encoding: chunked\r\n\r\n") + chunked + b"0\r\n\r\n"
    )
    _, payload = _split(response)
    assert _status(response) == 200, response
    assert json.loads(payload)["result"]["resultType"] == "complete"


def test_head_is_answered_without_a_body(stack: EmbeddedStack) -> None:
    response = _exchange(stack, _head(stack, method="HEAD", extra="\r\n"))
    _, payload = _split(response)
    assert _status(response) == 405
    assert payload == b""


@pytest.mark.parametrize(
    "origins",
    [("http://attacker.example", "own"), ("own", "http://attacker.example")],
    ids=["foreign-first", "foreign-last"],
)
def test_two_origin_headers_are_refused(stack: EmbeddedStack, origins: tuple[str, str]) -> None:
    own = f"http://127.0.0.1:{stack.port}"
    lines = "".join(f"Origin: {own if o == 'own' else o}\r\n" for o in origins)
    response = _post(stack, _body(), extra=lines)
    assert _status(response) == 403


def test_one_allowed_origin_is_served(stack: EmbeddedStack) -> None:
    response = _post(stack, _body(), extra=f"Origin: http://127.0.0.1:{stack.port}\r\n")
    assert _status(response) == 200


def test_a_body_over_api_gateways_limit_is_413(stack: EmbeddedStack) -> None:
    size = 10 * 1024 * 1024 + 1
    response = _exchange(
        stack,
        _head(stack, extra=f"Content-Length: {size}\r\n\r\n") + b" " * size,
        timeout=30,
    )
    assert _status(response) == 413


# -- function timeouts from the template ------------------------------------------------------


def test_function_timeouts_come_from_the_template(stack: EmbeddedStack) -> None:
    assert stack.aws.function_timeouts["ApiFunction"] == 29
    assert stack.aws.function_timeouts["WorkerFunction"] == 900
    assert stack.app.timeout_s == 29


def _call_slow_compute(stack: EmbeddedStack, seconds: float) -> tuple[int, Any, float]:
    params = {"name": "slow_compute", "arguments": {"seconds": seconds, "label": "x"}}
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {**params, "_meta": envelope()},
        }
    ).encode()
    extra = "Mcp-Name: slow_compute\r\n"
    raw = _head(stack, extra=extra).replace(
        b"Mcp-Method: server/discover", b"Mcp-Method: tools/call"
    )
    started = time.monotonic()
    response = _exchange(stack, raw + f"Content-Length: {len(body)}\r\n\r\n".encode() + body, 30)
    _, payload = _split(response)
    return _status(response), json.loads(payload), time.monotonic() - started


def test_an_inline_call_longer_than_the_function_timeout_ends_with_a_clear_error(
    stack: EmbeddedStack,
) -> None:
    # Given an API function with a 3 s timeout, and a tool that needs 10 s inline
    stack.app.timeout_s = 3
    try:
        status, message, elapsed = _call_slow_compute(stack, 10)
    finally:
        stack.app.timeout_s = stack.aws.function_timeouts["ApiFunction"]
    # Then the call ends before the function would be killed, with a clear error result
    assert status == 200
    assert elapsed < 3
    result = message["result"]
    assert result["isError"] is True
    assert "did not finish in time" in result["content"][0]["text"]


@pytest.mark.parametrize(
    ("path", "said"),
    [
        ("direct", "The task's first leg ran past the worker's timeout"),
        ("step_functions", "ended without a result"),
    ],
)
def test_a_worker_leg_longer_than_its_timeout_fails_the_task(
    stack: EmbeddedStack, path: str, said: str
) -> None:
    from support.tasks import TaskClient, WorkerDispatch, on_path

    # Given a worker whose function times out after 1 s
    name = stack.aws.function_name("WorkerFunction")
    with LAMBDAS.timeout(name, 1), on_path(stack, path):
        client = TaskClient(stack, WorkerDispatch(stack))
        # When a task's leg needs 5 s (run directly, or by its execution)
        task_id = client.create("slow_compute", {"seconds": 5, "label": "timeout"})
        done = client.wait_terminal(task_id, timeout=20)
    # Then the leg is stopped and the task fails, as deployed
    assert done["status"] == "failed"
    assert said in done["error"]["message"]
