"""One simulated world: a deployment, the AWS it runs on, its clients, its clock, its history.

The driver (`simulation.machine`) acts on it one step at a time, each step a choice the seed
made: a client starts an operation; a waiting process goes on, its next AWS attempt meeting
a fault or not (or the function crashing there); Lambda delivers a queued event (once or
twice); an execution's state invokes its function; time passes. Nothing else moves: no
thread runs on its own (`simulation.scheduler`), no timer fires but on the virtual clock.

At the end (`settle`), faults stop and the world is run to rest as production would be given
time: every waiting process goes on, every event is delivered, the owners answer what their
tasks still ask, time passes beyond the sweeper's bound and the sweeper runs. Then the checker
judges what was recorded (`simulation.checker`).
"""

from __future__ import annotations

import contextlib
import itertools
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from mcp_tasks_aws.protocol.transport import HttpRequest, HttpResponse
from mcp_tasks_aws.tasks import service as task_service
from simulation import tools as sim_tools
from simulation.aws_lambda import Event, SimLambda
from simulation.aws_stepfunctions import Execution, SimStepFunctions
from simulation.checker import Verdict, judge
from simulation.clients import PRINCIPALS, UNKNOWN_TASK, Client
from simulation.clock import EPOCH_MS, VirtualClock
from simulation.deployment import STRANDED_AFTER_S, Deployment, task_ids
from simulation.history import Created, Exchange, History
from simulation.moto_aws import function_timeout_s, parameter_default
from simulation.scheduler import OK, Crashed, Directive, Process, Scheduler, current
from simulation.sdk import ATTEMPT_MS, Sdk, Stats
from simulation.stores import Trail

PROBE = {"name": "probe", "version": "1"}
SWEEP_PERIOD_S = int(parameter_default("SweepSchedule").split("(")[1].split()[0]) * 60
API_TIMEOUT_S = function_timeout_s("ApiFunction")
SETTLE_ROUNDS = 4000
"""Steps the settling may take before the world is said not to come to rest."""
QUIET_AFTER_S = 60
"""Waits this long or longer are quiet periods (see `World.wait`)."""
QUIET_STEPS = 400
"""Points in flight a quiet period runs at most (a listen window polls, a client retries)."""


@dataclass
class Effect:
    """A step's side effect, as it really happened."""

    task_id: str
    step: str
    seq: int
    writer: str


@dataclass
class WorldConfig:
    store: str = "twin"
    """`twin` (the in-memory store) or `moto` (the DynamoDB adapter on moto)."""
    clients: tuple[tuple[str, int], ...] = (
        ("modern", 0),
        ("modern", 1),
        ("legacy", 0),
        ("handles", 1),
    )
    """(era, principal index) of each client."""
    seed_bytes: bytes = b"0"


@dataclass
class World:
    config: WorldConfig
    scheduler: Scheduler = field(default_factory=Scheduler)
    stats: Stats = field(default_factory=Stats)
    history: History = field(default_factory=History)
    effects: list[Effect] = field(default_factory=list)
    operations: dict[str, int] = field(default_factory=dict)
    harness_errors: list[str] = field(default_factory=list)
    function_ends: Counter[str] = field(default_factory=Counter)
    """Invocations that did not return: `worker crashed`, `reconcile failed`, ..."""

    def __post_init__(self) -> None:
        self.seq = itertools.count(1)
        self.clock = VirtualClock(self.scheduler)
        self.scheduler.before_resume = self._before_resume
        self.sdk = Sdk(self.scheduler, self.clock, self.stats)
        self.trail = Trail(self.seq, self.clock, observe=self._running_executions)
        self.lambda_ = SimLambda(self.clock, self._spawn, self._body_of)
        self.sfn = SimStepFunctions(self.clock, self.lambda_, self._spawn, self._body_of)
        self.registry: dict[str, Created] = {}
        self._exits = contextlib.ExitStack()
        dynamodb = None
        table = "sim-tasks"
        if self.config.store == "moto":
            from simulation.stores import moto_table

            table = f"sim-{self.config.seed_bytes.hex()[:16]}-{id(self) % 10_000}"
            dynamodb = self._exits.enter_context(moto_table(table))
        self._exits.enter_context(self._patched())
        self.deployment = Deployment(
            clock=self.clock,
            sdk=self.sdk,
            trail=self.trail,
            lambda_=self.lambda_,
            sfn=self.sfn,
            dynamodb=dynamodb,
            table=table,
        )
        self.clients = [
            Client(self, f"{era[0]}{n}", PRINCIPALS[principal], era)
            for n, (era, principal) in enumerate(self.config.clients)
        ]
        self.operators = {
            p: Client(self, f"owner-{p.split('|')[1]}", p, "modern") for p in PRINCIPALS
        }
        self._schedule_sweep()

    @contextlib.contextmanager
    def _patched(self) -> Iterator[None]:
        """The run's task ids (from its seed) and its side-effect ledger."""
        mint, effect, outside = task_service.new_task_id, sim_tools.side_effects, sim_tools.outside
        task_service.new_task_id = task_ids(self.config.seed_bytes)  # type: ignore[assignment]
        sim_tools.side_effects = self._effect
        sim_tools.outside = lambda: self.stats.attempts  # changes with every AWS call
        try:
            yield
        finally:
            task_service.new_task_id = mint  # type: ignore[assignment]
            sim_tools.side_effects, sim_tools.outside = effect, outside

    def close(self) -> None:
        self.scheduler.kill_all()
        self._exits.close()

    # -- how processes meet their points -------------------------------------------------------

    def _before_resume(self, process: Process, directive: Directive) -> Directive:
        point = process.point
        assert point is not None
        if process.timed_out:
            return directive  # its function's timeout: it ends where it waits, now
        if point.kind == "sleep":
            self.clock.advance_to(point.until_ms)
            return OK
        self.clock.advance_to(max(self.clock.now_ms() + ATTEMPT_MS, point.until_ms))
        if directive.fault == "crash":
            if not process.crashable:
                return OK
            self.stats.crash_points[point.site] += 1
        return directive

    def _spawn(self, name: str, function: str, body: Any, on_exit: Any) -> Process:
        def exited(process: Process) -> None:
            if process.state != "done":
                ended = "timed out" if process.timed_out else process.state
                self.function_ends[f"{function} {ended}"] += 1
            on_exit(process)

        process = self.scheduler.spawn(name, function, body, exited)
        if not process.over:
            self._deadline(process, function_timeout_s(name), process.invocation)
        return process

    def _deadline(self, process: Process, seconds: int, invocation: int) -> None:
        """Lambda ends an invocation at its function's `Timeout`: wherever it waits then."""

        deadline = self.clock.now_ms() + seconds * 1000
        process.deadline_ms = deadline

        def expire() -> None:
            if (
                process.state == "blocked"
                and process.invocation == invocation
                and process.crashable
            ):
                process.timed_out = True
                self.scheduler.resume(process, Directive("crash"))

        self.clock.at(deadline, expire)

    def _body_of(self, function: str, payload: dict[str, Any]) -> Any:
        return self.deployment.body_of(function, payload)

    def _effect(self, task_id: str, step: str) -> None:
        process = current()
        self.effects.append(
            Effect(task_id, step, next(self.seq), process.name if process else "driver")
        )

    def _running_executions(self, task_id: str) -> frozenset[str]:
        """Ground truth for the trail: what runs `task_id` as a write lands (its executions
        still running)."""
        return frozenset(
            e.arn
            for e in self.sfn.executions.values()
            if e.name == task_id and e.status == "RUNNING"
        )

    def _schedule_sweep(self) -> None:
        def fire() -> None:
            self.lambda_.enqueue("SweepFunction", {"source": "aws.scheduler"}, source="schedule")
            self._schedule_sweep()

        self.clock.at(self.clock.now_ms() + SWEEP_PERIOD_S * 1000, fire)

    # -- what clients use ----------------------------------------------------------------------

    def http(
        self, client: Client, method: str, request: HttpRequest, task_id: str | None
    ) -> tuple[Exchange, HttpResponse | None]:
        """One request through API Gateway to the API function (in a client's process)."""
        process = current()
        assert process is not None
        exchange = Exchange(
            client.name, client.era, method, task_id, next(self.seq), self.clock.now_ms()
        )
        self.history.exchanges.append(exchange)
        response: HttpResponse | None
        process.crashable, process.function = True, "api"
        process.invocation += 1
        self._deadline(process, API_TIMEOUT_S, process.invocation)
        try:
            response = self.deployment.transport.handle(request)
            response.read_all()
        except Crashed:
            response = None  # the function died: API Gateway answers 502
        finally:
            process.crashable, process.function = False, "client"
            process.invocation += 1
            process.deadline_ms = None
        exchange.answered, exchange.answered_ms = next(self.seq), self.clock.now_ms()
        if response is None:
            exchange.status = 504 if process.timed_out else 502
            process.timed_out = False
        else:
            exchange.status = response.status
        exchange.outcome = {502: "crashed", 503: "busy", 504: "timed out"}.get(
            exchange.status, "ok"
        )
        return exchange, response

    def acknowledged(self, created: Created) -> None:
        self.history.created.append(created)
        self.registry[created.task_id] = created

    def owner_of(self, task_id: str) -> str | None:
        created = self.registry.get(task_id)
        return created.principal if created is not None else None

    def unknown_answer(self, client: Client, method: str) -> Any:
        """What `method` answers `client`'s era for an id nobody has: asked after the run,
        outside any process (`finish`); until then, the question."""
        return (client.era, method)

    # -- the driver's actions ------------------------------------------------------------------

    def note(self, text: str) -> None:
        """A line of the run's log (what a reader of a failure follows)."""
        self.history.notes.append(f"t={(self.clock.now_ms() - EPOCH_MS) / 1000:9.3f}s {text}")

    def idle_clients(self) -> list[Client]:
        return [c for c in self.clients if not c.busy]

    def tasks_of(self, principal: str) -> list[str]:
        return [t for t, c in self.registry.items() if c.principal == principal]

    def start(self, client: Client, operation: str, task_id: str | None, tool: str) -> Process:
        client.busy = True
        self.operations[operation] = self.operations.get(operation, 0) + 1
        label = f"{client.name}:{operation}"
        self.note(f"{label} {task_id or tool}")

        def exited(process: Process) -> None:
            client.busy = False
            if process.state == "failed":
                self.harness_errors.append(f"{label}: {process.error!r}")

        return self.scheduler.spawn(
            label, "client", client.body(operation, task_id, tool), exited, crashable=False
        )

    def advance(self, process: Process, fault: str) -> None:
        where = process.point.label if process.point else ""
        self.note(f"{process.name}#{process.pid} {where} {fault}")
        self.scheduler.resume(process, Directive(fault))  # type: ignore[arg-type]

    def deliver(self, event: Event, twice: bool) -> None:
        self.note(f"deliver {event.describe()}{' twice' if twice else ''}")
        self.lambda_.deliver(event, twice=twice)

    def act(self, execution: Execution, fault: str) -> None:
        self.note(f"sfn {execution.describe()} {fault}")
        self.sfn.act(execution, fault)

    def wait(self, seconds: int) -> None:
        """`seconds` go by. A short wait moves only the clock (what is in flight stays where
        it waits, short of its function's timeout); a long one (a minute or more) is a quiet
        period: what is in flight goes on without faults (its calls are answered, its sleeps
        slept) until it ends or waits past the period. Either way what is queued (Lambda's
        events, an execution's next state) stays queued: AWS may be that late."""
        until = self.clock.now_ms() + seconds * 1000
        if seconds < QUIET_AFTER_S:
            deadlines = [
                p.deadline_ms
                for p in self.scheduler.blocked()
                if p.crashable and p.deadline_ms is not None
            ]
            if deadlines:
                until = max(self.clock.now_ms(), min(until, min(deadlines) - 1000))
            self.note(f"wait {(until - self.clock.now_ms()) / 1000:g}s")
            self.clock.advance_to(until)
            return
        self.note(f"wait {seconds}s (what is in flight goes on)")
        for _ in range(QUIET_STEPS):
            due = [p for p in self.scheduler.blocked() if p.point and p.point.until_ms <= until]
            if not due:
                break
            process = min(due, key=lambda p: (p.point.until_ms if p.point else 0, p.waiting_since))
            self.advance(process, "ok")
        self.clock.advance_to(until)

    # -- the end -------------------------------------------------------------------------------

    def settle(self) -> bool:
        """Run the world to rest without faults; False if it does not come to rest.

        Everything waiting goes on and every owner answers what its tasks ask; the dead-letter
        queue is redriven (its alarm was answered); then time jumps past the sweeper's bound
        (states time out, events age, the last scheduled sweeps run), and the world is
        brought to rest again, twice over."""
        self.history.notes.append("-- settling: no more faults; everything waiting goes on --")
        rounds = self._quiesce(0)
        self.lambda_.redrive()
        for _ in range(2):
            rounds = self._quiesce(rounds)
            horizon = self.clock.now_ms() + (STRANDED_AFTER_S + 2 * SWEEP_PERIOD_S + 60) * 1000
            self.note("time passes beyond the sweeper's bound")
            self.clock.advance_to(horizon)
            rounds = self._quiesce(rounds)
        return rounds < SETTLE_ROUNDS

    def _quiesce(self, rounds: int) -> int:
        while rounds < SETTLE_ROUNDS and (
            self._step_without_faults() or self._answer_open_questions()
        ):
            rounds += 1
        return rounds

    def _step_without_faults(self) -> bool:
        blocked = self.scheduler.blocked()
        if blocked:
            process = min(
                blocked, key=lambda p: (p.point.until_ms if p.point else 0, p.waiting_since)
            )
            self.advance(process, "ok")
            return True
        if self.lambda_.queue:
            self.deliver(min(self.lambda_.queue, key=lambda e: e.not_before_ms), False)
            return True
        pending = self.sfn.pending()
        if pending:
            self.act(min(pending, key=lambda e: e.not_before_ms), "ok")
            return True
        return False

    def _answer_open_questions(self) -> bool:
        """The owners answer what their tasks still ask (a person gets to it, eventually)."""
        started = False
        # The trail's last write of each task is the task as it stands (no scan of the table).
        latest = {task_id: writes[-1].record for task_id, writes in self.trail.writes.items()}
        for task_id, record in sorted(latest.items()):
            if record.status != "input_required" or not record.input_requests:
                continue
            if record.is_expired(self.clock.now_ms()):
                continue
            operator = self.operators[record.owner]
            self.start(operator, "get", task_id, "")
            self._run_to_rest_of(operator)
            if operator.known.get(task_id) is not None and operator.known[task_id].open_keys:
                self.start(operator, "answer", task_id, "")
                self._run_to_rest_of(operator)
            started = True
        return started

    def _run_to_rest_of(self, client: Client) -> None:
        while client.busy:
            if not self._step_without_faults():
                break

    def judged(self) -> Verdict:
        """Settle the world, then judge what it recorded (`simulation.checker`)."""
        at_rest = self.settle()
        self.finish()
        return judge(
            self.history,
            self.trail.writes,
            self.deployment.final_records(),
            self.effects,
            end_ms=self.clock.now_ms(),
            at_rest=at_rest,
            harness_errors=self.harness_errors,
        )

    def finish(self) -> None:
        """After the run: what an unknown id answers, for each probe to be compared with."""
        answers: dict[tuple[str, str], Any] = {}
        for probe in self.history.probes:
            key = probe.unknown_answer
            if isinstance(key, tuple) and key not in answers:
                answers[key] = self._answer_for_unknown(*key)
            if isinstance(key, tuple):
                probe.unknown_answer = answers[key]

    def _answer_for_unknown(self, era: str, method: str) -> Any:
        principal = PRINCIPALS[0]
        probe = Client(self, "probe", principal, era.split()[0])
        if probe.era == "legacy":
            params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": PROBE}
            initialize = probe._request("initialize", params)
            probe.session = self.deployment.transport.handle(initialize).headers.get(
                "mcp-session-id"
            )
        name = method.split()[-1]
        if name in ("task_status", "task_answer", "task_cancel"):
            arguments: dict[str, Any] = {"taskId": UNKNOWN_TASK}
            if name == "task_answer":
                arguments["answers"] = {"k1": {"v": "x"}}
            request = probe._request(
                "tools/call", {"name": name, "arguments": arguments}, name=name
            )
        elif name == "tasks/update":
            params = {
                "taskId": UNKNOWN_TASK,
                "inputResponses": {"k1": {"action": "accept", "content": {"v": "x"}}},
            }
            request = probe._request(name, params, name=UNKNOWN_TASK)
        else:
            request = probe._request(name, {"taskId": UNKNOWN_TASK}, name=UNKNOWN_TASK)
        from support.legacy import messages

        response = self.deployment.transport.handle(request)
        found = messages(response) if response.body or response.stream else []
        return (found[-1] if found else {}).get("error")
