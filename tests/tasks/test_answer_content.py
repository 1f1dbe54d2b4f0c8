"""`TaskService.update(..., validate_content=True)`: an accepted form's content must fit the
schema it answers; the refusal names the field and stores nothing (the task handles use it; a
plain `tasks/update` keeps its one guarded write)."""

from __future__ import annotations

import pytest

from mcp_tasks_aws.tasks.exceptions import TaskAnswerInvalid
from support.domain import ALICE, Domain, accept


@pytest.fixture
def domain() -> Domain:
    return Domain()


def waiting(domain: Domain) -> str:
    task_id = domain.create("confirm", {"name": "a.txt"})
    domain.run_leg(task_id)
    return task_id


def test_content_that_does_not_fit_the_form_names_the_field_and_stores_nothing(
    domain: Domain,
) -> None:
    task_id = waiting(domain)
    with pytest.raises(TaskAnswerInvalid) as wrong_type:
        domain.service.update(ALICE, task_id, {"confirm": accept(ok="yes")}, validate_content=True)
    assert wrong_type.value.key == "confirm"
    assert "field 'ok'" in str(wrong_type.value.detail)
    with pytest.raises(TaskAnswerInvalid) as missing:
        domain.service.update(ALICE, task_id, {"confirm": accept()}, validate_content=True)
    assert missing.value.detail == "field 'ok' is required"
    assert domain.record(task_id).answers == {}
    assert domain.runner.named("resume") == []


def test_fitting_content_a_decline_and_unknown_keys_are_taken_as_before(domain: Domain) -> None:
    task_id = waiting(domain)
    domain.service.update(
        ALICE, task_id, {"confirm": accept(ok=True), "other": {"x": 1}}, validate_content=True
    )
    assert domain.record(task_id).answers == {"confirm": accept(ok=True)}
    declined = waiting(domain)
    domain.service.update(
        ALICE, declined, {"confirm": {"action": "decline"}}, validate_content=True
    )
    assert domain.record(declined).answers == {"confirm": {"action": "decline"}}


def test_without_the_option_the_content_is_not_checked(domain: Domain) -> None:
    # tasks/update's cost (one guarded write first) stays: the tool sees the answer as sent.
    task_id = waiting(domain)
    domain.service.update(ALICE, task_id, {"confirm": accept(ok="yes")})
    assert domain.record(task_id).answers == {"confirm": accept(ok="yes")}
