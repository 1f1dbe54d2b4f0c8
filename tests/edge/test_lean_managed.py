"""Managed tools and cold start: a code-tools server never loads the managed-target code, and a
server that serves only a declaration loads what its requests use and nothing more (no HTTP
client before an HTTP call, no legacy side, no task result models, nothing Lambda must not
load); the AskFunction's handler imports nothing Lambda must not load either."""

from __future__ import annotations

from edge.test_lambda_lean import (
    FORBIDDEN,
    IMPORT_ONLY,
    LOADED_ON_FIRST_USE,
    MODERN_ONLY,
    discover_event,
    modern_event,
)
from support.lambdas import PROJECT_ROOT, api_job, deployed_environment, run_child

MANAGED = ("mcp_tasks_aws.targets", "mcp_tasks_aws.aws.targets", "yaml")
EXAMPLE = "examples/managed/tools.yaml"


def test_a_code_tools_server_never_loads_managed_target_code() -> None:
    events = [
        discover_event(),
        modern_event("tools/list"),
        modern_event(
            "tools/call",
            {"name": "convert_temperature", "arguments": {"value": 20, "to": "fahrenheit"}},
        ),
    ]
    loaded = run_child(MODERN_ONLY, api_job(events=events, forbidden=MANAGED))
    assert loaded == []


def test_a_declaration_server_loads_only_what_its_requests_use() -> None:
    events = [discover_event(), modern_event("tools/list")]
    unused = (*FORBIDDEN, *LOADED_ON_FIRST_USE, "mcp_tasks_aws.targets.http", "urllib.request")
    env = deployed_environment(MCP_TASKS_TOOLS=EXAMPLE)
    loaded = run_child(MODERN_ONLY, api_job(events=events, forbidden=unused), env)
    assert loaded == []


def test_the_ask_handler_imports_nothing_lambda_must_not_load() -> None:
    job = {"handlers": {"ask": str(PROJECT_ROOT / "handlers" / "ask.py")}, "forbidden": FORBIDDEN}
    assert run_child(IMPORT_ONLY, job) == []
