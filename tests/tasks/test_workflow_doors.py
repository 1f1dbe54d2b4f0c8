"""Who may use a workflow task's doors, and questions that outlive their waiting state, on the
in-memory domain.

- The capability: every ask and report carries the token the task's start put in its
  execution's input (`DoorKeys`); without it, with another task's, another deployment's or an
  expired one, the AskFunction answers as for an unknown task, before reading the task.
- Timeouts: a waiting state that timed out leaves its question on the task; the execution's
  re-ask replaces it once its token is dead (and only then), and an answer that reaches a dead
  token is recorded as not delivered, never acknowledged in silence.
"""

from __future__ import annotations

import pytest

from mcp_tasks_aws.tasks import transitions
from mcp_tasks_aws.tasks.workflow import (
    STALE_ANSWER_MESSAGE,
    AskRefused,
    DoorKeys,
    WorkflowDoors,
    ask_key,
    execution_arn_for,
)
from support.domain import ALICE, accept
from support.targets import DOOR_SECRET, MACHINE, QUESTION, Flow


def reads(flow: Flow) -> list[str]:
    """Record the store primitives called from now on."""
    seen: list[str] = []
    flow.store.before_call = lambda name, _task_id: seen.append(name)
    return seen


# -- the capability ---------------------------------------------------------------------------


def forged_capabilities(flow: Flow) -> dict[str, object]:
    record = flow.create()
    other = flow.create({"text": "other"})
    assert record.execution_arn is not None
    elsewhere = DoorKeys(DOOR_SECRET, audience="another-stack", clock=flow.clock)
    other_secret = DoorKeys(b"o" * 32, clock=flow.clock)
    return {
        "none": None,
        "not a token": "door.abcdefgh.e30.AAAA",
        "another task's": flow.capability(other),
        "another deployment's": elsewhere.issue(record),
        "another secret's": other_secret.issue(record),
        "not a string": {"x": record.execution_arn},
    }


@pytest.mark.parametrize(
    "kind",
    [
        "none",
        "not a token",
        "another task's",
        "another deployment's",
        "another secret's",
        "not a string",
    ],
)
def test_a_door_without_the_tasks_own_capability_is_refused_unread(flow: Flow, kind: str) -> None:
    # Whoever may invoke the AskFunction knows a task id (and so its execution's ARN) at
    # most: that must not let it park the task on a question of its own, or write its status.
    capability = forged_capabilities(flow)[kind]
    record = flow.store.all_records()[0]
    assert record.execution_arn is not None
    seen = reads(flow)
    with pytest.raises(AskRefused) as asked:
        flow.doors.ask(record.task_id, record.execution_arn, "forged", QUESTION, capability)
    assert asked.value.error == "McpUnknownTask"
    with pytest.raises(AskRefused) as reported:
        flow.doors.report(record.task_id, record.execution_arn, "hi", capability=capability)
    assert reported.value.error == "McpUnknownTask"
    assert seen == []  # refused before the task is read: nothing is confirmed
    assert flow.record(record.task_id).input_requests == {}
    assert flow.record(record.task_id).status_message is None


def test_the_capability_names_its_execution(flow: Flow) -> None:
    record = flow.create()
    capability = flow.capability(record)
    other = execution_arn_for(MACHINE, "someone-else")
    with pytest.raises(AskRefused):
        flow.doors.ask(record.task_id, other, "t", QUESTION, capability)
    # Another execution's ARN with its own task id: still not this task's capability.
    twin = flow.create({"text": "twin"})
    assert twin.execution_arn is not None
    with pytest.raises(AskRefused):
        flow.doors.ask(twin.task_id, twin.execution_arn, "t", QUESTION, capability)


def test_a_capability_lasts_as_long_as_its_task(flow: Flow) -> None:
    record = flow.create()
    assert record.expires_at is not None
    flow.clock.advance(record.expires_at * 1000 - flow.clock() + 1000)
    assert not flow.keys.opens(record.execution_arn or "", flow.capability(record))


def test_doors_keyed_by_another_secret_refuse_every_capability(flow: Flow) -> None:
    record = flow.create()
    assert record.execution_arn is not None
    strangers = WorkflowDoors(flow.store, DoorKeys(b"s" * 32), flow.workflows, clock=flow.clock)
    with pytest.raises(AskRefused):
        strangers.ask(record.task_id, record.execution_arn, "t", QUESTION, flow.capability(record))


# -- a waiting state that timed out ----------------------------------------------------------


def test_a_re_ask_after_the_waiting_state_timed_out_replaces_its_question(flow: Flow) -> None:
    record = flow.create()
    first = flow.ask(record, "token-1")
    flow.workflows.dead_tokens.add("token-1")  # TimeoutSeconds passed; Catch asks again
    second = flow.ask(flow.record(record.task_id), "token-2")
    assert second == ask_key(2) != first
    waiting = flow.record(record.task_id)
    assert set(waiting.input_requests) == {second}
    assert waiting.task_token == "token-2"
    assert flow.workflows.named("still_waiting") == ["token-1"]
    # A late answer to the stale question is an unknown key: acknowledged, ignored.
    flow.service.update(ALICE, record.task_id, {first: accept(done=True)})
    assert flow.workflows.named("answer") == []
    # The answer to the new question reaches the new state.
    flow.service.update(ALICE, record.task_id, {second: accept(done=False)})
    assert flow.workflows.named("answer") == [("token-2", accept(done=False))]


def test_a_re_ask_while_the_question_still_waits_is_refused(flow: Flow) -> None:
    record = flow.create()
    flow.ask(record, "token-1")
    with pytest.raises(AskRefused) as refused:
        flow.ask(flow.record(record.task_id), "token-2")
    assert refused.value.error == "McpAskPending"
    assert flow.workflows.named("still_waiting") == ["token-1"]
    assert flow.record(record.task_id).task_token == "token-1"


def test_an_answer_that_reaches_a_timed_out_state_is_reported_not_dropped(flow: Flow) -> None:
    record = flow.create()
    key = flow.ask(record, "token-1")
    flow.workflows.dead_tokens.add("token-1")
    # tasks/update stays an acknowledgement (the spec's eventually consistent ack) ...
    flow.service.update(ALICE, record.task_id, {key: accept(done=True)})
    assert flow.workflows.named("answer") == [("token-1", accept(done=True))]
    # ... and the task says the answer was not delivered.
    after = flow.record(record.task_id)
    assert after.visible_status == "working"
    assert after.status_message == STALE_ANSWER_MESSAGE
    assert after.answers[key] == accept(done=True)  # recorded all the same
    # The workflow's Catch asks again: the new question parks as any other.
    again = flow.ask(after, "token-2")
    assert flow.record(record.task_id).input_requests == {again: QUESTION}


def test_a_declined_answer_to_a_timed_out_state_is_reported_too(flow: Flow) -> None:
    record = flow.create()
    key = flow.ask(record, "token-1")
    flow.workflows.dead_tokens.add("token-1")
    flow.service.update(ALICE, record.task_id, {key: {"action": "decline"}})
    assert flow.record(record.task_id).status_message == STALE_ANSWER_MESSAGE


def test_a_retried_update_after_a_delivered_answer_reports_nothing(flow: Flow) -> None:
    # The client sends its update twice: the second finds the key answered and resumes
    # again (in case the first resume failed); its token is spent by the first, which
    # delivered the answer. That is not a lost answer.
    record = flow.create()
    key = flow.ask(record, "token-1")
    flow.service.update(ALICE, record.task_id, {key: accept(done=True)})
    flow.service.update(ALICE, record.task_id, {key: accept(done=True)})
    assert len(flow.workflows.named("answer")) == 2
    assert flow.record(record.task_id).status_message is None


def test_a_note_that_cannot_be_written_leaves_the_update_acknowledged(flow: Flow) -> None:
    # The answer is recorded; only the note failed: the update is not answered as an error.
    record = flow.create()
    key = flow.ask(record, "token-1")
    flow.workflows.dead_tokens.add("token-1")

    def before(name: str, _task_id: str) -> None:
        if name == "apply:report":
            raise RuntimeError("injected report fault")

    flow.store.before_call = before
    flow.service.update(ALICE, record.task_id, {key: accept(done=True)})
    flow.store.before_call = None
    assert flow.record(record.task_id).answers[key] == accept(done=True)


def test_an_ask_whose_park_is_overtaken_by_the_sweeper_parks_on_its_next_round(
    flow: Flow,
) -> None:
    # The execution started late: its first state asks while the sweeper, finding the task
    # unstarted, describes the execution and adopts it (the leg moves on). The park, fenced by
    # the leg the ask read, is refused; the next round reads again and must still carry the
    # task's capability (not the client capability the question needs).
    record = flow.create()
    adopted: list[str] = []

    def before(name: str, task_id: str) -> None:
        if name == "apply:park" and not adopted:
            adopted.append(task_id)
            seen = flow.record(task_id)
            flow.store.apply(task_id, *transitions.adopt(seen, flow.clock()))

    flow.store.before_call = before
    key = flow.ask(record, "token-1")
    flow.store.before_call = None
    assert adopted == [record.task_id]
    assert key == ask_key(2)
    parked = flow.record(record.task_id)
    assert parked.input_requests == {key: QUESTION}
    assert parked.task_token == "token-1"
