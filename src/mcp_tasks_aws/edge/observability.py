"""Powertools for the Lambda handlers: Logger and Metrics always, Tracer when tracing is on.

Constructing Powertools' Tracer imports the X-Ray SDK (and patches botocore), which costs
about 0.3 s of cold start even when tracing is disabled. So the Tracer is created only when
tracing is wanted (POWERTOOLS_TRACE_DISABLED is not true and the code runs in Lambda); the
template turns it on with its `Tracing` parameter.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

if TYPE_CHECKING:
    from aws_lambda_powertools import Tracer

F = TypeVar("F", bound=Callable[..., Any])
_TRUE = {"1", "true", "yes", "on"}


def tracing_wanted(env: dict[str, str] | None = None) -> bool:
    env = dict(os.environ if env is None else env)
    if env.get("POWERTOOLS_TRACE_DISABLED", "false").strip().lower() in _TRUE:
        return False
    return bool(env.get("LAMBDA_TASK_ROOT")) and not env.get("AWS_SAM_LOCAL")


class OptionalTracer:
    """A Powertools Tracer when tracing is wanted; otherwise nothing is imported or patched."""

    def __init__(self) -> None:
        self.tracer: Tracer | None = None
        if tracing_wanted():
            from aws_lambda_powertools import Tracer

            self.tracer = Tracer()

    def capture_lambda_handler(self, handler: F) -> F:
        if self.tracer is None:
            return handler
        return cast(F, self.tracer.capture_lambda_handler(handler, capture_response=False))

    def put_annotation(self, key: str, value: str) -> None:
        if self.tracer is not None:
            self.tracer.put_annotation(key, value)
