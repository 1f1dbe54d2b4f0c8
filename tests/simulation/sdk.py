"""The SDK between the code under test and (simulated) AWS: every call, every attempt, every fault.

Each AWS call goes through `Sdk.call`, which does what botocore does with the client
`aws.call_policies` builds for that call's row: up to `max_attempts` attempts, retrying
throttling, 5xx answers and timeouts (standard mode) after a backoff, and raising the last
error when the attempts run out. Every attempt is a point of its process (`scheduler.Point`),
where the seed decides what it meets:

- `ok`: the call is made and answered;
- `throttle`, `5xx`, `timeout_before`: it fails before anything was done;
- `timeout_after`: it is made (it lands) and its answer is lost; the SDK sends it again if it
  may, which is how a conditional write meets its own landing;
- `crash`: the function dies right there, before the call: a crash point.

`SimClient` is what the real adapters (`aws.dynamodb`, `aws.stepfunctions`,
`aws.lambda_legs`, `aws.targets`) are given in place of a botocore client: the same methods,
the same `ClientError` codes, so the adapters run exactly as deployed. The in-memory store is
wrapped by `simulation.stores.FaultyTwin` through the same loop.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from typing import Any, TypeVar

from botocore.exceptions import ClientError, ConnectTimeoutError, ReadTimeoutError

from mcp_tasks_aws.aws import call_policies
from simulation.clock import VirtualClock
from simulation.scheduler import Point, Scheduler, current

T = TypeVar("T")

ATTEMPT_MS = 8
"""Virtual time one answered attempt takes."""
BACKOFF_BASE_MS = 50
"""Standard mode's backoff before attempt n+1: base * 2**(n-1) (no jitter: a run is its seed)."""


def fault_error(kind: str, service: str, operation: str) -> Exception:
    """The error botocore raises for a fault of `kind` on one attempt."""
    if kind == "throttle":
        code = "TooManyRequestsException" if service == "lambda" else "ThrottlingException"
        return ClientError(
            {
                "Error": {"Code": code, "Message": "Rate exceeded (simulated)"},
                "ResponseMetadata": {"HTTPStatusCode": 429 if service == "lambda" else 400},
            },
            operation,
        )
    if kind == "5xx":
        code = "ServiceException" if service == "lambda" else "InternalServerError"
        return ClientError(
            {
                "Error": {"Code": code, "Message": "simulated"},
                "ResponseMetadata": {"HTTPStatusCode": 500},
            },
            operation,
        )
    if kind == "timeout_before":
        return ConnectTimeoutError(endpoint_url=f"https://{service}.simulated")
    if kind == "timeout_after":
        return ReadTimeoutError(endpoint_url=f"https://{service}.simulated")
    raise ValueError(kind)


def call_site() -> str:
    """Where in the product code the current call is made: the innermost frame of
    `mcp_tasks_aws` outside its adapters (`tasks.legs.LegRunner._run_leg`)."""
    frame = sys._getframe(2)
    adapter = ""
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.startswith("mcp_tasks_aws."):
            short = module.removeprefix("mcp_tasks_aws.")
            if not short.startswith("aws."):
                return f"{short}.{frame.f_code.co_qualname}"
            adapter = adapter or f"{short}.{frame.f_code.co_qualname}"
        frame = frame.f_back
    return adapter or "?"


class Stats:
    """What a run did: faults injected by kind, crash points hit, calls by operation."""

    def __init__(self) -> None:
        self.faults: Counter[str] = Counter()
        self.crash_points: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        self.attempts = 0

    def merge(self, other: Stats) -> None:
        self.faults.update(other.faults)
        self.crash_points.update(other.crash_points)
        self.calls.update(other.calls)
        self.attempts += other.attempts


class Sdk:
    """The SDK's attempts and retries, as `aws.call_policies` configures each call."""

    def __init__(self, scheduler: Scheduler, clock: VirtualClock, stats: Stats) -> None:
        self.scheduler = scheduler
        self.clock = clock
        self.stats = stats

    def call(
        self,
        service: str,
        operation: str,
        params: dict[str, Any],
        send: Callable[[], T],
        *,
        give_up: Callable[[Exception], Exception] | None = None,
    ) -> T:
        """Send one call: attempts as its row's policy says, each a point of the process.

        `give_up` turns the error of the last attempt into what the caller sees (default: the
        botocore error itself, as a botocore client raises it)."""
        policy = call_policies.row_for(service, operation, params).policy
        label = f"{service}:{operation}"
        site = call_site() if current() is not None else ""
        not_before = 0
        self.stats.calls[label] += 1
        for attempt in range(1, policy.max_attempts + 1):
            point = Point(
                "call",
                label,
                site=f"{current().function if current() else ''}:{site}:{label}",
                until_ms=not_before,
            )
            fault = self.scheduler.pause(point).fault
            self.stats.attempts += 1
            if fault == "ok":
                return send()
            self.stats.faults[fault] += 1
            if fault == "timeout_after":
                send()  # it lands; only its answer is lost
            error = fault_error(fault, service, operation)
            if attempt == policy.max_attempts:
                raise give_up(error) if give_up is not None else error
            waited = 0
            if fault.startswith("timeout"):
                timeout = (
                    policy.connect_timeout_s if fault == "timeout_before" else policy.read_timeout_s
                )
                waited = int(timeout * 1000)
            not_before = self.clock.now_ms() + waited + BACKOFF_BASE_MS * 2 ** (attempt - 1)
        raise AssertionError("unreachable")

    def crashed_at(self, point: Point) -> None:
        self.stats.crash_points[point.site or point.label] += 1


class SimClient:
    """A botocore client's stand-in for one service: each method is sent through `Sdk.call`
    to `backend` (a real botocore client on moto, or a simulated service with the same
    methods). An operation `aws.call_policies` lacks cannot be called, as with the real
    `aws.clients.LazyClient`."""

    def __init__(self, service: str, backend: Any, sdk: Sdk) -> None:
        self._service = service
        self._backend = backend
        self._sdk = sdk

    def __getattr__(self, method: str) -> Callable[..., Any]:
        operation = call_policies.operation_of(self._service, method)
        if operation is None:
            raise AttributeError(f"{self._service}.{method} is not in aws.call_policies.CALLS")
        target = getattr(self._backend, method)
        service, sdk = self._service, self._sdk

        def call(**params: Any) -> Any:
            return sdk.call(service, operation, params, lambda: target(**params))

        return call
