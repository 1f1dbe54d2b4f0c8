"""The task use cases a client drives, on the in-memory store and a recording runner (no moto)."""

from __future__ import annotations

import pytest

from mcp_tasks_aws.tasks.exceptions import (
    TaskAnswerInvalid,
    TaskArgumentsTooLarge,
    TaskNotFound,
    TaskNotStarted,
)
from mcp_tasks_aws.tasks.model import new_task_id, suggested_poll_interval
from support.domain import ALICE, BOB, CAPABILITIES, ELICIT, Domain, accept, tools

# -- create ------------------------------------------------------------------------------------


def test_create_stores_the_task_then_starts_it() -> None:
    domain = Domain()
    record = domain.service.create(ALICE, tools.tools["echo"], {"text": "hi"}, CAPABILITIES)
    assert domain.record(record.task_id) == record
    assert (record.status, record.owner, record.ttl_ms) == ("working", ALICE, 3_600_000)
    assert domain.runner.calls == [("start", record.task_id)]


def test_a_prelude_journal_travels_with_the_task_as_asked_answers() -> None:
    domain = Domain()
    journal = {"elicit-x-1": accept(name="Alice")}
    record = domain.service.create(
        ALICE, tools.tools["echo"], {"text": "hi"}, CAPABILITIES, journal
    )
    assert record.journal == journal


def test_a_failed_start_fails_the_task_before_answering() -> None:
    # Given a runner that cannot start executions
    domain = Domain()
    domain.runner.failing.add("start")
    # When a task is created, Then the caller gets an error
    with pytest.raises(TaskNotStarted):
        domain.create("echo", {"text": "hi"})
    # And the task that was stored says it failed, so nothing stays working with nothing to run it
    (record,) = domain.store.all_records()
    assert record.status == "failed"
    assert record.error == {"code": -32603, "message": "The task could not be started"}


def test_oversized_arguments_are_refused_before_anything_is_stored() -> None:
    domain = Domain()
    with pytest.raises(TaskArgumentsTooLarge):
        domain.create("echo", {"text": "x" * 300_000})
    assert domain.store.all_records() == []
    assert domain.runner.calls == []


# -- get ---------------------------------------------------------------------------------------


def test_unknown_foreign_and_expired_tasks_are_not_found_and_alike() -> None:
    domain = Domain()
    task_id = domain.create("echo", {"text": "hi"})
    errors = []
    for owner, target in ((BOB, task_id), (ALICE, new_task_id()), (ALICE, "not-an-id")):
        with pytest.raises(TaskNotFound) as raised:
            domain.service.get(owner, target)
        errors.append((str(raised.value), raised.value.expired))
    assert errors == [("not found", False)] * 3
    domain.clock.advance(3_600_000)
    with pytest.raises(TaskNotFound) as expired:
        domain.service.get(ALICE, task_id)
    assert expired.value.expired


def test_an_offloaded_result_is_read_back_only_once_completed() -> None:
    domain = Domain()
    domain.legs.result_budget = 10
    task_id = domain.create("echo", {"text": "a long enough result"})
    assert domain.run_leg(task_id) == "done"
    record = domain.record(task_id)
    assert (record.result, record.result_ref) == (None, f"results/{task_id}.json")
    view = domain.service.get(ALICE, task_id)
    assert view.result == {"content": [{"type": "text", "text": "a long enough result"}]}


# -- update ------------------------------------------------------------------------------------


def waiting_task(domain: Domain, tool: str = "confirm", token: str = "tok-1") -> str:
    task_id = domain.create(tool, {"name": "notes.txt"} if tool == "confirm" else {})
    assert domain.run_leg(task_id, token) == "parked"
    return task_id


def test_the_last_answer_resumes_the_task_once() -> None:
    domain = Domain()
    task_id = waiting_task(domain, "two_questions")
    domain.service.update(ALICE, task_id, {"first": accept(ok=True)})
    assert domain.runner.named("resume") == []
    assert domain.record(task_id).visible_status == "input_required"
    domain.service.update(ALICE, task_id, {"second": accept(ok=False)})
    assert domain.runner.named("resume") == ["tok-1"]
    assert domain.record(task_id).visible_status == "working"


def test_answers_to_keys_nobody_asked_are_ignored_and_write_nothing() -> None:
    domain = Domain()
    task_id = waiting_task(domain)
    before = domain.record(task_id)
    domain.service.update(ALICE, task_id, {"nope": accept(ok=True)})
    domain.service.update(ALICE, task_id, {"nope": "not an answer", "other": {"roots": []}})
    assert domain.record(task_id) == before
    assert domain.runner.named("resume") == []


@pytest.mark.parametrize(
    "misfit",
    [
        "not an answer",
        {"action": "bogus"},
        {"roots": []},  # a roots/list result, for an elicitation
        {"role": "assistant", "content": {"type": "text", "text": "hi"}},  # a sampling result
    ],
)
def test_an_answer_that_does_not_fit_its_request_is_refused_and_can_be_corrected(
    misfit: object,
) -> None:
    # Given a task waiting for a confirmation (an elicitation)
    domain = Domain()
    task_id = waiting_task(domain)
    before = domain.record(task_id)
    # When the answer has the shape of another kind of result (or of none)
    with pytest.raises(TaskAnswerInvalid) as refused:
        domain.service.update(ALICE, task_id, {"confirm": misfit, "nope": accept(ok=True)})
    # Then it is refused naming the key and what was expected, and nothing is recorded
    assert (refused.value.key, refused.value.method) == ("confirm", "elicitation/create")
    assert domain.record(task_id) == before
    # And the client can still give the right answer
    domain.service.update(ALICE, task_id, {"confirm": accept(ok=True)})
    assert domain.record(task_id).answers == {"confirm": accept(ok=True)}
    assert domain.runner.named("resume") == ["tok-1"]


def test_junk_beside_a_real_answer_does_not_stop_the_real_one() -> None:
    domain = Domain()
    task_id = waiting_task(domain)
    domain.service.update(ALICE, task_id, {"confirm": accept(ok=True), "junk": accept(ok=1)})
    record = domain.record(task_id)
    assert record.answers == {"confirm": accept(ok=True)}
    assert domain.runner.named("resume") == ["tok-1"]


def test_a_retried_update_resumes_again_when_the_first_resume_failed() -> None:
    # Given a resume that fails (an AWS fault) after the answer was stored
    domain = Domain()
    task_id = waiting_task(domain)
    domain.runner.failing.add("resume")
    with pytest.raises(RuntimeError):
        domain.service.update(ALICE, task_id, {"confirm": accept(ok=True)})
    # When the client retries the same update, Then the task is resumed this time
    domain.service.update(ALICE, task_id, {"confirm": accept(ok=True)})
    assert domain.runner.named("resume") == ["tok-1", "tok-1"]
    assert domain.runner.used_tokens == {"tok-1"}


def test_updates_to_tasks_that_are_not_waiting_are_acknowledged_and_change_nothing() -> None:
    domain = Domain()
    task_id = domain.create("echo", {"text": "hi"})
    domain.service.update(ALICE, task_id, {"k": accept(ok=True)})
    assert domain.record(task_id).version == 1
    with pytest.raises(TaskNotFound):
        domain.service.update(BOB, task_id, {"k": accept(ok=True)})


# -- cancel ------------------------------------------------------------------------------------


def test_cancel_of_a_working_task_marks_it_then_stops_its_execution() -> None:
    domain = Domain()
    task_id = domain.create("echo", {"text": "hi"})
    record, changed = domain.service.cancel(ALICE, task_id)
    assert (changed, record) == (True, domain.record(task_id))
    assert record.status == "cancelled"
    assert domain.runner.named("stop") == [task_id]


def test_cancel_of_a_waiting_task_interrupts_its_wait() -> None:
    domain = Domain()
    task_id = waiting_task(domain)
    domain.service.cancel(ALICE, task_id)
    assert domain.runner.named("interrupt") == ["tok-1"]
    assert domain.runner.named("stop") == []


def test_cancel_acks_when_releasing_fails_and_a_retry_releases() -> None:
    domain = Domain()
    task_id = waiting_task(domain)
    domain.runner.failing.add("interrupt")
    domain.service.cancel(ALICE, task_id)  # logged, not raised: the marker is durable
    assert domain.record(task_id).status == "cancelled"
    domain.service.cancel(ALICE, task_id)
    assert domain.runner.named("interrupt") == ["tok-1", "tok-1"]
    assert domain.runner.used_tokens == {"tok-1"}


@pytest.mark.parametrize("tool", ["echo", "protocol_fault"])
def test_cancel_of_an_ended_task_leaves_it_as_it_is(tool: str) -> None:
    domain = Domain()
    task_id = domain.create(tool, {"text": "hi"} if tool == "echo" else {})
    domain.run_leg(task_id)
    before = domain.record(task_id)
    # The cancel move is refused: the caller learns it changed nothing, and what the task is
    assert domain.service.cancel(ALICE, task_id) == (before, False)
    assert domain.record(task_id) == before
    assert domain.runner.named("stop") == []


def test_create_keeps_the_retention_asked_within_the_cap() -> None:
    domain = Domain()
    spec = tools.tools["echo"]
    asked = domain.service.create(ALICE, spec, {"text": "a"}, CAPABILITIES, ttl_ms=90_000)
    capped = domain.service.create(ALICE, spec, {"text": "b"}, CAPABILITIES, ttl_ms=10**13)
    assert (asked.ttl_ms, capped.ttl_ms) == (90_000, domain.service.max_ttl_ms)


# -- refuse ------------------------------------------------------------------------------------


def test_refuse_fails_a_waiting_task_with_the_error_and_interrupts_its_wait() -> None:
    domain = Domain()
    task_id = waiting_task(domain)
    error = {"code": -32603, "message": "The client answered elicitation/create with an error"}
    assert domain.service.refuse(ALICE, task_id, "confirm", ELICIT, error) is True
    record = domain.record(task_id)
    assert (record.status, record.error) == ("failed", error)
    assert domain.runner.named("interrupt") == ["tok-1"]
    # A second refusal, or one of a key no longer outstanding, changes nothing
    assert domain.service.refuse(ALICE, task_id, "confirm", ELICIT, error) is False
    assert domain.runner.named("interrupt") == ["tok-1"]


def test_refuse_after_the_answer_changes_nothing() -> None:
    domain = Domain()
    task_id = waiting_task(domain)
    domain.service.update(ALICE, task_id, {"confirm": accept(ok=True)})
    error = {"code": -32603, "message": "late"}
    assert domain.service.refuse(ALICE, task_id, "confirm", ELICIT, error) is False
    assert domain.record(task_id).status == "input_required"  # shown working: resuming


def test_refuse_of_someone_elses_task_is_not_found() -> None:
    domain = Domain()
    task_id = waiting_task(domain)
    with pytest.raises(TaskNotFound):
        domain.service.refuse(BOB, task_id, "confirm", ELICIT, {"code": -1, "message": "x"})
    assert domain.record(task_id).status == "input_required"


def test_cancel_of_someone_elses_task_is_not_found() -> None:
    domain = Domain()
    task_id = domain.create("echo", {"text": "hi"})
    with pytest.raises(TaskNotFound):
        domain.service.cancel(BOB, task_id)
    assert domain.record(task_id).status == "working"


# -- list --------------------------------------------------------------------------------------


def test_list_shows_only_the_callers_tasks_newest_first() -> None:
    domain = Domain()
    first = domain.create("echo", {"text": "1"})
    domain.clock.advance(5)
    domain.create("echo", {"text": "other"}, owner=BOB)
    domain.clock.advance(5)
    second = domain.create("echo", {"text": "2"})
    page = domain.service.list(ALICE, limit=10)
    assert [s.task_id for s in page.tasks] == [second, first]
    assert page.after is None


# -- retention ---------------------------------------------------------------------------------

DAY = 24 * 3600 * 1000


@pytest.mark.parametrize(
    ("asked", "default", "cap", "given"),
    [
        (None, DAY, 30 * DAY, DAY),  # the tool asks nothing: the server default
        (2 * DAY, DAY, 30 * DAY, 2 * DAY),  # the tool's own
        (90 * DAY, DAY, 30 * DAY, 30 * DAY),  # never past the cap
        (None, None, 30 * DAY, 30 * DAY),  # "unlimited" by default is still capped
        (None, None, None, None),  # both lifted: kept for good (ttlMs null)
        (5 * DAY, None, None, 5 * DAY),
    ],
)
def test_a_tasks_retention_is_what_was_asked_within_the_cap(
    asked: int | None, default: int | None, cap: int | None, given: int | None
) -> None:
    domain = Domain()
    domain.service.default_ttl_ms = default
    domain.service.max_ttl_ms = cap
    assert domain.service.ttl_for(asked) == given


def test_a_result_gone_from_the_bucket_reads_as_an_expired_task() -> None:
    domain = Domain()
    domain.legs.result_budget = 10
    task_id = domain.create("echo", {"text": "offloaded and then lost"})
    domain.run_leg(task_id)
    domain.results.objects.clear()  # the bucket's lifecycle removed it
    with pytest.raises(TaskNotFound) as gone:
        domain.service.get(ALICE, task_id)
    assert gone.value.expired


# -- faults while creating -----------------------------------------------------------------------


class FailingApplies:
    """Makes the next `count` store writes raise, as a DynamoDB fault would."""

    def __init__(self, domain: Domain, count: int) -> None:
        self.left = count
        original = domain.store.apply

        def apply(*args: object) -> object:
            if self.left > 0:
                self.left -= 1
                raise RuntimeError("injected DynamoDB fault")
            return original(*args)  # type: ignore[arg-type]

        domain.store.apply = apply  # type: ignore[method-assign]


def test_a_failed_start_whose_first_compensating_writes_fail_still_ends_failed() -> None:
    # Given a start that fails, and a store that fails the next two writes too
    domain = Domain()
    domain.service.sleep = lambda _: None
    domain.runner.failing.add("start")
    FailingApplies(domain, 2)
    # When a task is created, Then the caller gets an error and the task still ends failed
    with pytest.raises(TaskNotStarted):
        domain.create("echo", {"text": "hi"})
    (record,) = domain.store.all_records()
    assert record.status == "failed"


def test_when_nothing_can_end_an_unstarted_task_it_is_said_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    domain = Domain()
    domain.service.sleep = lambda _: None
    domain.runner.failing.add("start")
    FailingApplies(domain, 3)
    with pytest.raises(TaskNotStarted):
        domain.create("echo", {"text": "hi"})
    (record,) = domain.store.all_records()
    assert record.status == "working"
    assert f"task {record.task_id} was created but neither started nor failed" in caplog.text


# -- the suggested poll interval ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("age_ms", "floor", "ceiling", "expected"),
    [
        (0, 500, 10_000, 500),  # a new task may end any moment
        (9_999, 500, 10_000, 500),
        (10_000, 500, 10_000, 1_000),  # about a tenth of its age, in doubling steps
        (30_000, 500, 10_000, 2_000),
        (40_000, 500, 10_000, 4_000),
        (99_999, 500, 10_000, 8_000),
        (100_000, 500, 10_000, 10_000),
        (3_600_000, 500, 10_000, 10_000),  # never past the ceiling
        (3_600_000, 500, None, 500),  # no ceiling: fixed (records from before adaptive polling)
        (3_600_000, 2_000, 1_000, 2_000),  # a ceiling under the floor: fixed at the floor
        (-5_000, 500, 10_000, 500),  # a clock behind the creation time
    ],
)
def test_suggested_poll_interval(
    age_ms: int, floor: int, ceiling: int | None, expected: int
) -> None:
    assert suggested_poll_interval(age_ms, floor, ceiling) == expected


def test_the_poll_interval_grows_with_the_tasks_age_within_the_servers_bounds() -> None:
    domain = Domain()
    task_id = domain.create("echo", {"text": "hi"})
    record = domain.record(task_id)
    assert (record.poll_interval_ms, record.poll_interval_max_ms) == (500, 10_000)
    seen = []
    for _ in range(4):
        seen.append(domain.service.get(ALICE, task_id).poll_interval_ms)
        domain.clock.advance(40_000)
    assert seen == [500, 4_000, 8_000, 10_000]
    # Waiting for input or ended, nothing changes until the client acts: the longest interval
    domain.service.cancel(ALICE, task_id)
    assert domain.service.get(ALICE, task_id).poll_interval_ms == 10_000


def test_a_task_waiting_for_input_suggests_the_longest_interval() -> None:
    domain = Domain()
    task_id = domain.create("confirm", {"name": "x"})
    domain.run_leg(task_id)
    assert domain.service.get(ALICE, task_id).poll_interval_ms == 10_000


def test_a_tool_sets_its_own_poll_interval_bounds() -> None:
    domain = Domain()
    task_id = domain.create("paced", {"text": "hi"})
    domain.clock.advance(3_600_000 - 1)
    assert domain.service.get(ALICE, task_id).poll_interval_ms == 4_000
    record = domain.record(task_id)
    assert (record.poll_interval_ms, record.poll_interval_max_ms) == (1_000, 4_000)
