"""moto for the runs on the DynamoDB store, started once per process; and template.yaml, read
once: the functions' asynchronous-invoke settings the simulated Lambda applies come from it."""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

PROJECT_ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = PROJECT_ROOT / "template.yaml"


@functools.cache
def template() -> dict[str, Any]:
    from mcp_tasks_aws.local.template import load_template

    return load_template(TEMPLATE)


class AsyncConfig(NamedTuple):
    """A function's `EventInvokeConfig`: what Lambda does with its asynchronous events."""

    retries: int
    max_age_s: int


def async_config(logical_id: str) -> AsyncConfig:
    """The template's asynchronous-invoke settings of a function (Lambda's defaults: two
    retries, six hours)."""
    props = template()["Resources"][logical_id]["Properties"]
    config = props.get("EventInvokeConfig") or {}
    return AsyncConfig(
        int(config.get("MaximumRetryAttempts", 2)),
        int(config.get("MaximumEventAgeInSeconds", 21600)),
    )


def function_timeout_s(logical_id: str) -> int:
    """A function's `Timeout` (a parameter's default; the buffered front door's branch)."""
    value: Any = template()["Resources"][logical_id]["Properties"]["Timeout"]
    if isinstance(value, dict) and "Fn::If" in value:
        value = value["Fn::If"][2]
    if isinstance(value, dict) and "Ref" in value:
        value = parameter_default(value["Ref"])
    return int(value)


def parameter_default(name: str) -> str:
    return str(template()["Parameters"][name]["Default"])


@contextlib.contextmanager
def moto_running() -> Iterator[None]:
    """moto in this process (fake credentials first, as `local.aws` does) for a batch of
    runs on the DynamoDB store; stopped after, the environment put back."""
    from mcp_tasks_aws.local.aws import _start_moto

    saved = dict(os.environ)
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    mock = _start_moto()
    try:
        yield
    finally:
        mock.stop()
        os.environ.clear()
        os.environ.update(saved)
