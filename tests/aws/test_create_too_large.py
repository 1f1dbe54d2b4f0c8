"""A call too large for one task item is refused at creation with a clear -32602 (either era),
and nothing is stored or started: DynamoDB refuses the item, the use case says which call."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_tasks_aws.aws.dynamodb import DynamoTaskStore
from mcp_tasks_aws.protocol.era import Era
from mcp_tasks_aws.protocol.errors import INVALID_PARAMS
from mcp_tasks_aws.server.tasks import task_error
from mcp_tasks_aws.tasks.exceptions import TaskCallTooLarge
from mcp_tasks_aws.tasks.service import TaskService
from support.domain import ALICE, CAPABILITIES, RecordingRunner, tools


def test_a_call_whose_item_dynamodb_refuses_is_refused_before_anything_starts(
    dynamo_store: DynamoTaskStore, dynamodb: Any
) -> None:
    # Given arguments under their own cap, and answers gathered inline, that together make an
    # item over DynamoDB's 400 KB
    runner = RecordingRunner()
    service = TaskService(dynamo_store, runner)
    arguments = {"text": "x" * 250_000}
    journal = {"name": {"action": "accept", "content": {"name": "y" * 200_000}}}
    before = dynamodb.scan(TableName=dynamo_store.table, Select="COUNT")["Count"]
    # When the task is created, Then the call is refused as too large
    with pytest.raises(TaskCallTooLarge):
        service.create(ALICE, tools.tools["echo"], arguments, CAPABILITIES, journal)
    # And nothing was stored or started
    assert dynamodb.scan(TableName=dynamo_store.table, Select="COUNT")["Count"] == before
    assert runner.calls == []


@pytest.mark.parametrize("era", list(Era))
def test_a_call_too_large_for_a_task_answers_a_clear_invalid_params(era: Era) -> None:
    error = task_error(TaskCallTooLarge(), era)
    assert error is not None
    assert error.code == INVALID_PARAMS
    assert error.message.startswith("The call is too large to run as a task")
