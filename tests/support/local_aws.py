"""Moto resources built from template.yaml (the task table, the state machine, the result
bucket), for the tests of the AWS adapters; `os.environ` is restored after."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from mcp_tasks_aws.local.aws import LocalAws, start_local_aws
from mcp_tasks_aws.local.stack import PROJECT_ROOT

TEMPLATE = PROJECT_ROOT / "template.yaml"


@contextlib.contextmanager
def template_resources() -> Iterator[LocalAws]:
    """The template's resources on moto, stopped after."""
    saved = dict(os.environ)
    aws = start_local_aws(TEMPLATE)
    try:
        yield aws
    finally:
        aws.stop()
        os.environ.clear()
        os.environ.update(saved)
