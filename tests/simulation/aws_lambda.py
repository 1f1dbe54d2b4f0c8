"""Lambda's asynchronous invocations, as AWS delivers them, and EventBridge's deliveries to it.

An asynchronous invoke (`Invoke` with `InvocationType=Event`, or an EventBridge target, or an
on-failure destination) puts an event in the function's queue and answers 202. From there:

- the event is delivered when the run says so (`deliver`), so late and in any order;
- a delivery may leave a copy behind (`twice`): Lambda delivers an event at least once, and
  EventBridge too;
- a delivery whose function fails (an error, a crash, a timeout) is retried up to the
  function's `MaximumRetryAttempts` (template.yaml), then sent to its on-failure destination
  with Lambda's record (`RetriesExhausted`); one that waited longer than
  `MaximumEventAgeInSeconds` is sent there without running (`EventAgeExceeded`);
- a destination that is a queue (the reconcile dead-letter queue) keeps what it gets: an
  operator's redrive (`redrive`, what its alarm's runbook says) delivers it again.

Which code a delivery runs is the deployment's (`simulation.functions`).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from simulation.moto_aws import AsyncConfig, async_config
from simulation.scheduler import Process

RETRY_DELAYS_S = (60, 120)
"""Lambda waits about a minute, then two, before retrying a failed asynchronous event."""
DESTINATIONS = {
    "WorkerFunction": "ReconcileFunction",
    "ReconcileFunction": None,
    "SweepFunction": None,
}
"""Each function's on-failure destination (template.yaml): a function, or None for the
reconcile dead-letter queue."""


@dataclass(eq=False)
class Event:
    eid: int
    function: str
    payload: dict[str, Any]
    queued_ms: int
    attempt: int = 0
    """Deliveries that failed so far."""
    not_before_ms: int = 0
    source: str = "invoke"

    def describe(self) -> str:
        what = self.payload.get("taskId") or self.payload.get("detail", {}).get("name") or ""
        if "requestPayload" in self.payload:
            what = f"lost leg {self.payload['requestPayload'].get('taskId', '')}"
        return f"{self.function}#{self.eid}({self.source} {what})"


@dataclass
class SimLambda:
    """The Lambda service: asynchronous queues, retries, destinations (and `Invoke`)."""

    clock: Any
    spawn: Callable[[str, str, Callable[[], Any], Callable[[Process], None]], Process]
    body_of: Callable[[str, dict[str, Any]], Callable[[], Any]]
    queue: list[Event] = field(default_factory=list)
    dead_letters: list[Event] = field(default_factory=list)
    delivered: int = 0
    duplicates: int = 0
    _ids: Any = field(default_factory=lambda: itertools.count(1))
    _configs: dict[str, AsyncConfig] = field(default_factory=dict)

    def config(self, function: str) -> AsyncConfig:
        if function not in self._configs:
            self._configs[function] = async_config(function)
        return self._configs[function]

    # -- the API the adapters call (through simulation.sdk.SimClient) -----------------------------

    def invoke(
        self, FunctionName: str, InvocationType: str = "RequestResponse", Payload: bytes = b""
    ) -> dict[str, Any]:
        if InvocationType != "Event":
            raise ClientError(
                {"Error": {"Code": "InvalidParameterValueException", "Message": "not simulated"}},
                "Invoke",
            )
        self.enqueue(FunctionName, json.loads(Payload or b"{}"), source="invoke")
        return {"StatusCode": 202}

    # -- the service's side -----------------------------------------------------------------------

    def enqueue(self, function: str, payload: dict[str, Any], *, source: str) -> Event:
        now = self.clock.now_ms()
        event = Event(next(self._ids), function, payload, now, source=source)
        self.queue.append(event)
        expires = now + self.config(function).max_age_s * 1000
        self.clock.at(expires, lambda: self._expire(event))
        return event

    def deliver(self, event: Event, *, twice: bool = False) -> Process | None:
        """Run the function on `event` (a copy stays queued if `twice`)."""
        if event not in self.queue:
            return None
        if twice:
            self.duplicates += 1
            copy = Event(
                event.eid,
                event.function,
                event.payload,
                event.queued_ms,
                event.attempt,
                event.not_before_ms,
                event.source,
            )
            self.queue.append(copy)
        self.queue.remove(event)
        self.delivered += 1
        self.clock.advance_to(event.not_before_ms)
        body = self.body_of(event.function, event.payload)
        return self.spawn(
            f"{event.function}",
            _function_kind(event.function),
            body,
            lambda process: self._after(event, process),
        )

    def _after(self, event: Event, process: Process) -> None:
        if process.state == "done":
            return
        config = self.config(event.function)
        if event.attempt < config.retries:
            # The same event again (its age still counts from when it was queued).
            delay_s = RETRY_DELAYS_S[min(event.attempt, len(RETRY_DELAYS_S) - 1)]
            event.attempt += 1
            event.not_before_ms = self.clock.now_ms() + delay_s * 1000
            self.queue.append(event)
            return
        self._fail(event, "RetriesExhausted", process)

    def _expire(self, event: Event) -> None:
        if event in self.queue:
            self.queue.remove(event)
            self._fail(event, "EventAgeExceeded", None)

    def _fail(self, event: Event, condition: str, process: Process | None) -> None:
        destination = DESTINATIONS.get(event.function)
        if destination is None:
            self.dead_letters.append(event)
            return
        response: dict[str, Any] = {}
        if process is not None:
            kind = type(process.error).__name__ if process.error is not None else "Unknown"
            if process.timed_out:
                kind = "Sandbox.Timedout"
            elif process.state == "crashed":
                kind = "Runtime.ExitError"
            response = {"errorType": kind, "errorMessage": "simulated"}
        record = {
            "version": "1.0",
            "requestContext": {
                "requestId": f"sim-{event.eid}",
                "functionArn": f"arn:aws:lambda:us-east-1:123456789012:function:{event.function}",
                "condition": condition,
                "approximateInvokeCount": event.attempt + 1,
            },
            "requestPayload": event.payload,
            "responseContext": {"statusCode": 200, "functionError": "Unhandled"},
            "responsePayload": response,
        }
        self.enqueue(destination, record, source="on-failure")

    def redrive(self) -> None:
        """The dead-letter queue's alarm was answered: its events are delivered again."""
        for event in self.dead_letters:
            self.enqueue(event.function, event.payload, source="redrive")
        self.dead_letters.clear()


def _function_kind(function: str) -> str:
    return {
        "WorkerFunction": "worker",
        "ReconcileFunction": "reconcile",
        "SweepFunction": "sweep",
        "AskFunction": "ask",
    }.get(function, function)
