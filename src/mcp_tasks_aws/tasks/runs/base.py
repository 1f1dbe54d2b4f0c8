"""The port of what runs a task: `Run`, the life cycle every way of running fills in.

A run is chosen once, when the task is created (`serves`, in the registry's order), and named
on the record (`TaskRecord.run`); from then on whoever acts on the task asks its run instead of
telling the runs apart:

| step | who asks | what the run does |
| --- | --- | --- |
| `prepare` | create, before the first write | what the record holds from its first write |
| `start` | create, after the first write | starts the task's work; raises if it did not start |
| `resume` | `tasks/update`, the last outstanding answer recorded | hands the answers to the work |
| `release` | `tasks/cancel`, a refused question | stops the work (logged, never raised) |
| `settle_lost` | the reconciler, on the event of an end | settles a task its work left active |
| `may_be_running` | the sweeper, on a task nothing holds | whether anything runs it (`Liveness`) |

A run holds no state of its own: it acts on a record through the ports it is given
(`RunPorts`), and every write it makes is a move of `tasks.transitions`, so a run cannot
change what may race with what. What the runs genuinely differ in beyond these steps stays
data on the record: who holds the task (`held_by`, the fence of a direct leg), the execution
that is the task's work (`execution_arn`), and what a park stores (`task_token`: a Step
Functions token, none from a direct leg, a workflow's waiting state's token).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Literal, NamedTuple, TypeVar

from mcp_tasks_aws.protocol.errors import INTERNAL_ERROR
from mcp_tasks_aws.tasks.model import TaskRecord, now_ms

if TYPE_CHECKING:
    from mcp_tasks_aws.tasks.legs import LegRunner
    from mcp_tasks_aws.tasks.ports import DirectLegs, Runner, TaskStore, Workflows
    from mcp_tasks_aws.tasks.workflow import DoorKeys
    from mcp_tasks_aws.tools.registry import ToolSpec

_P = TypeVar("_P")

Liveness = Literal["stranded", "running", "adopt", "unknown"]
"""The sweeper's answer about a task nothing holds for good (`Run.may_be_running`):

- `stranded`: nothing runs it and nothing will: the sweeper fails it;
- `running`: its work runs; its end (or the reconciler) settles it;
- `adopt`: its work runs and reads the task afresh at every write (no leg fence to break):
  the sweeper moves its leg on, out of the candidates, so it is looked at once;
- `unknown`: its work ended (the reconciler's to settle) or cannot be asked here.
"""


class LostEnd(NamedTuple):
    """An end the reconciler heard of: whose work ended (`run`), for which task, and how.

    `status` is the run's own word for the end: a direct leg's reason (`timeout`, `crash`,
    `expired`), an execution's status (`FAILED`, `TIMED_OUT`, `ABORTED`, `SUCCEEDED`). The
    rest is what the event carried about an execution that is the task's work.
    """

    run: str
    task_id: str
    status: str
    execution_arn: str = ""
    output: str | None = None
    error: str | None = None
    cause: str | None = None


class RunPorts(NamedTuple):
    """The ports a run may use, as the function asking has them (absent: None).

    The API function has the starting ports, the reconciler the store and a way to record a
    result (`legs`, made on first use: it loads the tool set), the sweeper the read-only ones.
    A run that needs a port it was not given raises RuntimeError naming it. Ports of runs
    added beside these are in `adapters`, by run name (each such run checks its own).
    (A NamedTuple: cheaper to define than a dataclass, and every cold start defines it.)
    """

    store: TaskStore
    runner: Runner | None = None
    """The task state machine's executions (Step Functions): the legs of `legs` and `direct`."""
    direct_legs: DirectLegs | None = None
    """First legs queued without a state machine (an asynchronous invoke of the worker)."""
    workflows: Workflows | None = None
    """Declared workflows' executions (managed Standard machines)."""
    door_keys: DoorKeys | None = None
    """The capabilities a declared workflow's execution gets in its input."""
    legs: Callable[[], LegRunner] | None = None
    """The worker's leg runner (the tool set, the result store): how an end records a result."""
    clock: Callable[[], int] = now_ms
    sleep: Callable[[float], None] = time.sleep
    adapters: Mapping[str, Any] = MappingProxyType({})


def lost(message: str) -> dict[str, Any]:
    """The JSON-RPC error a task lost by its work fails with."""
    return {"code": INTERNAL_ERROR, "message": message}


class Run(ABC):
    """One way of running a task (see the module docstring); subclasses fill in every step.

    `name` is what the record stores and the registry finds it by: never reuse one.
    """

    name: ClassVar[str]

    def __init__(self, ports: RunPorts) -> None:
        self.ports = ports

    @classmethod
    @abstractmethod
    def serves(cls, spec: ToolSpec, ports: RunPorts) -> bool:
        """Whether tasks of the tool `spec` can run this way with `ports`."""

    def prepare(self, record: TaskRecord, spec: ToolSpec) -> TaskRecord:
        """The new task's record as its first write holds it (`record.run` is this run's)."""
        return record

    @abstractmethod
    def start(self, record: TaskRecord, spec: ToolSpec) -> None:
        """Start the work of a task just written. Raises if it certainly did not start
        (`TargetUnavailable` when its target refused it); returns when it runs, or when it
        cannot be told (the sweeper learns it later)."""

    @abstractmethod
    def resume(self, record: TaskRecord, answered: bool) -> None:
        """Every outstanding request of `record` is answered: hand the answers to the work.
        `answered`: this update's own write recorded them (else a retry resumes again)."""

    @abstractmethod
    def release(self, record: TaskRecord) -> None:
        """The task was cancelled or refused (it is over for good): stop its work. A failure
        may raise: it only leaves compute running, so the service logs it and answers the
        cancel anyway; a retried cancel tries again."""

    @abstractmethod
    def settle_lost(self, end: LostEnd) -> str:
        """The work ended without ending its task: settle the task (one guarded move, so a
        task that ended first, cancelled included, is left alone). What happened: `failed`,
        `completed`, `unchanged` or `ignored` (the end is not one of this run's tasks)."""

    @abstractmethod
    def may_be_running(self, record: TaskRecord) -> Liveness:
        """The sweeper's question about `record`, which nothing holds for good and which
        was left long enough (`tasks.sweep.is_stranded`)."""

    @property
    def store(self) -> TaskStore:
        return self.ports.store

    def need(self, port: _P | None, what: str) -> _P:
        """`port`, which this run cannot do without (RuntimeError naming `what` if absent)."""
        if port is None:
            raise RuntimeError(f"the {self.name} run needs {what}, and none is configured")
        return port
