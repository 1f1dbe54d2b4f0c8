"""The API function stays lean: what it imports is what a cold start pays for.

A fresh interpreter, with the environment the deployed function has, imports handlers/api.py
and handles one `server/discover` (or one 2025-11-25 `initialize`, which builds the legacy
side). After that neither the official MCP SDK (`mcp`), nor moto, nor `rich` (the CLI's), nor
the embedded stack (`mcp_tasks_aws.local`) may be loaded: they belong to the client, the tests
and local runs, never to Lambda. Nor may the durable execution SDK and its testing package:
they are the durable function's alone (`handlers/durable.py`), even where they are installed
(here they are: the test would fail if the API function reached them).
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from mcp_tasks_aws.local.apigw_emulator import build_event
from support.lambdas import API_CHILD_PRELUDE, PROJECT_ROOT, api_job, run_child

PROTOCOL_VERSION = "2026-07-28"
FORBIDDEN = (
    "mcp",
    "moto",
    "rich",
    "mcp_tasks_aws.local",
    "aws_durable_execution_sdk_python",
    "aws_durable_execution_sdk_python_testing",
)

# The event is built here, in the test process, so the child never needs the emulator.
CHILD = (
    API_CHILD_PRELUDE
    + """
response = api.handler(job["event"], context)
if response["statusCode"] != 200:
    raise SystemExit(f"the request failed: {response}")
forbidden = tuple(job["forbidden"])
loaded = sorted(
    name for name in sys.modules
    if name in forbidden or name.startswith(tuple(f"{root}." for root in forbidden))
)
print(json.dumps(loaded))
"""
)


def modern_event(method: str, params: dict[str, object] | None = None) -> dict[str, object]:
    """A 2026-07-28 request as API Gateway hands it to the function."""
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": PROTOCOL_VERSION,
        "mcp-method": method,
    }
    if method == "tools/call" and params is not None:
        headers["mcp-name"] = str(params["name"])
    meta = {
        "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": method,
        "params": {**(params or {}), "_meta": meta},
    }
    return build_event(method="POST", path="/mcp", headers=headers, body=json.dumps(body).encode())


def discover_event() -> dict[str, object]:
    return modern_event("server/discover")


def initialize_event() -> dict[str, object]:
    """A 2025-11-25 client's first request: it builds the legacy side of the endpoint."""
    body = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "lean", "version": "1"},
        },
    }
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    return build_event(method="POST", path="/mcp", headers=headers, body=json.dumps(body).encode())


@pytest.mark.parametrize("event", [discover_event, initialize_event], ids=["modern", "legacy"])
def test_api_handler_imports_neither_sdk_nor_moto_nor_local_stack(
    event: Callable[[], dict[str, object]],
) -> None:
    loaded = run_child(CHILD, api_job(event=event(), forbidden=FORBIDDEN))
    assert loaded == [], f"the API function imports modules Lambda must not load: {loaded}"


IMPORT_ONLY = """
import importlib.util, json, sys

job = json.loads(sys.argv[1])
for name, path in job["handlers"].items():
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
print(json.dumps(sorted(
    m for m in sys.modules if any(m == f or m.startswith(f + ".") for f in job["forbidden"])
)))
"""


def test_worker_and_reconcile_handlers_import_neither_sdk_nor_moto_nor_local_stack() -> None:
    job = {
        "handlers": {
            name: str(PROJECT_ROOT / "handlers" / f"{name}.py") for name in ("worker", "reconcile")
        },
        "forbidden": FORBIDDEN,
    }
    loaded = run_child(IMPORT_ONLY, job)
    assert loaded == [], f"a task function imports modules Lambda must not load: {loaded}"


def test_the_durable_function_is_what_imports_the_durable_sdk() -> None:
    """The control of the tests above: the SDK is installed here, and the durable function's
    handler does load it, so an API function that reached it would be seen."""
    job = {
        "handlers": {"durable": str(PROJECT_ROOT / "handlers" / "durable.py")},
        "forbidden": ("aws_durable_execution_sdk_python",),
    }
    loaded = run_child(IMPORT_ONLY, job)
    assert "aws_durable_execution_sdk_python" in loaded
    job["handlers"] = {
        name: str(PROJECT_ROOT / "handlers" / f"{name}.py")
        for name in ("worker", "reconcile", "sweep")
    }
    assert run_child(IMPORT_ONLY, job) == []


MODERN_ONLY = (
    API_CHILD_PRELUDE
    + """
for event in job["events"]:
    response = api.handler(event, context)
    if response["statusCode"] != 200 or '"error"' in response["body"]:
        raise SystemExit(f"the request failed: {response}")
print(json.dumps(sorted(
    m for m in sys.modules if any(m == f or m.startswith(f + ".") for f in job["forbidden"])
)))
"""
)
LOADED_ON_FIRST_USE = ("mcp_tasks_aws.server.legacy", "mcp_tasks_aws.server.task_results")
"""What a function serving only inline 2026-07-28 requests never imports: the 2025-11-25 side
(built on the first legacy message) and the task result models (on the first task request)."""


def test_modern_inline_requests_load_neither_the_legacy_side_nor_the_task_result_models() -> None:
    events = [
        discover_event(),
        modern_event("tools/list"),
        modern_event(
            "tools/call",
            {"name": "convert_temperature", "arguments": {"value": 20, "to": "fahrenheit"}},
        ),
    ]
    loaded = run_child(MODERN_ONLY, api_job(events=events, forbidden=LOADED_ON_FIRST_USE))
    assert loaded == [], f"a modern inline request loaded what should wait: {loaded}"


def test_the_lean_check_sees_a_first_legacy_request() -> None:
    """The same check fails when the request does need the legacy side (it can fail)."""
    loaded = run_child(
        MODERN_ONLY, api_job(events=[initialize_event()], forbidden=LOADED_ON_FIRST_USE)
    )
    assert "mcp_tasks_aws.server.legacy" in loaded
