"""A leg's tool sees the capabilities its client declared when it created the task (the
record keeps them as JSON; the worker reads them back)."""

from __future__ import annotations

from mcp_tasks_aws.protocol.errors import MISSING_REQUIRED_CLIENT_CAPABILITY
from support.domain import ALICE, CAPABILITIES, Domain, tools


def test_a_question_to_a_client_that_declared_it_parks_the_task() -> None:
    # Given a task created by a client that declared elicitation
    domain = Domain()
    record = domain.service.create(ALICE, tools.tools["confirm"], {"name": "a"}, CAPABILITIES)
    # When its leg runs, Then the tool may ask
    assert domain.run_leg(record.task_id) == "parked"


def test_a_question_to_a_client_that_did_not_declare_it_fails_the_task() -> None:
    # Given a task created by a client that declared no elicitation
    domain = Domain()
    declared = {"extensions": CAPABILITIES["extensions"]}
    record = domain.service.create(ALICE, tools.tools["confirm"], {"name": "a"}, declared)
    # When its leg runs
    assert domain.run_leg(record.task_id) == "done"
    # Then the task fails naming the capability it lacks
    failed = domain.record(record.task_id)
    assert failed.status == "failed"
    assert failed.error is not None
    assert failed.error["code"] == MISSING_REQUIRED_CLIENT_CAPABILITY
    assert failed.error["data"] == {"requiredCapabilities": {"elicitation": {}}}
