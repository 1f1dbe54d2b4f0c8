"""The sweeper and declared workflows' tasks, on the in-memory domain: a workflow whose start
never landed, and whose compensating write failed too, is found and failed; one whose execution
runs is adopted (looked at once, however long it stays silent); one that ended is left to the
reconciler. The question is asked of the execution itself (`Workflows.describe`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcp_tasks_aws.tasks.exceptions import TaskNotStarted
from mcp_tasks_aws.tasks.sweep import STRANDED_MESSAGE, SweepIncomplete, sweep_stranded
from mcp_tasks_aws.tasks.workflow import START_RETRY_DELAYS_S
from support.targets import Flow, flow_of

BOUND_MS = 30 * 60 * 1000
STARTS = len(START_RETRY_DELAYS_S) + 1
"""How often the create tries a start before it asks whether one landed."""


@pytest.fixture
def flow(tmp_path: Path) -> Flow:
    made = flow_of(tmp_path)
    made.service.sleep = lambda _s: None
    made.service.default_ttl_ms = 24 * 3600 * 1000  # outlives every bound here
    return made


def fail_writes(flow: Flow, primitive: str, times: int) -> None:
    remaining = {primitive: times}

    def before(name: str, _task_id: str) -> None:
        if remaining.get(name, 0) > 0:
            remaining[name] -= 1
            raise RuntimeError(f"injected {name} fault")

    flow.store.before_call = before


def sweep(flow: Flow, **options: Any) -> list[str]:
    options.setdefault("workflows", flow.workflows)
    return sweep_stranded(
        flow.store, flow.runner, stranded_after_ms=BOUND_MS, clock=flow.clock, **options
    ).failed


def stranded(flow: Flow) -> str:
    """A workflow task whose every start and whose describe failed (nobody can tell whether
    it started), so the create left it working; then its execution really does not exist."""
    flow.workflows.script["start"] = ["fail"] * STARTS
    flow.workflows.failing.add("describe")
    record = flow.create()
    assert flow.record(record.task_id).status == "working"
    return record.task_id


def test_a_workflow_whose_start_and_compensation_both_failed_is_swept(flow: Flow) -> None:
    # The start failed for good (it did not land) and the write that should have failed the
    # task failed three times: only the sweeper can end it.
    flow.workflows.script["start"] = ["fail"] * STARTS
    fail_writes(flow, "apply:fail", 3)
    with pytest.raises(TaskNotStarted):
        flow.create()
    (record,) = flow.store.all_records()
    assert record.status == "working"
    flow.store.before_call = None
    flow.clock.advance(BOUND_MS - 1)
    assert sweep(flow) == []
    flow.clock.advance(1)
    assert sweep(flow) == [record.task_id]
    ended = flow.record(record.task_id)
    assert ended.status == "failed"
    assert ended.error == {"code": -32603, "message": STRANDED_MESSAGE}
    assert flow.workflows.named("describe")[-1] == record.execution_arn


def test_a_workflow_nobody_could_tell_about_is_swept_once_it_is_known_never_started(
    flow: Flow,
) -> None:
    task_id = stranded(flow)
    flow.clock.advance(BOUND_MS)
    assert sweep(flow) == [task_id]
    assert flow.record(task_id).status == "failed"


def test_a_running_workflow_is_adopted_and_looked_at_once(flow: Flow) -> None:
    # Silent for longer than the bound (no question, no report): its execution runs, so it
    # is not stranded; the sweeper asks once and takes it out of its candidates.
    record = flow.create()
    flow.clock.advance(BOUND_MS)
    assert sweep(flow) == []
    assert flow.workflows.named("describe") == [record.execution_arn]
    adopted = flow.record(record.task_id)
    assert adopted.status == "working"
    assert adopted.leg == 1
    assert adopted.version == record.version  # nothing a client sees
    flow.clock.advance(BOUND_MS)
    assert sweep(flow) == []
    assert flow.workflows.named("describe") == [record.execution_arn]  # not asked again
    # And the workflow goes on: it asks, it ends, as before.
    key = flow.ask(adopted)
    assert flow.record(record.task_id).input_requests
    assert key == "ask-2"
    assert flow.settle(record, "SUCCEEDED", output="{}") == "completed"


def sweep_just_before(flow: Flow, primitive: str) -> None:
    """Run a sweep (past the bound) once, just before the next `primitive` lands."""
    flow.clock.advance(BOUND_MS)

    def before(name: str, _task_id: str) -> None:
        if name == primitive:
            flow.store.before_call = None
            sweep(flow)

    flow.store.before_call = before


def test_the_end_of_a_workflow_adopted_meanwhile_still_completes_its_task(flow: Flow) -> None:
    # The reconciler read the task at leg 0, the sweeper adopted it before the reconciler's
    # write: the completion, fenced by the leg it read, is refused, and made again.
    record = flow.create()
    sweep_just_before(flow, "apply:complete")
    assert flow.settle(record, "SUCCEEDED", output='{"done": true}') == "completed"
    assert flow.record(record.task_id).status == "completed"


def test_a_report_the_adoption_overtook_is_not_dropped(flow: Flow) -> None:
    record = flow.create()
    sweep_just_before(flow, "apply:report")
    assert flow.report(record, "deploying")
    assert flow.record(record.task_id).status_message == "deploying"


def test_an_ended_workflow_is_left_to_the_reconciler(flow: Flow) -> None:
    record = flow.create()
    assert record.execution_arn is not None
    flow.workflows.executions[record.execution_arn] = "SUCCEEDED"
    flow.clock.advance(BOUND_MS)
    assert sweep(flow) == []
    assert flow.record(record.task_id).status == "working"
    assert flow.record(record.task_id).leg == 0  # still looked at: its event may be redriven


def test_without_the_workflows_port_a_workflow_task_is_left_alone(flow: Flow) -> None:
    task_id = stranded(flow)
    flow.clock.advance(BOUND_MS)
    assert sweep(flow, workflows=None) == []
    assert flow.record(task_id).status == "working"


def test_a_describe_that_fails_is_reported_and_the_next_sweep_settles_it(flow: Flow) -> None:
    task_id = stranded(flow)
    flow.clock.advance(BOUND_MS)
    flow.workflows.failing.add("describe")
    with pytest.raises(SweepIncomplete):
        sweep(flow)
    assert flow.record(task_id).status == "working"
    assert sweep(flow) == [task_id]
