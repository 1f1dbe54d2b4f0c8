"""One simulated deployment: the real composition root (`app.App`) with its AWS adapters fed
simulated AWS, and the functions' entry points.

The parts are the deployed ones: `App` builds the server (both eras, task handles, listen),
and the adapters are the real `DynamoTaskStore` (or the in-memory twin), `StepFunctionsRunner`,
`LambdaDirectLegs` and `StepFunctionsWorkflows`, each given a `simulation.sdk.SimClient`.
Time enters where the code already takes it: the domain's `clock`/`sleep`, and the
`clock`/`sleep` of the listen windows, handle waits and 2025-11-25 result streams. (2025-11-25
sessions, question holds and sealed states keep the wall clock: nothing of theirs expires
within a run.)

Functions (`body_of`): what each Lambda function's handler calls, with the handler's event
shapes (`handlers/worker.py`, `reconcile.py`, `sweep.py`, `ask.py`; the reconciler reads its
events with the handler's own `lost_end`); the handlers' Powertools shells are not run, their
domain calls are, with the run's clock.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from mcp_tasks_aws.app import App
from mcp_tasks_aws.aws.dynamodb import DynamoChangeFeed, DynamoTaskStore, room_for_result
from mcp_tasks_aws.aws.lambda_legs import LambdaDirectLegs
from mcp_tasks_aws.aws.sessions import DynamoLegacySessionStore
from mcp_tasks_aws.aws.stepfunctions import StepFunctionsRunner
from mcp_tasks_aws.aws.targets import StepFunctionsWorkflows
from mcp_tasks_aws.config import Settings
from mcp_tasks_aws.protocol.transport import HttpTransport
from mcp_tasks_aws.server.legacy.questions import TASK_ROUTE
from mcp_tasks_aws.server.legacy.sessions import InMemoryLegacySessionStore
from mcp_tasks_aws.tasks.legs import LegRunner
from mcp_tasks_aws.tasks.memory import InMemoryTaskStore
from mcp_tasks_aws.tasks.reconcile import settle_lost
from mcp_tasks_aws.tasks.runs.base import RunPorts
from mcp_tasks_aws.tasks.runs.registry import Runs
from mcp_tasks_aws.tasks.service import TaskService
from mcp_tasks_aws.tasks.sweep import sweep_stranded
from mcp_tasks_aws.tasks.workflow import AskRefused, DoorKeys, WorkflowDoors
from simulation import tools as sim_tools
from simulation.aws_lambda import SimLambda
from simulation.aws_stepfunctions import TASK_MACHINE, SimStepFunctions
from simulation.clock import VirtualClock
from simulation.sdk import Sdk, SimClient
from simulation.stores import FaultyTwin, RecordingDynamo, Trail

SECRET = b"simulation-state-secret-0123456789"
WORKER = "WorkerFunction"
LISTEN_WINDOW_MS = 4000
LISTEN_POLL_MS = 1000
INLINE_BUDGET_MS = 3000
STRANDED_AFTER_S = 1800
LOST_STATUSES = frozenset({"FAILED", "TIMED_OUT", "ABORTED"})

_toolset = None


def toolset() -> Any:
    global _toolset
    if _toolset is None:
        _toolset = sim_tools.build()
    return _toolset


class StepError(Exception):
    """A function error whose name is what Step Functions reports (a workflow's Catch)."""

    def __init__(self, state_error: str, message: str) -> None:
        super().__init__(message)
        self.state_error = state_error


class Deployment:
    def __init__(
        self,
        *,
        clock: VirtualClock,
        sdk: Sdk,
        trail: Trail,
        lambda_: SimLambda,
        sfn: SimStepFunctions,
        dynamodb: Any | None = None,
        table: str = "sim-tasks",
    ) -> None:
        self.clock = clock
        settings = Settings(
            tools_module="simulation",
            state_secret=SECRET,
            deployment_id="sim",
            task_table=table,
            state_machine_arn=TASK_MACHINE,
            worker_function=WORKER,
            listen_window_ms=LISTEN_WINDOW_MS,
            listen_poll_ms=LISTEN_POLL_MS,
            inline_budget_ms=INLINE_BUDGET_MS,
            stranded_after_s=STRANDED_AFTER_S,
        )
        app = App(settings, toolset=toolset())
        sfn_client: Any = SimClient("stepfunctions", sfn, sdk)
        lambda_client: Any = SimClient("lambda", lambda_, sdk)
        if dynamodb is None:
            self.twin: InMemoryTaskStore | None = InMemoryTaskStore(clock=clock.now_ms)
            store: Any = FaultyTwin(self.twin, sdk, trail)
            feed: Any = _Feed()
            sessions: Any = InMemoryLegacySessionStore()
        else:
            self.twin = None
            ddb: Any = SimClient("dynamodb", RecordingDynamo(dynamodb, trail), sdk)
            store = DynamoTaskStore(ddb, table, clock=clock.now_ms)
            feed = DynamoChangeFeed(ddb, table)
            sessions = DynamoLegacySessionStore(ddb, table)
        self.dynamodb = dynamodb
        self.table = table
        runner = StepFunctionsRunner(sfn_client, TASK_MACHINE)
        workflows = StepFunctionsWorkflows(sfn_client)
        door_keys = DoorKeys(SECRET, audience="sim", clock=clock.now_ms)
        # The adapters App would make from boto3 clients, made from the simulated ones.
        app.__dict__.update(
            store=store,
            change_feed=feed,
            runner=runner,
            direct_legs=LambdaDirectLegs(lambda_client, WORKER),
            workflows=workflows,
            door_keys=door_keys,
            results=None,
            legacy_sessions=sessions,
        )
        app.__dict__["tasks"] = TaskService(
            store,
            runner,
            direct_legs=app.direct_legs,
            workflows=workflows,
            door_keys=door_keys,
            run_adapters=app.run_adapters,
            default_ttl_ms=settings.default_ttl_ms,
            max_ttl_ms=settings.max_ttl_ms,
            default_poll_interval_ms=settings.poll_interval_ms,
            max_poll_interval_ms=settings.max_poll_interval_ms,
            clock=clock.now_ms,
            sleep=clock.sleep,
        )
        self.app = app
        self.store = store
        self.runner = runner
        self.workflows = workflows
        self.service: TaskService = app.__dict__["tasks"]
        self.transport = self._transport(app)
        self.legs = LegRunner(
            store,
            runner,
            app.toolset,
            results=None,
            clock=clock.now_ms,
            result_room=room_for_result,
            list_changed=feed.bump,
            sleep=clock.sleep,
        )
        self.doors = WorkflowDoors(store, door_keys, workflows, clock=clock.now_ms)
        # What the reconcile function's handler builds (`handlers/reconcile.py`).
        legs = self.legs
        self.runs = Runs(
            RunPorts(
                store,
                workflows=workflows,
                legs=lambda: legs,
                adapters=app.run_adapters,
                clock=clock.now_ms,
                sleep=clock.sleep,
            )
        )

    def _transport(self, app: App) -> HttpTransport:
        transport = app.transport()
        server = app.server
        server.listener.clock, server.listener.sleep = self.clock.monotonic, self.clock.sleep
        server.handles.clock, server.handles.sleep = self.clock.monotonic, self.clock.sleep
        gate = transport.legacy._get()  # build the 2025-11-25 side now, to set its clocks
        legacy_tasks = gate.answer_routes[TASK_ROUTE].__self__
        results = legacy_tasks.results
        results.clock, results.sleep = self.clock.monotonic, self.clock.sleep
        return transport

    # -- the functions ----------------------------------------------------------------------------

    def body_of(self, function: str, payload: dict[str, Any]) -> Callable[[], Any]:
        """What an invocation of `function` with `payload` runs (its handler's domain calls)."""
        if function == WORKER:
            task_id = str(payload["taskId"])
            token = payload.get("taskToken")
            if token:
                return lambda: self.legs.run(task_id, str(token))
            return lambda: self.legs.run_direct(task_id)
        if function == "ReconcileFunction":
            return lambda: self.reconcile(payload)
        if function == "SweepFunction":
            return lambda: sweep_stranded(
                self.store,
                self.runner,
                workflows=self.workflows,
                adapters=self.app.run_adapters,
                stranded_after_ms=STRANDED_AFTER_S * 1000,
                clock=self.clock.now_ms,
            )
        if function == "AskFunction":
            return lambda: self.ask(payload)
        raise KeyError(function)

    def reconcile(self, event: dict[str, Any]) -> str:
        """`handlers/reconcile.py`: the end an event reports (read by the handler's own
        `lost_end`), settled by the run it belongs to."""
        from handlers.reconcile import lost_end

        found = lost_end(event, TASK_MACHINE)
        if found is None:
            return "ignored"
        end, _ = found
        return settle_lost(self.runs, end)

    def ask(self, event: dict[str, Any]) -> dict[str, str]:
        """`handlers/ask.py`: a workflow's question or report."""
        task_id = str(event.get("taskId", ""))
        execution_arn = str(event.get("executionArn", ""))
        capability = event.get("capability")
        try:
            if event.get("action") == "ask":
                key = self.doors.ask(
                    task_id, execution_arn, str(event["taskToken"]), event["request"], capability
                )
                return {"outcome": "asked", "key": key}
            changed = self.doors.report(
                task_id, execution_arn, str(event.get("message", "")), capability=capability
            )
            return {"outcome": "reported" if changed else "dropped"}
        except AskRefused as exc:
            raise StepError(exc.error, str(exc)) from None

    def final_records(self) -> dict[str, Any]:
        """Every task record as the store holds it now (read outside any process)."""
        if self.twin is not None:
            return {r.task_id: r for r in self.twin.all_records()}
        from mcp_tasks_aws.aws.dynamodb_items import decode
        from mcp_tasks_aws.tasks.model import is_task_id

        items = self.dynamodb.scan(TableName=self.table, ConsistentRead=True)["Items"]
        return {
            i["taskId"]["S"]: decode(i)
            for i in items
            if is_task_id(i["taskId"]["S"]) and "owner" in i
        }


class _Feed:
    """The change feed of the twin's deployment (list versions; no task state)."""

    def __init__(self) -> None:
        self._versions: dict[str, int] = {}

    def versions(self) -> dict[str, int]:
        return {kind: self._versions.get(kind, 0) for kind in ("tools", "prompts")}

    def bump(self, kind: str) -> None:
        self._versions[kind] = self._versions.get(kind, 0) + 1


def task_ids(seed_bytes: bytes) -> Callable[[], str]:
    """Task ids for a run: 128 bits each, as `tasks.model.new_task_id` mints them, but drawn
    from the run's seed so a replay mints the same ones."""
    import hashlib

    counter = itertools.count()

    def mint() -> str:
        return hashlib.sha256(seed_bytes + str(next(counter)).encode()).hexdigest()[:32]

    return mint
