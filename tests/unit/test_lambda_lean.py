"""The API function stays lean: what it imports is what a cold start pays for.

A fresh interpreter, with the environment the deployed function has, imports handlers/api.py
and handles one `server/discover` (or one 2025-11-25 `initialize`, which builds the legacy
side). After that neither the official MCP SDK (`mcp`), nor moto, nor `rich` (the CLI's), nor
the embedded stack (`mcp_tasks_aws.local`) may be loaded: they belong to the client, the tests
and local runs, never to Lambda.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import pytest

from mcp_tasks_aws.local.apigw_emulator import LocalLambdaContext, build_event

PROJECT_ROOT = Path(__file__).resolve().parents[2]
PROTOCOL_VERSION = "2026-07-28"
FORBIDDEN = ("mcp", "moto", "rich", "mcp_tasks_aws.local")

# The event is built here, in the test process, so the child never needs the emulator.
CHILD = """
import importlib.util, json, sys

job = json.loads(sys.argv[1])
spec = importlib.util.spec_from_file_location("api", job["handler"])
api = importlib.util.module_from_spec(spec)
sys.modules["api"] = api
spec.loader.exec_module(api)

class Context:
    def __init__(self, fields):
        self.__dict__.update(fields)

    def get_remaining_time_in_millis(self):
        return 30_000

response = api.handler(job["event"], Context(job["context"]))
if response["statusCode"] != 200:
    raise SystemExit(f"the request failed: {response}")
forbidden = tuple(job["forbidden"])
loaded = sorted(
    name for name in sys.modules
    if name in forbidden or name.startswith(tuple(f"{root}." for root in forbidden))
)
print(json.dumps(loaded))
"""


def deployed_environment() -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AWS_", "POWERTOOLS_", "MCP_TASKS_", "BOTO_"))
    }
    env.update(
        {
            # The secret's value stands in for its ARN (deployed, it is read from Secrets
            # Manager on first use): there is no network here, and `initialize` seals a session.
            "MCP_TASKS_STATE_SECRET": secrets.token_hex(32),
            "MCP_TASKS_DEPLOYMENT_ID": (
                "arn:aws:cloudformation:us-east-1:123456789012:stack/bench/11111111-2222"
            ),
            "MCP_TASKS_TOOLS": "demo",
            # As the template sets them: the task path is wired (no AWS call is made here).
            "MCP_TASKS_TABLE": "lean-tasks",
            "MCP_TASKS_STATE_MACHINE_ARN": (
                "arn:aws:states:us-east-1:123456789012:stateMachine:lean-tasks"
            ),
            "MCP_TASKS_RESULT_BUCKET": "lean-results",
            "POWERTOOLS_SERVICE_NAME": "mcp-tasks-aws",
            "POWERTOOLS_METRICS_NAMESPACE": "McpTasksAws",
            "POWERTOOLS_TRACE_DISABLED": "true",
            "POWERTOOLS_METRICS_DISABLED": "true",
            "POWERTOOLS_LOG_LEVEL": "WARNING",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
        }
    )
    return env


def discover_event() -> dict[str, object]:
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": PROTOCOL_VERSION,
        "mcp-method": "server/discover",
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "server/discover",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        },
    }
    return build_event(method="POST", path="/mcp", headers=headers, body=json.dumps(body).encode())


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


def forbidden_modules_loaded(child: str, job: dict[str, object]) -> list[str]:
    """Run `child` in a fresh interpreter with the deployed environment; the forbidden modules
    it reports as loaded."""
    done = subprocess.run(
        [sys.executable, "-c", child, json.dumps(job)],
        cwd=PROJECT_ROOT,
        env=deployed_environment(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"child failed:\n{done.stderr}{done.stdout}"
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


@pytest.mark.parametrize("event", [discover_event, initialize_event], ids=["modern", "legacy"])
def test_api_handler_imports_neither_sdk_nor_moto_nor_local_stack(
    event: Callable[[], dict[str, object]],
) -> None:
    job = {
        "handler": str(PROJECT_ROOT / "handlers" / "api.py"),
        "event": event(),
        "context": asdict(LocalLambdaContext()),
        "forbidden": FORBIDDEN,
    }
    loaded = forbidden_modules_loaded(CHILD, job)
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
    loaded = forbidden_modules_loaded(IMPORT_ONLY, job)
    assert loaded == [], f"a task function imports modules Lambda must not load: {loaded}"
