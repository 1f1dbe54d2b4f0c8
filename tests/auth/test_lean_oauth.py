"""AuthMode OAUTH keeps the API function lean: `cryptography` is imported only once a token is
actually checked, and a request without a token fetches no keys (a fresh interpreter with the
deployed function's environment, as the Lambda runtime would start it)."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from dataclasses import asdict

from mcp_tasks_aws.local.apigw_emulator import LocalLambdaContext, build_event
from mcp_tasks_aws.local.server import PROJECT_ROOT

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

statuses = [api.handler(event, Context(job["context"]))["statusCode"] for event in job["events"]]
loaded = "cryptography" in sys.modules
print(json.dumps({"statuses": statuses, "crypto": loaded}))
"""


def run_child(events: list[dict[str, object]]) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MCP_TASKS_"))}
    env |= {
        "MCP_TASKS_STATE_SECRET": secrets.token_hex(32),
        "MCP_TASKS_AUTH_MODE": "oauth",
        "MCP_TASKS_RESOURCE_URL": "https://mcp.example/mcp",
        # Nothing listens here: a key fetch would fail, and the token below would get a 503.
        "MCP_TASKS_OAUTH_ISSUER": "http://127.0.0.1:9",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_DISABLED": "true",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    job = {
        "handler": str(PROJECT_ROOT / "handlers" / "api.py"),
        "context": asdict(LocalLambdaContext()),
        "events": events,
    }
    done = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(job)],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def event(headers: dict[str, str]) -> dict[str, object]:
    return build_event(
        method="POST",
        path="/mcp",
        headers={"content-type": "application/json", **headers},
        body=b"{}",
        jwt_authorizer=False,
    )


def test_requests_without_a_token_never_import_crypto_nor_fetch_keys() -> None:
    metadata = build_event(
        method="GET",
        path="/.well-known/oauth-protected-resource/mcp",
        headers={},
        body=b"",
        jwt_authorizer=False,
    )
    result = run_child([event({}), metadata, event({"authorization": "Basic eA=="})])
    assert result == {"statuses": [401, 200, 401], "crypto": False}


def test_an_unreachable_issuer_is_503_and_no_signature_is_checked() -> None:
    # Given a well-formed token, When the issuer's keys cannot be fetched
    token = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln"
    result = run_child([event({"authorization": f"Bearer {token}"}), event({})])
    # Then the answer is an outage (not a verdict on the token), and nothing was verified, so
    # nothing was imported for it; the function still answers the next request
    assert result == {"statuses": [503, 401], "crypto": False}
