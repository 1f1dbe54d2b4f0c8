"""What declared tools need from AWS and the network: the port `aws.targets` fills.

Each method is one call to a declared resource. A resource that is missing, throttled or
denied raises `tasks.exceptions.TargetUnavailable` naming it and the AWS error code (or the
network failure); what the resource itself answered (a function error, a failed execution, a
non-2xx status) is returned, for the target logic (`targets.tools`) to map to a result.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol


class Invoked(NamedTuple):
    """A synchronous Lambda invoke's answer: the payload, and `FunctionError` if it raised."""

    payload: bytes
    function_error: str | None = None


class SyncRun(NamedTuple):
    """An Express execution run to its end (StartSyncExecution)."""

    status: str
    output: str | None = None
    error: str | None = None
    cause: str | None = None


class HttpRequest(NamedTuple):
    method: str
    url: str
    headers: dict[str, str]
    body: bytes | None
    timeout_s: float


class HttpAnswer(NamedTuple):
    status: int
    headers: dict[str, str]
    body: bytes
    truncated: bool = False
    """The upstream had more to send than was read (`targets.http.MAX_BODY_BYTES`): `body` is
    only its start."""


class TargetCalls(Protocol):
    """The calls declared tools make."""

    def invoke(self, function: str, qualifier: str | None, payload: bytes) -> Invoked:
        """Invoke a function synchronously (RequestResponse)."""
        ...

    def run_express(self, machine_arn: str, payload: str) -> SyncRun:
        """Run an Express machine to its end (StartSyncExecution)."""
        ...

    def secret(self, secret_arn: str) -> str:
        """A secret's string value (cached for a few minutes)."""
        ...

    def sign(self, request: HttpRequest, service: str, region: str) -> HttpRequest:
        """The request with SigV4 headers for `service` in `region` (the function's role)."""
        ...

    def fetch(self, request: HttpRequest) -> HttpAnswer:
        """Send an HTTP request; any status is an answer, only no answer raises. The body is
        read up to a bound and no further (`HttpAnswer.truncated`)."""
        ...
