"""What every benchmark section shares: the project layout, the deployed function's
environment, MCP request events, and small statistics helpers."""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from mcp_tasks_aws.local.apigw_emulator import LocalLambdaContext, build_event

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT / "scripts"))
import sam_build  # noqa: E402, F401  (re-exported: scripts/ is not a package)

PYTHON = sys.executable
PROTOCOL_VERSION = "2026-07-28"

# Variables of the caller's shell that would make a child differ from a deployed function.
_SCRUBBED_PREFIXES = ("AWS_", "POWERTOOLS_", "MCP_TASKS_", "BOTO_")


def deployed_environment(**overrides: str) -> dict[str, str]:
    """The environment the API function has once deployed (template + Lambda runtime),
    with fake credentials. Nothing in it lets a child reach AWS."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUBBED_PREFIXES)}
    env.update(
        {
            # As deployed: the secret's ARN (read on first use, never by these requests).
            "MCP_TASKS_STATE_SECRET_ARN": (
                "arn:aws:secretsmanager:us-east-1:123456789012:secret:state-AbCdEf"
            ),
            "MCP_TASKS_DEPLOYMENT_ID": (
                "arn:aws:cloudformation:us-east-1:123456789012:stack/bench/11111111-2222"
            ),
            "MCP_TASKS_TOOLS": "demo",
            # As template.yaml sets them: tasks on, so the function creates its DynamoDB and
            # Step Functions clients at init, like the floor does. No call is made.
            "MCP_TASKS_TABLE": "mcp-tasks-bench",
            "MCP_TASKS_STATE_MACHINE_ARN": (
                "arn:aws:states:us-east-1:123456789012:stateMachine:mcp-tasks-bench-tasks"
            ),
            "MCP_TASKS_RESULT_BUCKET": "mcp-tasks-bench-results",
            # The API function's own variable (template.yaml): first legs run directly.
            "MCP_TASKS_WORKER_FUNCTION": "mcp-tasks-bench-WorkerFunction",
            "PYDANTIC_DISABLE_PLUGINS": "__all__",
            "POWERTOOLS_SERVICE_NAME": "mcp-tasks-aws",
            "POWERTOOLS_METRICS_NAMESPACE": "McpTasksAws",
            "POWERTOOLS_TRACE_DISABLED": "true",
            "POWERTOOLS_METRICS_DISABLED": "true",
            "POWERTOOLS_LOG_LEVEL": "WARNING",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            # Keep ~/.aws of whoever runs the bench out of the measurement.
            "AWS_CONFIG_FILE": os.devnull,
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        }
    )
    env.update(overrides)
    return env


def mcp_event(
    method: str,
    params: dict[str, Any] | None = None,
    *,
    name: str | None = None,
    rid: int = 1,
    capabilities: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The API Gateway payload-v2 event of one MCP 2026-07-28 request (from a client with
    `capabilities`, by default none)."""
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": PROTOCOL_VERSION,
        "mcp-method": method,
    }
    if name is not None:
        headers["mcp-name"] = name
    meta = {
        "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
    }
    body = {
        "jsonrpc": "2.0",
        "id": rid,
        "method": method,
        "params": {**(params or {}), "_meta": meta},
    }
    return build_event(method="POST", path="/mcp", headers=headers, body=json.dumps(body).encode())


def legacy_initialize() -> dict[str, Any]:
    """The payload-v2 event of a 2025-11-25 client's `initialize`."""
    body = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "bench", "version": "1"},
        },
    }
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    return build_event(method="POST", path="/mcp", headers=headers, body=json.dumps(body).encode())


def lambda_context_fields() -> dict[str, Any]:
    """The attributes of a Lambda context, as plain data a child process can rebuild."""
    return asdict(LocalLambdaContext())


def median_ms(samples: Sequence[float]) -> float:
    return statistics.median(samples) * 1000


def p90_ms(samples: Sequence[float]) -> float:
    """Nearest-rank 90th percentile."""
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)] * 1000
