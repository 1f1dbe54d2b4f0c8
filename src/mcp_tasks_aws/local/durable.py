"""Durable executions for the embedded stack: AWS's in-process runner, no account.

moto has nothing for Lambda durable functions. AWS's testing package does: its
`DurableFunctionTestRunner` runs a durable function in this process, checkpointing through an
in-memory service that keeps the execution's history, replaying the function after each wait
and callback as Lambda would. `LocalDurableExecutions` is the `tasks.ports.DurableExecutions`
the stack's functions get instead of the Lambda API adapter (`aws.durable`), around one runner
that calls the real `handlers/durable.py` (built from the stack's durable App):

- start: an execution named after the task; a name started before answers the same one (the
  real API's idempotent start);
- answer: the runner's callback success; a callback that is no longer waiting is False;
- stop and status: the execution by name;
- durable time runs `time_scale` times faster than the wall clock (`ScaledClock`): with the
  default 60, a tool's hour-long `ctx.sleep` takes a minute, and can be cancelled mid-way;
- ends: a watcher thread hands every execution that ended to the reconciler, in the event
  shape the template's rule delivers (`durable_end_event`), as `local.aws` does for Step
  Functions executions.

The runner's clock is chosen inside its constructor; it is given ours by replacing the
module's `RealClock` while it is built (the testing package is pinned: 1.4.0).
"""

from __future__ import annotations

import datetime
import json
import logging
import threading
from collections.abc import Callable
from typing import Any
from unittest import mock

from aws_durable_execution_sdk_python_testing import DurableFunctionTestRunner
from aws_durable_execution_sdk_python_testing import runner as runner_module
from aws_durable_execution_sdk_python_testing.stores.memory import InMemoryExecutionStore

logger = logging.getLogger("mcp_tasks_aws.local")

Handler = Callable[[Any, Any], Any]
DEFAULT_TIME_SCALE = 60.0
EXECUTION_TIMEOUT_S = 7 * 24 * 3600
ENDS = frozenset({"SUCCEEDED", "FAILED", "TIMED_OUT", "STOPPED"})
FUNCTION_NAME = "DurableFunction"


class ScaledClock:
    """Durable time, `scale` times faster than the wall clock from its creation on (the
    testing package's `Clock`: `now`, and `arm`, the real seconds to wait for a wake)."""

    def __init__(self, scale: float) -> None:
        if scale <= 0:
            raise ValueError("the time scale must be > 0")
        self.scale = scale
        self._origin = datetime.datetime.now(datetime.UTC)

    def now(self) -> datetime.datetime:
        elapsed = datetime.datetime.now(datetime.UTC) - self._origin
        return self._origin + elapsed * self.scale

    def arm(self, wake: datetime.datetime) -> float:
        return max((wake - self.now()).total_seconds() / self.scale, 0.0)


def durable_end_event(name: str, arn: str, status: str) -> dict[str, Any]:
    """An execution's end as the reconciler hears of it (`handlers/reconcile.py`)."""
    return {
        "source": "aws.lambda",
        "detail-type": "Durable Execution Status Change",
        "detail": {"durableExecutionName": name, "durableExecutionArn": arn, "status": status},
    }


class LocalDurableExecutions:
    """`DurableExecutions` over AWS's in-process runner (see the module docstring)."""

    def __init__(
        self,
        *,
        time_scale: float = DEFAULT_TIME_SCALE,
        on_end: Callable[[dict[str, Any]], None] | None = None,
        watch_interval_s: float = 0.2,
    ) -> None:
        self.handler: Handler | None = None
        self.clock = ScaledClock(time_scale)
        self.store = InMemoryExecutionStore()
        with mock.patch.object(runner_module, "RealClock", return_value=self.clock):
            self.runner = DurableFunctionTestRunner(
                handler=self._invoke,
                skip_time=False,
                store=self.store,
                execution_timeout=EXECUTION_TIMEOUT_S,
            )
        if self.runner._clock is not self.clock:  # the pinned package's wiring changed
            raise RuntimeError("the durable runner did not take the stack's clock")
        self._names: dict[str, str] = {}
        self._open: set[str] = set()
        self._lock = threading.Lock()
        self.on_end = on_end
        self._stop = threading.Event()
        self._watcher = threading.Thread(
            target=self._watch, args=(watch_interval_s,), name="local-durable-ends", daemon=True
        )
        self._watcher.start()

    def _invoke(self, event: Any, context: Any) -> Any:
        if self.handler is None:
            raise RuntimeError("the durable function has no handler yet")
        return self.handler(event, context)

    # -- the port -----------------------------------------------------------------------------

    def start(self, name: str, payload: dict[str, Any]) -> None:
        with self._lock:
            if name in self._names:
                return  # the same name: the same execution
            # run_async starts the execution before it returns its ARN: its first invocation
            # may run (in the runner's threads) before the ARN is recorded below, so nothing
            # may look an execution up by ARN from inside it.
            arn = self.runner.run_async(
                input=json.dumps(payload),
                function_name=FUNCTION_NAME,
                execution_name=name,
                execution_timeout=EXECUTION_TIMEOUT_S,
            )
            self._names[name] = arn
            self._open.add(name)

    def answer(self, callback_id: str, result: str) -> bool:
        try:
            self.runner.send_callback_success(callback_id, result.encode())
        except Exception:
            # Not the exception: its text names the callback id, a capability.
            logger.info("local durable callback not waiting any more")
            return False
        return True

    def status(self, name: str) -> str | None:
        arn = self._names.get(name)
        if arn is None:
            return None
        return str(self.store.load(arn).current_status().value)

    def stop(self, name: str) -> None:
        arn = self._names.get(name)
        if arn is None or self.status(name) != "RUNNING":
            return
        self.runner._executor.stop_execution(arn)  # the runner has no public stop

    # -- for tests and the stack --------------------------------------------------------------

    def arn_of(self, name: str) -> str | None:
        return self._names.get(name)

    def name_of(self, arn: str) -> str | None:
        """The name of the execution `arn` (None: not one of this runner's, or asked from
        inside its first invocation, before `start` recorded it)."""
        return next((name for name, known in self._names.items() if known == arn), None)

    def history(self, name: str) -> Any:
        """The execution's event history (what the durable service recorded)."""
        arn = self._names[name]
        return self.runner.get_execution_history(arn, include_execution_data=False)

    def _watch(self, interval_s: float) -> None:
        while not self._stop.wait(interval_s):
            for name in list(self._open):
                try:
                    status = self.status(name)
                except Exception:
                    logger.warning("local durable execution %s unreadable", name, exc_info=True)
                    continue
                if status not in ENDS:
                    continue
                self._open.discard(name)
                if self.on_end is None:
                    continue
                try:
                    self.on_end(durable_end_event(name, self._names[name], str(status)))
                except Exception:
                    logger.warning("reconciling durable execution %s failed", name, exc_info=True)

    def close(self) -> None:
        self._stop.set()
        self._watcher.join(timeout=2)
        self.runner.close()  # type: ignore[no-untyped-call]
