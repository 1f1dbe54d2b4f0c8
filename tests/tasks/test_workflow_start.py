"""Starting a declared workflow's execution when the start does not answer, on the in-memory
domain. A start with the same name and input is idempotent, so a start that failed is tried
again; if every try failed, `DescribeExecution` tells whether one landed unheard. A task is
failed only when its execution certainly does not exist, and left working (for the sweeper)
when nobody can tell."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_tasks_aws.tasks.exceptions import TargetUnavailable, TaskNotStarted
from mcp_tasks_aws.tasks.workflow import START_RETRY_DELAYS_S
from support.targets import MACHINE, Flow, flow_of

STARTS = len(START_RETRY_DELAYS_S) + 1


@pytest.fixture
def flow(tmp_path: Path) -> Flow:
    made = flow_of(tmp_path)
    made.service.sleep = lambda _s: None
    return made


def test_a_start_that_landed_but_did_not_answer_leaves_the_task_running(flow: Flow) -> None:
    # The execution started; its answer was lost (a read timeout). The retried start, same
    # name and input, is a no-op that answers: the task runs, and is acknowledged.
    flow.workflows.script["start"] = ["unheard"]
    record = flow.create()
    assert flow.record(record.task_id).status == "working"
    first, second = flow.workflows.named("start")
    assert first == second  # the same name and input: the same execution, once
    assert list(flow.workflows.executions) == [record.execution_arn]
    # It asks and ends like any other.
    key = flow.ask(flow.record(record.task_id))
    assert key == "ask-1"


def test_a_start_whose_every_try_failed_but_one_landed_is_acknowledged(flow: Flow) -> None:
    flow.workflows.script["start"] = ["unheard"] + ["fail"] * (STARTS - 1)
    record = flow.create()
    assert len(flow.workflows.named("start")) == STARTS
    assert flow.workflows.named("describe") == [record.execution_arn]
    assert flow.record(record.task_id).status == "working"


def test_a_start_that_never_landed_fails_the_task(flow: Flow) -> None:
    flow.workflows.script["start"] = ["fail"] * STARTS
    with pytest.raises(TaskNotStarted):
        flow.create()
    (record,) = flow.store.all_records()
    assert record.status == "failed"
    assert len(flow.workflows.named("start")) == STARTS
    assert flow.workflows.named("describe") == [record.execution_arn]


def test_a_start_retried_successfully_runs_the_task(flow: Flow) -> None:
    flow.workflows.script["start"] = ["fail"]  # a throttled or failed try, nothing landed
    record = flow.create()
    assert flow.record(record.task_id).status == "working"
    assert len(flow.workflows.named("start")) == 2
    assert flow.workflows.named("describe") == []


def test_when_nobody_can_tell_the_task_stays_working_for_the_sweeper(flow: Flow) -> None:
    flow.workflows.script["start"] = ["fail"] * STARTS
    flow.workflows.failing.add("describe")
    record = flow.create()  # answered: the task may run; the sweeper learns which
    assert flow.record(record.task_id).status == "working"


def test_a_machine_that_refuses_the_start_fails_the_task_at_once(flow: Flow) -> None:
    # Missing or denied: nothing ran and nothing would on a retry; no describe is needed.
    flow.workflows.unavailable = "StateMachineDoesNotExist"
    record = flow.create()
    assert record.status == "failed"
    assert len(flow.workflows.named("start")) == 1
    assert flow.workflows.named("describe") == []


def test_a_timeout_the_adapter_reports_as_unavailable_is_checked_before_failing(
    flow: Flow,
) -> None:
    # A read timeout after the SDK's tries is named like a refusal (TargetUnavailable with
    # the failure's name) but may have landed: the execution is asked before anything fails.
    original = flow.workflows.start

    def start(machine_arn: str, name: str, payload: dict[str, object]) -> str:
        original(machine_arn, name, payload)  # it lands ...
        raise TargetUnavailable(f"State machine {MACHINE}", "ReadTimeoutError")  # ... unheard

    flow.workflows.start = start  # type: ignore[method-assign]
    record = flow.create()
    assert flow.record(record.task_id).status == "working"
    assert flow.workflows.named("describe") == [record.execution_arn]
