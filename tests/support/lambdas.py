"""Running the deployed functions' handlers in a fresh interpreter, as the Lambda runtime starts
them, for the tests of what a cold start imports (`tests/edge/test_lambda_lean.py`,
`tests/edge/test_lean_oauth.py`)."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from mcp_tasks_aws.local.apigw_emulator import LocalLambdaContext

PROJECT_ROOT = Path(__file__).resolve().parents[2]
API_HANDLER = str(PROJECT_ROOT / "handlers" / "api.py")

API_CHILD_PRELUDE = """
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

context = Context(job["context"])
"""
"""The start of a child that runs handlers/api.py: `job` (from `api_job`) is the JSON of the
first argument, `api` the imported handler module, `context` a Lambda context. The script after
it prints its result as JSON on its last line."""


def api_job(**fields: object) -> dict[str, object]:
    """A job for `API_CHILD_PRELUDE`: the API handler's path, a Lambda context, and `fields`."""
    return {"handler": API_HANDLER, "context": asdict(LocalLambdaContext()), **fields}


def deployed_environment(**overrides: str) -> dict[str, str]:
    """The environment the API function has once deployed, with fake credentials; nothing in
    it lets a child reach AWS."""
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
    env.update(overrides)
    return env


def run_child(script: str, job: dict[str, object], env: dict[str, str] | None = None) -> Any:
    """Run `script` with `job` in a fresh interpreter (the deployed environment unless `env`
    is given); the JSON it printed last."""
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps(job)],
        cwd=PROJECT_ROOT,
        env=deployed_environment() if env is None else env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"child failed:\n{done.stderr}{done.stdout}"
    return json.loads(done.stdout.strip().splitlines()[-1])
