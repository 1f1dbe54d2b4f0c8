"""Lambda for the embedded stack: the real handlers, invoked in-process, as Lambda would.

moto cannot run function code without Docker. `LAMBDAS` is the registry it is routed to
(see `local.moto_patches`, which patches moto's invoke): function name -> Python handler.

- **Synchronous invokes** (`RequestResponse`, what the state machine's `lambda:invoke` makes)
  answer the caller with the handler's result; an exception becomes the `Unhandled` error
  envelope Lambda returns, so Retry/Catch on error names behave as deployed.
- **Asynchronous invokes** (`InvocationType=Event`, the API's direct legs) return at once and
  run the handler in a thread of their own, honouring the function's settings from
  template.yaml (:class:`AsyncSettings`): its retries, and its on-failure destination, which
  gets the destination record Lambda would send (another asynchronous invoke).

Either way the function's timeout holds (`lambda_runtime`): a handler still running then is
interrupted, and the invoke fails with the `Sandbox.Timedout` error Lambda reports.
"""

from __future__ import annotations

import json
import logging
import threading
import traceback
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mcp_tasks_aws.local.lambda_runtime import FunctionTimedOut, call_with_timeout, timeout_error

logger = logging.getLogger("mcp_tasks_aws.local")

Handler = Callable[[dict[str, Any], Any], Any]
DEFAULT_TIMEOUT_S = 3.0
"""Lambda's own default when a function sets no Timeout."""


@dataclass
class AsyncSettings:
    """What template.yaml sets for a function's asynchronous invokes (and its timeout)."""

    arn: str
    timeout_s: float = DEFAULT_TIMEOUT_S
    maximum_retry_attempts: int = 2
    on_failure: str | None = None
    """The function (name or ARN) that gets the record of a failed invoke, if any."""


def function_name_of(name_or_arn: str) -> str:
    return name_or_arn.rsplit(":function:", 1)[-1].split(":", 1)[0]


class InProcessLambdas:
    """The registry `lambda:invoke` is routed to: function name -> Python handler."""

    def __init__(self) -> None:
        self.handlers: dict[str, Handler] = {}
        self.settings: dict[str, AsyncSettings] = {}
        self._running = 0
        self._idle = threading.Condition()

    def has(self, function_name: str) -> bool:
        return function_name_of(function_name) in self.handlers

    # -- synchronous ------------------------------------------------------------------------

    def timeout_of(self, name: str) -> float:
        settings = self.settings.get(name)
        return settings.timeout_s if settings is not None else DEFAULT_TIMEOUT_S

    def invoke(self, function_name: str, body: Any, response_headers: dict[str, str]) -> bytes:
        result, error = self._run(function_name_of(function_name), _event(body))
        if error is not None:
            response_headers["x-amz-function-error"] = "Unhandled"
            return json.dumps(error).encode()
        return json.dumps(result).encode()

    def _run(self, name: str, event: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
        """Run the handler once: its result, or the error payload Lambda would return."""
        handler = self.handlers.get(name)
        if handler is None:
            return None, {
                "errorType": "ResourceNotFoundException",
                "errorMessage": f"no function {name}",
            }
        timeout = self.timeout_of(name)
        try:
            return call_with_timeout(handler, event, _context(name, timeout), timeout), None
        except FunctionTimedOut:
            return None, timeout_error(timeout)
        except Exception as exc:  # what Lambda returns for an unhandled exception
            return None, _error_payload(exc)

    # -- asynchronous -----------------------------------------------------------------------

    def invoke_event(self, function_name: str, body: Any) -> None:
        """Queue one event for `function_name` and return at once, as `InvocationType=Event`."""
        name = function_name_of(function_name)
        event = _event(body)
        self._spawn(lambda: self._deliver(name, event), f"lambda-event-{name}")

    def _deliver(self, name: str, event: dict[str, Any]) -> None:
        settings = self.settings.get(name)
        attempts = 1 + (settings.maximum_retry_attempts if settings else 0)
        error: dict[str, Any] = {}
        for _ in range(attempts):
            _, failed = self._run(name, event)
            if failed is None:
                return
            error = failed
        logger.info("local lambda %s: event failed (%s)", name, error.get("errorType"))
        if settings is None or not settings.on_failure:
            return
        if ":function:" not in settings.on_failure:  # an SQS queue, an SNS topic: not emulated
            logger.warning("local lambda %s: failed event dropped (destination not emulated)", name)
            return
        record = _failure_record(settings.arn, event, error, attempts)
        self.invoke_event(settings.on_failure, json.dumps(record))

    def _spawn(self, target: Callable[[], None], name: str) -> threading.Thread:
        def run() -> None:
            try:
                target()
            finally:
                with self._idle:
                    self._running -= 1
                    self._idle.notify_all()

        thread = threading.Thread(target=run, name=name, daemon=True)
        with self._idle:
            self._running += 1  # counted before it starts, so a drain never misses it
        thread.start()
        return thread

    def drain(self, timeout_s: float) -> bool:
        """Wait for asynchronous invokes still running (True when none is left)."""
        with self._idle:
            return self._idle.wait_for(lambda: self._running == 0, timeout=timeout_s)

    @contextmanager
    def timeout(self, name: str, seconds: float) -> Iterator[None]:
        """Give function `name` another timeout for a while (tests of legs that time out)."""
        settings = self.settings[name]
        saved = settings.timeout_s
        settings.timeout_s = seconds
        try:
            yield
        finally:
            settings.timeout_s = saved


def _event(body: Any) -> dict[str, Any]:
    if isinstance(body, bytes | bytearray):
        body = body.decode()
    event: dict[str, Any] = json.loads(body) if body else {}
    return event


def _context(name: str, timeout_s: float) -> Any:
    from mcp_tasks_aws.local.apigw_emulator import LocalLambdaContext

    return LocalLambdaContext(function_name=name, timeout_s=timeout_s)


def _error_payload(exc: BaseException) -> dict[str, Any]:
    return {
        "errorType": type(exc).__name__,
        "errorMessage": str(exc),
        "stackTrace": traceback.format_exception(exc)[-3:],
    }


def _failure_record(
    function_arn: str, event: dict[str, Any], error: dict[str, Any], attempts: int
) -> dict[str, Any]:
    """The record Lambda sends an on-failure destination after an asynchronous invoke failed."""
    return {
        "version": "1.0",
        "timestamp": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "requestContext": {
            "requestId": str(uuid.uuid4()),
            "functionArn": f"{function_arn}:$LATEST",
            "condition": "RetriesExhausted",
            "approximateInvokeCount": attempts,
        },
        "requestPayload": event,
        "responseContext": {
            "statusCode": 200,
            "executedVersion": "$LATEST",
            "functionError": "Unhandled",
        },
        "responsePayload": {k: v for k, v in error.items() if k != "stackTrace"},
    }


LAMBDAS = InProcessLambdas()
