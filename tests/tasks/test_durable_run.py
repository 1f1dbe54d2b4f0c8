"""The durable run and the durable body, without AWS: the run over a port that records what it
is asked; the body (`tasks.durable`) executed by the real durable SDK under AWS's in-process
runner (`local.durable.LocalDurableExecutions`), over the in-memory task store.

- a tool opts in with `runner="durable"` (task-required only), and its tasks get this run,
  before any other; a server without durable executions refuses them at once, saying so;
- the run starts by the task's name, resumes by completing the parked callback with the
  answers, releases by stopping, settles a lost end (never over a task that ended first) and
  answers the sweeper from the execution's status;
- the body: steps run once across replays, a question parks the task holding the callback id,
  the answer resumes it, a sleep leaves it working with its wake-up time said, a protocol error
  fails it, and a cancel mid-sleep ends the execution.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from mcp_tasks_aws import TaskPolicy, ToolContext, ToolSet
from mcp_tasks_aws.local.durable import LocalDurableExecutions
from mcp_tasks_aws.tasks import transitions as t
from mcp_tasks_aws.tasks.durable import DurableBody
from mcp_tasks_aws.tasks.exceptions import TaskNotStarted
from mcp_tasks_aws.tasks.legs import LegRunner
from mcp_tasks_aws.tasks.memory import InMemoryTaskStore
from mcp_tasks_aws.tasks.runs.base import LostEnd, RunPorts
from mcp_tasks_aws.tasks.runs.registry import Runs
from mcp_tasks_aws.tasks.service import TaskService
from mcp_tasks_aws.tools.signature import ToolDefinitionError
from support.domain import ALICE, CAPABILITIES, RecordingRunner
from support.tasks import wait_until

CONFIRM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


@dataclass
class RecordedExecutions:
    """A `DurableExecutions` port that records each call (the run's own logic under test)."""

    calls: list[tuple[str, Any]] = field(default_factory=list)
    statuses: dict[str, str] = field(default_factory=dict)
    waiting: bool = True

    def start(self, name: str, payload: dict[str, Any]) -> None:
        self.calls.append(("start", (name, payload)))
        self.statuses[name] = "RUNNING"

    def answer(self, callback_id: str, result: str) -> bool:
        self.calls.append(("answer", (callback_id, json.loads(result))))
        return self.waiting

    def stop(self, name: str) -> None:
        self.calls.append(("stop", name))

    def status(self, name: str) -> str | None:
        return self.statuses.get(name)


def durable_tools(runs: list[str]) -> ToolSet:
    tools = ToolSet(name="durable-tests")

    @tools.tool(task="required", runner="durable")
    async def pipeline(label: str, ctx: ToolContext, nap: int = 60) -> str:
        """A step, a question, a sleep, a step."""
        first = ctx.step("first", lambda: runs.append(f"{label}:first") or "one")
        answer = await ctx.elicit("go on?", CONFIRM)
        if not (answer.accepted and (answer.content or {}).get("ok")):
            return f"{label}: stopped after {first}"
        ctx.sleep(nap)
        second = ctx.step("second", lambda: runs.append(f"{label}:second") or "two")
        return f"{label}: {first} and {second}"

    @tools.tool(task="required", runner="durable")
    def faulty(ctx: ToolContext) -> str:
        """A step, then a bug."""
        ctx.step("only", lambda: "x")
        raise ValueError("a tool bug")  # an ordinary exception: the call's error result

    @tools.tool(task="required")
    def ordinary(text: str) -> str:
        """Legs, as before."""
        return text

    return tools


# -- the registry and the run ---------------------------------------------------------------


def test_a_durable_tool_runs_only_as_a_task() -> None:
    tools = ToolSet(name="x")
    with pytest.raises(ToolDefinitionError, match="task='required'"):

        @tools.tool(task=TaskPolicy.OPTIONAL, runner="durable")
        def sometimes() -> str:
            """Never registered."""
            return ""

    with pytest.raises(ToolDefinitionError, match="runner="):

        @tools.tool(task="required", runner="lambda-on-mars")
        def elsewhere() -> str:
            """Never registered."""
            return ""


def test_durable_tools_get_the_durable_run_and_others_do_not() -> None:
    tools = durable_tools([])
    ports = RunPorts(InMemoryTaskStore(), runner=RecordingRunner(), adapters={})
    assert Runs(ports).for_spec(tools.tools["pipeline"]).name == "durable"
    assert Runs(ports).for_spec(tools.tools["ordinary"]).name == "legs"


def service(store: InMemoryTaskStore, port: RecordedExecutions | None) -> TaskService:
    adapters = {"durable": port} if port is not None else {}
    return TaskService(store, RecordingRunner(), run_adapters=adapters)


def test_a_server_without_durable_executions_refuses_a_durable_task() -> None:
    store = InMemoryTaskStore()
    spec = durable_tools([]).tools["pipeline"]
    with pytest.raises(RuntimeError, match="durable executions"):
        service(store, None).create(ALICE, spec, {"label": "a"}, CAPABILITIES)


def test_the_run_starts_resumes_releases_and_answers_the_sweeper() -> None:
    store = InMemoryTaskStore()
    port = RecordedExecutions()
    tasks = service(store, port)
    spec = durable_tools([]).tools["pipeline"]
    record = tasks.create(ALICE, spec, {"label": "a"}, CAPABILITIES)
    assert record.run == "durable"
    assert port.calls == [("start", (record.task_id, {"taskId": record.task_id}))]
    # The durable body parks the task holding the callback id; the answer resumes it.
    request = {"method": "elicitation/create", "params": {"message": "go on?"}}
    store.apply(record.task_id, *t.park(record.leg, {"q": request}, "callback-1", {}, 1))
    tasks.update(ALICE, record.task_id, {"q": {"action": "accept", "content": {"ok": True}}})
    assert port.calls[-1] == (
        "answer",
        ("callback-1", {"q": {"action": "accept", "content": {"ok": True}}}),
    )
    run = tasks.runs().named("durable")
    fresh = store.get(record.task_id)
    assert fresh is not None
    assert run.may_be_running(fresh) == "adopt"
    port.statuses.clear()
    assert run.may_be_running(fresh) == "stranded"
    port.statuses[record.task_id] = "SUCCEEDED"
    assert run.may_be_running(fresh) == "unknown"
    tasks.cancel(ALICE, record.task_id)
    assert port.calls[-1] == ("stop", record.task_id)


def test_an_answer_the_callback_no_longer_waits_for_is_said_on_the_task() -> None:
    store = InMemoryTaskStore()
    port = RecordedExecutions(waiting=False)
    tasks = service(store, port)
    record = tasks.create(ALICE, durable_tools([]).tools["pipeline"], {"label": "a"}, CAPABILITIES)
    request = {"method": "elicitation/create", "params": {"message": "go on?"}}
    store.apply(record.task_id, *t.park(record.leg, {"q": request}, "callback-1", {}, 1))
    tasks.update(ALICE, record.task_id, {"q": {"action": "decline"}})
    after = store.get(record.task_id)
    assert after is not None
    assert "not delivered" in str(after.status_message)


def test_a_lost_end_fails_an_active_task_and_leaves_an_ended_one() -> None:
    store = InMemoryTaskStore()
    port = RecordedExecutions()
    tasks = service(store, port)
    spec = durable_tools([]).tools["pipeline"]
    active = tasks.create(ALICE, spec, {"label": "a"}, CAPABILITIES)
    ended = tasks.create(ALICE, spec, {"label": "b"}, CAPABILITIES)
    tasks.cancel(ALICE, ended.task_id)
    runs = tasks.runs()
    assert (
        runs.named("durable").settle_lost(LostEnd("durable", active.task_id, "TIMED_OUT"))
        == "failed"
    )
    assert (
        runs.named("durable").settle_lost(LostEnd("durable", ended.task_id, "STOPPED"))
        == "unchanged"
    )
    assert (
        runs.named("durable").settle_lost(LostEnd("durable", "not-a-task", "FAILED")) == "ignored"
    )
    failed = store.get(active.task_id)
    assert failed is not None
    assert failed.status == "failed"
    assert "(timed_out)" in str(failed.status_message)


# -- the body, under the real SDK -------------------------------------------------------------


def under_the_sdk(
    tools: ToolSet,
) -> tuple[InMemoryTaskStore, LocalDurableExecutions, TaskService]:
    """`tools`' durable tasks run by AWS's in-process runner (durable time 60x), on the
    in-memory store; close the executions when done."""
    from mcp_tasks_aws.aws.durable_sdk import durable_handler

    store = InMemoryTaskStore()
    executions = LocalDurableExecutions(time_scale=60)
    legs = LegRunner(store, RecordingRunner(), tools, report_interval_ms=0)
    executions.handler = durable_handler(DurableBody(legs))
    tasks = TaskService(store, RecordingRunner(), run_adapters={"durable": executions})
    return store, executions, tasks


@pytest.fixture
def durable() -> Iterator[tuple[InMemoryTaskStore, LocalDurableExecutions, TaskService, list[str]]]:
    runs: list[str] = []
    store, executions, tasks = under_the_sdk(durable_tools(runs))
    try:
        yield store, executions, tasks, runs
    finally:
        executions.close()


def test_the_body_asks_sleeps_and_completes_running_each_step_once(durable: Any) -> None:
    store, executions, tasks, runs = durable
    tools = durable_tools([])
    # Its nap: a minute of durable time, one second here (time_scale=60), long enough to be seen.
    record = tasks.create(ALICE, tools.tools["pipeline"], {"label": "a", "nap": 60}, CAPABILITIES)
    parked = wait_until(lambda: (r := store.get(record.task_id)) and r.input_requests and r, 20)
    assert parked.status == "input_required"
    assert parked.task_token, "the callback id is what tasks/update completes"
    (key,) = parked.input_requests
    tasks.update(ALICE, record.task_id, {key: {"action": "accept", "content": {"ok": True}}})
    sleeping = wait_until(
        lambda: (
            (r := store.get(record.task_id)) and str(r.status_message).startswith("sleeping") and r
        ),
        20,
    )
    assert sleeping.status == "working"
    done = wait_until(lambda: (r := store.get(record.task_id)) and r.is_terminal and r, 20)
    assert done.status == "completed", done
    assert done.result["content"][0]["text"] == "a: one and two"
    assert runs == ["a:first", "a:second"]  # replayed twice, each step ran once
    wait_until(lambda: executions.status(record.task_id) == "SUCCEEDED", 10)


def test_a_tool_error_completes_the_task_with_an_error_result(durable: Any) -> None:
    store, _, tasks, _ = durable
    record = tasks.create(ALICE, durable_tools([]).tools["faulty"], {}, CAPABILITIES)
    done = wait_until(lambda: (r := store.get(record.task_id)) and r.is_terminal and r, 20)
    assert done.status == "completed"
    assert done.result["isError"] is True


def test_a_cancel_mid_sleep_stops_the_execution(durable: Any) -> None:
    store, executions, tasks, runs = durable
    tools = durable_tools([])
    record = tasks.create(ALICE, tools.tools["pipeline"], {"label": "c", "nap": 3600}, CAPABILITIES)
    parked = wait_until(lambda: (r := store.get(record.task_id)) and r.input_requests and r, 20)
    (key,) = parked.input_requests
    tasks.update(ALICE, record.task_id, {key: {"action": "accept", "content": {"ok": True}}})
    wait_until(
        lambda: (r := store.get(record.task_id)) and str(r.status_message).startswith("sleeping"),
        20,
    )
    tasks.cancel(ALICE, record.task_id)
    wait_until(lambda: executions.status(record.task_id) == "STOPPED", 10)
    final = store.get(record.task_id)
    assert final is not None
    assert final.status == "cancelled"
    assert runs == ["c:first"]


def test_a_start_that_fails_fails_the_task() -> None:
    class Refusing(RecordedExecutions):
        def start(self, name: str, payload: dict[str, Any]) -> None:
            raise ConnectionError("no Lambda")

    store = InMemoryTaskStore()
    with pytest.raises(TaskNotStarted):
        service(store, Refusing()).create(
            ALICE, durable_tools([]).tools["pipeline"], {"label": "a"}, CAPABILITIES
        )


def test_a_write_refused_because_the_sweeper_adopted_the_task_is_made_at_its_new_leg() -> None:
    """The sweeper may move a running durable task's leg on (`adopt`) while an invocation
    holds the leg it read: the invocation's next write re-reads the task and lands."""
    import threading

    entered, adopted = threading.Event(), threading.Event()
    tools = ToolSet(name="adopted")

    @tools.tool(task="required", runner="durable")
    def patient(ctx: ToolContext) -> str:
        """Waits in a step while the sweeper adopts its task, then reports and ends."""

        def hold() -> str:
            entered.set()
            assert adopted.wait(10)
            return "held"

        held = ctx.step("hold", hold)
        ctx.report("after the adopt")
        return held

    store, executions, tasks = under_the_sdk(tools)
    try:
        record = tasks.create(ALICE, tools.tools["patient"], {}, CAPABILITIES)
        assert entered.wait(10)
        seen = store.get(record.task_id)
        assert seen is not None
        moved = store.apply(record.task_id, *t.adopt(seen, seen.updated_at))
        assert moved is not None
        assert moved.changed
        adopted.set()
        done = wait_until(lambda: (r := store.get(record.task_id)) and r.is_terminal and r, 20)
        assert done.status == "completed", done
        assert done.result["content"][0]["text"] == "held"
        assert done.leg == seen.leg + 1  # completed at the leg the sweeper moved it to
    finally:
        adopted.set()
        executions.close()
