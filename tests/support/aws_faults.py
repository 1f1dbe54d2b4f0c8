"""Faults at AWS call sites, found by watching every call rather than listed by hand.

`AwsFaults` wraps botocore's `BaseClient._make_api_call` (the one door every adapter call goes
through, after the SDK's own retries would have run) for the clients of an embedded stack's
functions. A *site* is the k-th call of one operation by one function in a scenario
(`Site("worker", "dynamodb:UpdateItem", 2)`): a recording run lists every site the scenario
reaches, so a call site added to the code is covered without touching the tests. An armed run
makes exactly one site fail, with one of `KINDS`:

- `throttle`: a ThrottlingException (HTTP 400) before the call is made;
- `5xx`: an InternalServerError (HTTP 500) before the call is made;
- `timeout`: a read timeout *after* the call went through (the write landed, the caller never
  heard): the worst case for anything that retries.

And, armed by name (not in `KINDS`): `retried`, the same call made twice, as the SDK retries
one whose answer was lost: the first lands unheard, the caller gets the second's answer (a
conditional write's refusal, for a write).

Every successful write that ends a task is counted too (`endings`), so a test can say that
each task ended exactly once, whoever ended it.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

import pytest
from botocore.client import BaseClient
from botocore.exceptions import ClientError, ReadTimeoutError

from mcp_tasks_aws.app import App
from mcp_tasks_aws.protocol.names import TERMINAL_STATUSES
from mcp_tasks_aws.tasks.model import is_task_id

KINDS = ("throttle", "5xx", "timeout")


class Site(NamedTuple):
    function: str
    operation: str  # service:Operation
    nth: int  # 1 for the function's first call of that operation in the scenario

    def __str__(self) -> str:
        return f"{self.function}/{self.operation}#{self.nth}"


def _fault(kind: str, operation: str) -> Exception:
    if kind == "throttle":
        error = {"Code": "ThrottlingException", "Message": "Rate exceeded (injected)"}
        return ClientError({"Error": error, "ResponseMetadata": {"HTTPStatusCode": 400}}, operation)
    if kind == "5xx":
        error = {"Code": "InternalServerError", "Message": "injected"}
        return ClientError({"Error": error, "ResponseMetadata": {"HTTPStatusCode": 500}}, operation)
    if kind == "timeout":
        return ReadTimeoutError(endpoint_url="https://aws.invalid/ (injected)")
    raise ValueError(kind)


class AwsFaults:
    """Sees every AWS call of `apps` (function name -> App); fails one armed site."""

    def __init__(self, apps: dict[str, App]) -> None:
        self.apps = apps
        self.sites: list[Site] = []
        self.fired: list[Site] = []
        self.endings: Counter[str] = Counter()
        self._counts: Counter[tuple[str, str]] = Counter()
        self._armed: tuple[Site, str] | None = None
        self._lock = threading.Lock()

    def owner(self, client: Any) -> str | None:
        for function, app in self.apps.items():
            if any(client is known for known in app.clients._clients.values()):
                return function
        return None

    def arm(self, site: Site | None, kind: str = "5xx") -> None:
        """Start a run: counts from zero, `site` (if any) fails once with `kind`."""
        with self._lock:
            self.sites, self.fired = [], []
            self.endings.clear()
            self._counts.clear()
            self._armed = (site, kind) if site is not None else None

    def _call(self, original: Any, client: Any, operation: str, params: dict[str, Any]) -> Any:
        function = self.owner(client)
        name = f"{client.meta.service_model.service_name}:{operation}"
        failing: str | None = None
        if function is not None:
            with self._lock:
                self._counts[(function, name)] += 1
                site = Site(function, name, self._counts[(function, name)])
                self.sites.append(site)
                if self._armed is not None and self._armed[0] == site:
                    failing = self._armed[1]
                    self.fired.append(site)
                    self._armed = None
        if failing == "retried":
            original(client, operation, params)  # landed; its answer lost, the SDK retries
        elif failing is not None and failing != "timeout":
            raise _fault(failing, operation)
        response = original(client, operation, params)
        if operation == "UpdateItem":
            self._count_ending(params, response)
        if failing == "timeout":
            raise _fault(failing, operation)
        return response

    def _count_ending(self, params: dict[str, Any], response: dict[str, Any]) -> None:
        task_id = params.get("Key", {}).get("taskId", {}).get("S", "")
        status = response.get("Attributes", {}).get("status", {}).get("S")
        if not is_task_id(task_id) or status not in TERMINAL_STATUSES:
            return
        names = {v: k for k, v in params.get("ExpressionAttributeNames", {}).items()}
        placeholder = names.get("status")
        if placeholder and f"{placeholder} = " in params.get("UpdateExpression", ""):
            with self._lock:
                self.endings[task_id] += 1

    @contextmanager
    def installed(self) -> Iterator[AwsFaults]:
        original = BaseClient._make_api_call

        def wrapped(client: Any, operation: str, params: dict[str, Any]) -> Any:
            return self._call(original, client, operation, params)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(BaseClient, "_make_api_call", wrapped)
            yield self
