"""On `make run`, an inline tool that *waits* past the inline deadline (a `time.sleep`, an
`await asyncio.sleep`) gets the documented error at the deadline, as deployed, never API
Gateway's 500 at the function's timeout (issue 29, item 4).

The embedded stack serves each request from a worker thread, where no signal can interrupt a
blocking call; only a busy loop used to be stopped. The API function's timeout is 2.5 s here
(`api_timeout_s`), so the deadline is 1 s and the tools sleep 20 s.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_tasks_aws.local.stack import EmbeddedStack
from support.mcp import PROTOCOL_VERSION, envelope

API_TIMEOUT_S = 2.5
DEADLINE_S = API_TIMEOUT_S - 1.5  # edge.apigw.RESPONSE_MARGIN_S
SLEEPY_TOOLS = '''
import asyncio
import time

from mcp_tasks_aws import ToolSet

tools = ToolSet(name="sleepy")


@tools.tool
def nap(seconds: float) -> str:
    """Sleeps (a blocking call)."""
    time.sleep(seconds)
    return "rested"


@tools.tool
async def doze(seconds: float) -> str:
    """Sleeps on the event loop."""
    await asyncio.sleep(seconds)
    return "rested"


@tools.tool
async def blocks_the_loop(seconds: float) -> str:
    """An async tool that calls a blocking function."""
    time.sleep(seconds)
    return "rested"


@tools.tool
async def quick(seconds: float) -> str:
    """Finishes well before the deadline."""
    await asyncio.sleep(seconds)
    return "rested"
'''


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedStack]:
    folder = tmp_path_factory.mktemp("sleepy")
    (folder / "sleepy_tools.py").write_text(SLEEPY_TOOLS)
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(folder))
        env = {"MCP_TASKS_TOOLS": "sleepy_tools"}
        with EmbeddedStack(env=env, api_timeout_s=API_TIMEOUT_S) as running:
            yield running


def call(stack: EmbeddedStack, tool: str, seconds: float) -> tuple[int, Any, float]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": {"seconds": seconds}, "_meta": envelope()},
    }
    request = urllib.request.Request(
        stack.url,
        data=json.dumps(body).encode(),
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": PROTOCOL_VERSION,
            "Mcp-Method": "tools/call",
            "Mcp-Name": tool,
        },
    )
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, payload = response.status, json.loads(response.read())
    except urllib.error.HTTPError as failed:
        status, payload = failed.code, failed.read().decode()
    return status, payload, time.monotonic() - started


@pytest.mark.parametrize("tool", ["nap", "doze", "blocks_the_loop"])
def test_a_sleeping_inline_tool_gets_the_documented_error_at_the_deadline(
    stack: EmbeddedStack, tool: str
) -> None:
    # Given a tool that sleeps 20 s, on a stack whose inline deadline is 1 s
    status, payload, elapsed = call(stack, tool, 20)
    # Then the answer is the deadline's error result, at the deadline, not a 500 at the timeout
    assert status == 200, payload
    result = payload["result"]
    assert result["isError"] is True
    assert result["content"][0]["text"] == (
        f"Tool {tool} did not finish in time: an inline call must answer first."
    )
    assert DEADLINE_S - 0.2 < elapsed < API_TIMEOUT_S


def test_a_tool_that_finishes_in_time_answers_as_usual(stack: EmbeddedStack) -> None:
    status, payload, _ = call(stack, "quick", 0.1)
    assert status == 200
    assert payload["result"]["content"][0]["text"] == "rested"
    assert payload["result"].get("isError") is not True


def test_the_documented_deadline_is_the_deployed_one() -> None:
    from mcp_tasks_aws.edge.apigw import RESPONSE_MARGIN_S
    from mcp_tasks_aws.local.template import load_template

    template = load_template(Path(__file__).resolve().parents[2] / "template.yaml")
    timeout = template["Resources"]["ApiFunction"]["Properties"]["Timeout"]
    if isinstance(timeout, dict):  # FrontDoor picks it: the buffered door's is API Gateway's
        condition, _, buffered = timeout["Fn::If"]
        assert condition == "StreamingDoor"
        timeout = buffered
    assert timeout - RESPONSE_MARGIN_S == 27.5  # README: "stops the tool at 27.5 s"
    assert API_TIMEOUT_S - RESPONSE_MARGIN_S == DEADLINE_S
