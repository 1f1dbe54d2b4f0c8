"""The task record names its run in one field (`TaskRecord.run`): what create chooses, what both
stores keep, how an item written before runs were named is read (by rule, from `heldBy` and
`executionArn`), and that a run nobody knows is an error, never read as another run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcp_tasks_aws.aws import dynamodb_items
from mcp_tasks_aws.tasks import transitions as t
from mcp_tasks_aws.tasks.exceptions import UnknownRun
from mcp_tasks_aws.tasks.memory import InMemoryTaskStore
from mcp_tasks_aws.tasks.ports import TaskStore
from mcp_tasks_aws.tasks.runs.base import RunPorts
from mcp_tasks_aws.tasks.runs.registry import RUNS, Runs, run_class
from support.domain import Domain, elicit_request
from support.records import IN_DOMAIN_NOW, make_record
from support.targets import flow_of
from support.tasks import now_ms

ARN = "arn:aws:states:us-east-1:123456789012:execution:approve:t"


# -- create names the run ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("direct_legs", "tool", "run", "held_by"),
    [
        (True, "echo", "direct", "direct"),
        (
            True,
            "always_on_step_functions",
            "legs",
            "execution",
        ),  # the tool opted out (`direct=False`)
        (False, "echo", "legs", "execution"),  # no direct legs in this deployment
    ],
)
def test_create_names_the_run_the_tool_gets_here(
    direct_legs: bool, tool: str, run: str, held_by: str
) -> None:
    domain = Domain(direct=direct_legs)
    record = domain.record(domain.create(tool, {"text": "x"}))
    assert (record.run, record.held_by) == (run, held_by)


def test_a_declared_workflows_task_names_the_workflow_run(tmp_path: Path) -> None:
    flow = flow_of(tmp_path)
    record = flow.record(flow.create().task_id)
    assert record.run == "workflow"


def test_a_direct_task_keeps_its_run_when_an_execution_attaches() -> None:
    # The hold changes hands (the fence of `claim` and `lose_direct`); the run does not: a
    # direct task after its hand-over runs as the legs run does, and its record says so.
    domain = Domain(direct=True)
    task_id = domain.create("confirm", {"name": "x"})
    assert domain.run_direct(task_id) == "handed_over"
    assert domain.run_leg(task_id, "tok-1") == "parked"
    record = domain.record(task_id)
    assert (record.run, record.held_by, record.task_token) == ("direct", "execution", "tok-1")


# -- both stores keep it -----------------------------------------------------------------------


@pytest.mark.parametrize("run", sorted(RUNS))
def test_a_stored_run_reads_back_through_every_move(either_store: TaskStore, run: str) -> None:
    store = either_store
    record = IN_DOMAIN_NOW.make(run=run)
    store.put_new(record)
    moved = store.apply(record.task_id, *t.park(0, {"a": elicit_request()}, "tok", {}, now_ms()))
    assert moved is not None
    assert moved.changed
    assert moved.record.run == run
    read = store.get(record.task_id)
    assert read is not None
    assert read.run == run


# -- items written before runs were named ------------------------------------------------------


def old_item(**attributes: Any) -> dict[str, Any]:
    """An item as this code wrote it before `run` existed: no `run` attribute."""
    item = dynamodb_items.encode(make_record())
    del item["run"]
    item.pop("heldBy", None)
    item.update(attributes)
    return item


@pytest.mark.parametrize(
    ("attributes", "run", "held_by"),
    [
        ({}, "legs", "execution"),
        ({"heldBy": {"S": "direct"}}, "direct", "direct"),
        # A direct task already handed over: it runs exactly as the legs run does.
        ({"heldBy": {"S": "execution"}}, "legs", "execution"),
        ({"executionArn": {"S": ARN}}, "workflow", "execution"),
    ],
)
def test_an_item_written_before_runs_were_named_is_read_by_rule(
    attributes: dict[str, Any], run: str, held_by: str
) -> None:
    record = dynamodb_items.decode(old_item(**attributes))
    assert (record.run, record.held_by) == (run, held_by)


def test_every_new_item_names_its_run() -> None:
    item = dynamodb_items.encode(make_record(run="direct", held_by="direct"))
    assert item["run"] == {"S": "direct"}
    assert dynamodb_items.decode(item).run == "direct"


def test_a_held_by_nobody_knows_is_an_error_not_an_execution() -> None:
    item = old_item(heldBy={"S": "durable"})
    with pytest.raises(UnknownRun, match="durable"):
        dynamodb_items.decode(item)


def test_a_run_nobody_knows_is_an_error_not_a_default() -> None:
    item = dynamodb_items.encode(make_record())
    item["run"] = {"S": "quantum"}
    with pytest.raises(UnknownRun, match=item["taskId"]["S"]):
        dynamodb_items.decode(item)


def test_the_dynamodb_store_refuses_to_read_a_task_of_an_unknown_run(
    dynamo_store: TaskStore, dynamodb: Any, local_aws: Any
) -> None:
    record = IN_DOMAIN_NOW.make()
    dynamo_store.put_new(record)
    dynamodb.update_item(
        TableName=local_aws.table_name,
        Key={"taskId": {"S": record.task_id}},
        UpdateExpression="SET #run = :run",
        ExpressionAttributeNames={"#run": "run"},
        ExpressionAttributeValues={":run": {"S": "quantum"}},
    )
    with pytest.raises(UnknownRun):
        dynamo_store.get(record.task_id)


# -- the registry ------------------------------------------------------------------------------


def test_the_registry_finds_each_run_by_its_name() -> None:
    for name in RUNS:
        assert run_class(name).name == name


def test_a_record_of_an_unknown_run_has_no_run() -> None:
    runs = Runs(RunPorts(InMemoryTaskStore()))
    record = make_record(run="quantum")
    with pytest.raises(UnknownRun, match=record.task_id):
        runs.of(record)
