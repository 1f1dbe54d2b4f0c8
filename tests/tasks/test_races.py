"""Races and failures end to end over HTTP through the embedded stack: end-to-end smoke tests,
marked `smoke` (they run by default; `-m "not smoke"` leaves them out).

Each test drives the real API handler, the real state machine (moto's interpreter running
infra/task_runner.asl.json), the real worker (invoked by the state machine, or asynchronously
by the API for a direct first leg) and the reconciler. Tests taking `path` run on both paths.
Timing decides which interleaving a run hits here, so these check the invariants that hold
for every one; each interleaving is forced, with its one outcome, in `test_interleavings.py`.
They sleep to give one side a head start (a cancel after a delay, a leg that hangs) and wait by
polling with deadlines: a slow machine may hit another interleaving, never break an invariant.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import boto3
import pytest

from mcp_tasks_aws import TaskPolicy, ToolSet
from mcp_tasks_aws.aws.s3 import S3ResultStore
from mcp_tasks_aws.config import load_toolset
from mcp_tasks_aws.local.aws import REGION
from mcp_tasks_aws.local.lambdas import LAMBDAS
from mcp_tasks_aws.tasks import transitions
from mcp_tasks_aws.tasks.legs import LegRunner
from mcp_tasks_aws.tasks.model import new_task_id
from support.records import ON_STACK
from support.tasks import TaskClient, elicit_answer, jwt, jwt_principal, now_ms, on_path, wait_until

make_record = ON_STACK.make  # records as the embedded stack's anonymous caller creates them

pytestmark = [
    pytest.mark.smoke,
    pytest.mark.filterwarnings("ignore:No application metrics to publish"),
]

STABLE_POLLS = 3  # ~0.3 s of polling after a task ended


def only_key(task: dict[str, Any]) -> str:
    keys = list(task["inputRequests"])
    assert len(keys) == 1, task
    return keys[0]


def assert_stable(tasks: TaskClient, task_id: str, final: dict[str, Any]) -> None:
    """The task answers the same terminal status and outcome for about a second."""
    for _ in range(STABLE_POLLS):
        time.sleep(0.1)
        again = tasks.get(task_id)
        assert again["status"] == final["status"], (final, again)
        assert again.get("result") == final.get("result")
        assert again.get("error") == final.get("error")


def assert_execution_ends(tasks: TaskClient, task_id: str, timeout: float = 5.0) -> str:
    status: str = wait_until(
        lambda: (s := tasks.execution(task_id)["status"]) != "RUNNING" and s, timeout
    )
    return status


def assert_work_ends(tasks: TaskClient, task_id: str, path: str) -> str:
    """The task's execution ends (Step Functions path), or none ever ran it (direct path: a
    task that asked nothing never has one). Returns the execution's status, or "none"."""
    if path == "direct":
        assert LAMBDAS.drain(timeout_s=5)  # the asynchronous invoke ended
        assert tasks.executions_named(task_id) == []
        return "none"
    return assert_execution_ends(tasks, task_id)


def leg_handler(legs: LegRunner) -> Any:
    """A worker handler running `legs`, for either kind of event (direct or in an execution)."""

    def handle(event: dict[str, Any], context: Any) -> dict[str, str]:
        token = event.get("taskToken")
        task_id = event["taskId"]
        return {"outcome": legs.run(task_id, token) if token else legs.run_direct(task_id)}

    return handle


def run_concurrently(*calls: Any) -> list[Any]:
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(index: int, call: Any) -> None:
        barrier.wait(timeout=5)
        results[index] = call()

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
        assert not thread.is_alive()
    return results


# -- update vs cancel, cancel vs completion ----------------------------------------------------


@pytest.mark.parametrize("cancel_delay", [0.0, 0.3])
def test_update_racing_cancel_ends_one_way_and_stays(
    tasks: TaskClient, cancel_delay: float
) -> None:
    # Given a task waiting for a confirmation
    filename = f"race-{new_task_id()[:6]}.txt"
    task_id = tasks.create("confirm_delete", {"filename": filename})
    key = only_key(tasks.wait_input(task_id))
    # When the answer and a cancel arrive at the same time
    updated, cancelled = run_concurrently(
        lambda: tasks.update(task_id, {key: elicit_answer({"confirm": True})}),
        lambda: time.sleep(cancel_delay) or tasks.cancel(task_id),
    )
    # Then both are acknowledged
    assert updated.get("result") == {"resultType": "complete"}, updated
    assert cancelled.get("result") == {"resultType": "complete"}, cancelled
    # And the task ends cancelled (no result) or completed (with the result), never both
    final = tasks.wait_terminal(task_id)
    assert final["status"] in ("cancelled", "completed"), final
    record = tasks.store.get(task_id)
    assert record is not None
    if final["status"] == "cancelled":
        assert "result" not in final
        assert record.result is None
        assert record.result_ref is None
    else:
        assert final["result"]["content"][0]["text"] == f"Deleted {filename}."
    # And it keeps that status; its execution does not linger
    assert_stable(tasks, task_id, final)
    assert_execution_ends(tasks, task_id)
    assert tasks.get(task_id)["status"] == final["status"]


@pytest.mark.parametrize("delay", [0.0, 0.1])
def test_cancel_racing_completion_settles_once(tasks: TaskClient, delay: float, path: str) -> None:
    # Given a task that finishes almost at once
    task_id = tasks.create("slow_compute", {"seconds": 0.01, "label": f"photo-{delay}"})
    # When it is cancelled around the time it completes
    time.sleep(delay)
    answer = tasks.cancel(task_id)
    # Then the cancel is acknowledged, and the task ends one way and stays that way
    assert answer.get("result") == {"resultType": "complete"}, answer
    final = tasks.wait_terminal(task_id)
    assert final["status"] in ("cancelled", "completed"), final
    if final["status"] == "cancelled":
        assert "result" not in final
    else:
        assert final["result"]["content"][0]["text"].startswith("Computed photo-")
    assert_stable(tasks, task_id, final)
    assert_work_ends(tasks, task_id, path)


@pytest.mark.parametrize("delay", [0.0, 0.05])
def test_cancel_of_a_working_task_is_final_at_once(
    tasks: TaskClient, delay: float, path: str
) -> None:
    # Given a task whose tool is starting to report progress (for 2 s: on a loaded machine a
    # 0.3 s tool once completed before the cancel landed, and the premise was lost)
    task_id = tasks.create("slow_compute", {"seconds": 2.0, "label": f"working-{delay}"})
    # When it is cancelled while its leg runs (around its first progress report)
    time.sleep(delay)
    assert tasks.cancel(task_id)["result"] == {"resultType": "complete"}
    # Then the durable cancel marker is what every later read sees: cancelled, for good
    for _ in range(4):
        task = tasks.get(task_id)
        assert task["status"] == "cancelled", task
        time.sleep(0.1)
    # How the execution ends depends on what lands first: the stop (ABORTED), the leg's
    # "done" (SUCCEEDED), or the leg's invoke cut short by the stop (RunLeg's catch: FAILED).
    # Each ends the work; what matters is that it ends and the task stays cancelled.
    ended = assert_work_ends(tasks, task_id, path)
    assert ended in ("ABORTED", "SUCCEEDED", "FAILED", "none")
    record = tasks.store.get(task_id)
    assert record is not None
    assert (record.status, record.result) == ("cancelled", None)


def test_cancelled_waiting_task_stays_cancelled_and_refuses_answers(tasks: TaskClient) -> None:
    # Given a waiting task that was cancelled
    task_id = tasks.create("confirm_delete", {"filename": "c.txt"})
    key = only_key(tasks.wait_input(task_id))
    assert tasks.cancel(task_id)["result"] == {"resultType": "complete"}
    assert tasks.get(task_id)["status"] == "cancelled"
    # When an answer arrives afterwards
    late = tasks.update(task_id, {key: elicit_answer({"confirm": True})})
    # Then it is acknowledged and ignored: the task stays cancelled and the execution ends
    assert late.get("result") == {"resultType": "complete"}, late
    assert assert_execution_ends(tasks, task_id) in ("FAILED", "ABORTED", "SUCCEEDED")
    final = tasks.get(task_id)
    assert final["status"] == "cancelled"
    assert_stable(tasks, task_id, final)
    record = tasks.store.get(task_id)
    assert record is not None
    assert record.answers == {}


# -- duplicate, stale and partial updates ------------------------------------------------------


def test_first_answer_wins_over_a_duplicate_update(tasks: TaskClient, path: str) -> None:
    # Given a waiting confirm_delete task
    task_id = tasks.create("confirm_delete", {"filename": "keep.txt"})
    key = only_key(tasks.wait_held(task_id))
    # When the client answers "no", then (a retry with another value) "yes"
    first = tasks.update(task_id, {key: elicit_answer({"confirm": False})})
    second = tasks.update(task_id, {key: elicit_answer({"confirm": True})})
    # Then both are acknowledged, and the first answer decides
    assert first.get("result") == {"resultType": "complete"}, first
    assert second.get("result") == {"resultType": "complete"}, second
    final = tasks.wait_terminal(task_id)
    assert final["status"] == "completed", final
    assert final["result"]["content"][0]["text"] == "Kept keep.txt."
    assert_stable(tasks, task_id, final)
    # When yet another answer comes after completion
    before = tasks.store.get(task_id)
    late = tasks.update(task_id, {key: elicit_answer({"confirm": True})})
    # Then it is acknowledged and changes nothing
    assert late.get("result") == {"resultType": "complete"}, late
    after = tasks.store.get(task_id)
    assert before is not None
    assert after is not None
    assert (after.version, after.answers, after.result) == (
        before.version,
        before.answers,
        before.result,
    )
    assert tasks.get(task_id)["result"]["content"][0]["text"] == "Kept keep.txt."
    # And the worker ran exactly two legs (and, on the direct path, the execution's first
    # invoke, which only attached its token)
    assert tasks.dispatch.legs[task_id] == (3 if path == "direct" else 2)


def test_partial_update_leaves_the_other_request_outstanding(tasks: TaskClient, path: str) -> None:
    # Given a task that asked two questions at once
    task_id = tasks.create("multi_input", {})
    waiting = tasks.wait_held(task_id)
    first_key, second_key = sorted(waiting["inputRequests"])
    # When only one is answered
    answer = tasks.update(task_id, {first_key: elicit_answer({"name": "Ada"})})
    assert answer.get("result") == {"resultType": "complete"}, answer
    # Then the task still waits for the other one only, and no new leg runs
    time.sleep(0.4)
    still = tasks.get(task_id)
    assert still["status"] == "input_required", still
    assert set(still["inputRequests"]) == {second_key}
    assert tasks.dispatch.legs[task_id] == (2 if path == "direct" else 1)
    # When the other is answered, Then the task completes with both answers
    tasks.update(task_id, {second_key: elicit_answer({"name": "Grace"})})
    final = tasks.wait_terminal(task_id)
    assert final["status"] == "completed", final
    text = final["result"]["content"][0]["text"]
    assert "Ada" in text
    assert "Grace" in text


# -- duplicate deliveries and retried starts ---------------------------------------------------


def test_duplicate_tools_call_delivery_makes_two_tasks_each_run_once(
    tasks: TaskClient, path: str
) -> None:
    # Given one tools/call request body
    method = "tools/call"
    params = {"name": "slow_compute", "arguments": {"seconds": 0, "label": "dup"}}
    body = tasks.body(method, params, rid=4242)
    headers = tasks.headers(method, "slow_compute", None)
    # When it is delivered twice
    answers = [tasks.post(body, headers)[1] for _ in range(2)]
    ids = [a["result"]["taskId"] for a in answers]
    # Then there are two distinct tasks, and each one ran its tool exactly once
    assert ids[0] != ids[1]
    for task_id in ids:
        final = tasks.wait_terminal(task_id)
        assert final["status"] == "completed", final
        assert final["result"]["content"][0]["text"] == "Computed dup after 0.0s."
        assert_work_ends(tasks, task_id, path)
        assert tasks.dispatch.legs[task_id] == 1
        assert len(tasks.executions_named(task_id)) == (0 if path == "direct" else 1)


def test_retried_start_execution_is_a_no_op(tasks: TaskClient) -> None:
    # Given a task running in its execution
    with on_path(tasks.stack, "step_functions"):
        task_id = tasks.create("slow_compute", {"seconds": 0.5, "label": "retry-start"})
    record = tasks.store.get(task_id)
    assert record is not None
    # When its execution is started again, with the same and with another leg timeout
    tasks.runner.start(task_id, record.wait_seconds(record.created_at))
    tasks.runner.start(task_id, 60)
    # Then nothing is raised, and there is still one execution running one leg
    final = tasks.wait_terminal(task_id)
    assert final["status"] == "completed", final
    assert_execution_ends(tasks, task_id)
    tasks.runner.start(task_id, 60)  # and after it ended
    assert len(tasks.executions_named(task_id)) == 1
    assert tasks.dispatch.legs[task_id] == 1
    assert tasks.get(task_id)["status"] == "completed"


# -- lost legs ---------------------------------------------------------------------------------


def test_worker_dying_mid_leg_ends_the_task_failed(tasks: TaskClient, path: str) -> None:
    # Given a worker that crashes during this task's leg (after reporting progress)
    def crashing(event: dict[str, Any], context: Any) -> Any:
        record = tasks.store.get(event["taskId"])
        assert record is not None
        tasks.store.apply(
            record.task_id, *transitions.report(record.leg, "about to crash", now_ms())
        )
        raise RuntimeError("worker died")

    tasks.dispatch.by_label["die-mid-leg"] = crashing
    try:
        task_id = tasks.create("slow_compute", {"seconds": 0, "label": "die-mid-leg"})
        # When the execution fails, Then the reconciler ends the task failed with an error
        final = tasks.wait_terminal(task_id, timeout=5)
    finally:
        del tasks.dispatch.by_label["die-mid-leg"]
    assert final["status"] == "failed", final
    assert final["error"]["code"] == -32603
    assert isinstance(final["error"]["message"], str)
    assert final["error"]["message"]
    assert "result" not in final
    if path == "direct":  # the invoke's on-failure record reached the reconciler
        assert final["error"]["message"] == "The task's first leg crashed"
        assert tasks.executions_named(task_id) == []
    else:
        assert tasks.execution(task_id)["status"] == "FAILED"
    # And tasks/get keeps answering the same
    assert_stable(tasks, task_id, final)
    assert tasks.dispatch.legs[task_id] == 1


def test_leg_running_past_its_timeout_ends_the_task_failed(tasks: TaskClient) -> None:
    # (Step Functions path: the execution's RunLeg times out; see the next test for a
    # direct leg, which the worker function's own timeout ends.)
    # Given a task whose worker never reports back, run with a one-second leg timeout
    record = make_record(arguments={"seconds": 0, "label": "hang"})
    tasks.store.put_new(record)
    tasks.dispatch.by_task[record.task_id] = lambda event, context: {"outcome": "parked"}
    started = time.monotonic()
    tasks.runner.start(record.task_id, 1)
    # When the leg times out, Then the reconciler settles the task failed
    final = tasks.wait_terminal(record.task_id, timeout=6)
    assert final["status"] == "failed", final
    assert final["error"]["code"] == -32603
    assert time.monotonic() - started >= 0.9
    history = boto3.client("stepfunctions", region_name=REGION).get_execution_history(
        executionArn=tasks.runner.execution_arn(record.task_id)
    )
    assert any(e["type"] == "TaskTimedOut" for e in history["events"])
    assert_stable(tasks, record.task_id, final)


def test_direct_leg_running_past_the_function_timeout_ends_the_task_failed(
    tasks: TaskClient,
) -> None:
    # Given a direct leg that hangs, with the worker's timeout at half a second
    def hanging(event: dict[str, Any], context: Any) -> Any:
        time.sleep(2.0)
        return {"outcome": "done"}

    tasks.dispatch.by_label["hang-direct"] = hanging
    worker = tasks.stack.aws.function_name("WorkerFunction")
    started = time.monotonic()
    try:
        with LAMBDAS.timeout(worker, 0.5), on_path(tasks.stack, "direct"):
            task_id = tasks.create("slow_compute", {"seconds": 0, "label": "hang-direct"})
            # When Lambda ends the invoke, Then its failure record fails the task
            final = tasks.wait_terminal(task_id, timeout=6)
    finally:
        del tasks.dispatch.by_label["hang-direct"]
    assert final["status"] == "failed", final
    assert final["error"] == {
        "code": -32603,
        "message": "The task's first leg ran past the worker's timeout",
    }
    assert time.monotonic() - started >= 0.45
    assert tasks.executions_named(task_id) == []
    assert_stable(tasks, task_id, final)


# -- expiry and ownership ----------------------------------------------------------------------


@pytest.mark.parametrize("status", ["working", "input_required"])
def test_expired_task_answers_invalid_params_on_every_method(
    tasks: TaskClient, status: str
) -> None:
    # Given a task whose TTL elapsed a minute ago (not yet removed by DynamoDB)
    created = now_ms() - 120_000
    record = make_record(
        status=status,
        created_at=created,
        updated_at=created,
        ttl_ms=60_000,
        input_requests={"k": {"method": "elicitation/create", "params": {"message": "?"}}}
        if status == "input_required"
        else {},
        asked_keys=frozenset({"k"}) if status == "input_required" else frozenset(),
    )
    tasks.store.put_new(record)
    task_id = record.task_id
    # When it is read, answered (with and without a usable answer) or cancelled
    answers = [
        tasks.rpc("tasks/get", {"taskId": task_id}),
        tasks.update(task_id, {"k": elicit_answer({"ok": True})}),
        tasks.update(task_id, {"k": "not an answer"}),
        tasks.cancel(task_id),
        tasks.rpc("tasks/get", {"taskId": task_id}),
    ]
    # Then each answers -32602 saying it expired
    for answer in answers:
        assert "result" not in answer, answer
        assert answer["error"]["code"] == -32602
        assert "expired" in answer["error"]["message"].lower()


def test_foreign_task_answers_exactly_like_a_missing_one(tasks: TaskClient) -> None:
    # Given alice's waiting task
    alice, bob = jwt("alice"), jwt("bob")
    task_id = tasks.create("confirm_delete", {"filename": "alice.txt"}, token=alice)
    key = only_key(tasks.wait_held(task_id, token=alice))
    record = tasks.store.get(task_id)
    assert record is not None
    assert record.owner == jwt_principal("alice")
    missing = new_task_id()
    usable = {key: elicit_answer({"confirm": True})}

    def attempts(target: str, token: str | None) -> list[dict[str, Any]]:
        return [
            tasks.rpc("tasks/get", {"taskId": target}, token=token),
            tasks.update(target, usable, token=token),
            tasks.update(target, {key: "not an answer"}, token=token),
            tasks.cancel(target, token=token),
        ]

    # When bob, or an anonymous caller, reads, answers or cancels it
    for token in (bob, None):
        foreign = attempts(task_id, token)
        absent = attempts(missing, token)
        # Then every answer is the very error a task that does not exist gets
        for seen, expected in zip(foreign, absent, strict=True):
            assert "result" not in seen, seen
            assert seen["error"] == expected["error"]
            assert seen["error"]["code"] == -32602
    # And alice's task is untouched: still waiting, no answer recorded, not cancelled
    after = tasks.store.get(task_id)
    assert after is not None
    assert (after.status, after.answers, after.version) == (
        "input_required",
        {},
        record.version,
    )
    assert tasks.get(task_id, token=alice)["status"] == "input_required"
    assert tasks.cancel(task_id, token=alice)["result"] == {"resultType": "complete"}
    assert tasks.get(task_id, token=alice)["status"] == "cancelled"


# -- results over the item budget --------------------------------------------------------------


def test_result_over_the_item_budget_goes_to_s3_and_get_inlines_it(tasks: TaskClient) -> None:
    # Given a worker whose item budget for results is 10 bytes
    results = S3ResultStore(boto3.client("s3", region_name=REGION), tasks.stack.aws.bucket_name)
    legs = LegRunner(
        tasks.store, tasks.runner, load_toolset("conformance"), results=results, result_budget=10
    )
    tasks.dispatch.by_label["big-result"] = leg_handler(legs)
    try:
        task_id = tasks.create("slow_compute", {"seconds": 0, "label": "big-result"})
        final = tasks.wait_terminal(task_id)
    finally:
        del tasks.dispatch.by_label["big-result"]
    # Then the result is in S3, not on the item, and tasks/get returns it whole
    expected = {"content": [{"type": "text", "text": "Computed big-result after 0.0s."}]}
    assert final["status"] == "completed", final
    assert final["result"] == {"resultType": "complete", **expected}
    record = tasks.store.get(task_id)
    assert record is not None
    assert record.result is None
    assert record.result_ref is not None
    stored = json.loads(results.get(record.result_ref))
    assert stored == expected


def test_a_400_kb_result_is_offloaded_and_returned_whole(tasks: TaskClient) -> None:
    # Given a tool whose result is bigger than a DynamoDB item may be
    big = ToolSet(name="big", version="0")
    text = "x" * 400_000

    @big.tool(task=TaskPolicy.REQUIRED)
    def slow_compute(seconds: float, label: str) -> str:
        """Returns about 400 KB of text."""
        return text

    legs = LegRunner(
        tasks.store,
        tasks.runner,
        big,
        results=S3ResultStore(boto3.client("s3", region_name=REGION), tasks.stack.aws.bucket_name),
    )
    tasks.dispatch.by_label["huge-result"] = leg_handler(legs)
    try:
        task_id = tasks.create("slow_compute", {"seconds": 0, "label": "huge-result"})
        final = tasks.wait_terminal(task_id)
    finally:
        del tasks.dispatch.by_label["huge-result"]
    # Then it completed, its item holds only a reference, and tasks/get returns the text whole
    assert final["status"] == "completed", final
    assert final["result"]["content"][0]["text"] == text
    record = tasks.store.get(task_id)
    assert record is not None
    assert record.result is None
    assert record.result_ref
    s3 = boto3.client("s3", region_name=REGION)
    head = s3.head_object(Bucket=tasks.stack.aws.bucket_name, Key=record.result_ref)
    assert head["ContentLength"] > 400_000
