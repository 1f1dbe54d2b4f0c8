"""A create whose `PutItem` landed while its answer was lost, on the embedded stack: the SDK
sends the same conditional write again, DynamoDB refuses it (the id exists), and the store
must recognise its own item (`ReturnValuesOnConditionCheckFailure`). One task, acknowledged and
run to its end, instead of an error for a task that exists (which a client would retry into a
second one)."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest

from aws.test_faults_at_every_call import direct_task_that_asks, tasks_labelled
from mcp_tasks_aws.aws.dynamodb import DynamoTaskStore
from mcp_tasks_aws.local.aws import REGION
from mcp_tasks_aws.local.stack import EmbeddedStack
from support.aws_faults import AwsFaults, Site
from support.mcp import running_stack

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")


@pytest.fixture(scope="module")
def stack() -> Iterator[EmbeddedStack]:
    with running_stack(MCP_TASKS_TOOLS="conformance") as running:
        yield running


def test_a_create_whose_put_was_retried_by_the_sdk_is_one_task(stack: EmbeddedStack) -> None:
    reader = DynamoTaskStore(boto3.client("dynamodb", region_name=REGION), stack.aws.table_name)
    apps = {"api": stack.api_app, "worker": stack.worker_app, "reconcile": stack.reconcile_app}
    with AwsFaults(apps).installed() as faults:
        faults.arm(Site("api", "dynamodb:PutItem", 1), "retried")
        client, task_id, answered = direct_task_that_asks(stack, reader, "retried-put")
        assert faults.fired == [Site("api", "dynamodb:PutItem", 1)]
    assert client.problems == []
    assert task_id is not None, "the create was answered with an error"
    assert [record.task_id for record in tasks_labelled(reader, "retried-put")] == [task_id]
    assert answered
    final = reader.get(task_id)
    assert final is not None
    assert final.status == "completed"
