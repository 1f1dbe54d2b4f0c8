"""Tasks whose work is a declared workflow's execution (`tasks.workflow`), on the in-memory
store: the start, the questions a workflow asks and their answers, reports, cancellation, and
the execution's end settling the task (the reconciler's `settle_workflow_end`)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from mcp_tasks_aws.tasks.exceptions import TaskNotFound
from mcp_tasks_aws.tasks.workflow import (
    CAPABILITY_KEY,
    AskRefused,
    ask_key,
    execution_arn_for,
)
from support.domain import ALICE, accept
from support.targets import DONE, MACHINE, QUESTION, Flow, flow_of

# -- start ----------------------------------------------------------------------------------


def test_creating_the_task_starts_the_execution_named_after_it(flow: Flow) -> None:
    record = flow.create({"text": "v1"})
    assert record.execution_arn == execution_arn_for(MACHINE, record.task_id)
    assert flow.record(record.task_id).execution_arn == record.execution_arn
    ((machine, name, payload),) = flow.workflows.named("start")
    assert (machine, name) == (MACHINE, record.task_id)
    # The input as declared, and the task's capability (only its own execution may ask)
    assert payload == {
        "taskId": record.task_id,
        "arguments": {"text": "v1"},
        CAPABILITY_KEY: flow.capability(record),
    }
    assert flow.keys.opens(record.execution_arn, payload[CAPABILITY_KEY])
    assert flow.runner.calls == []  # no leg of this server, no task-runner execution
    assert record.held_by == "execution"


def test_an_input_template_gets_the_task_id_and_the_arguments(tmp_path: Path) -> None:
    flow = flow_of(tmp_path, input={"release": "${text}", "mcp": {"task": "${taskId}"}})
    record = flow.create({"text": "v2"})
    ((_, _, payload),) = flow.workflows.named("start")
    assert payload == {
        "release": "v2",
        "mcp": {"task": record.task_id},
        CAPABILITY_KEY: flow.capability(record),
    }


def test_a_missing_machine_fails_the_task_at_once_naming_it_and_the_code(flow: Flow) -> None:
    flow.workflows.unavailable = "StateMachineDoesNotExist"
    record = flow.create()
    assert record.status == "failed"
    assert record.error == {
        "code": -32603,
        "message": f"The task could not start: State machine {MACHINE}: StateMachineDoesNotExist",
    }


# -- ask, answer ----------------------------------------------------------------------------


def test_a_question_parks_the_task_and_the_answer_resumes_the_state(flow: Flow) -> None:
    record = flow.create()
    key = flow.ask(record)
    assert key == ask_key(1)
    parked = flow.record(record.task_id)
    assert parked.visible_status == "input_required"
    assert parked.input_requests == {key: QUESTION}
    assert parked.task_token == "token-1"
    flow.service.update(ALICE, record.task_id, {key: accept(done=True)})
    assert flow.workflows.named("answer") == [("token-1", accept(done=True))]
    assert flow.record(record.task_id).visible_status == "working"
    # The next question gets a fresh key, and its own answer.
    second = flow.ask(flow.record(record.task_id), token="token-2")
    assert second == ask_key(2)
    flow.service.update(ALICE, record.task_id, {second: accept(done=False)})
    assert flow.workflows.named("answer")[-1] == ("token-2", accept(done=False))


@pytest.mark.parametrize(
    ("action", "error"), [("decline", "McpDeclined"), ("cancel", "McpCancelled")]
)
def test_a_declined_elicitation_fails_the_state_with_a_named_error(
    flow: Flow, action: str, error: str
) -> None:
    record = flow.create()
    key = flow.ask(record)
    flow.service.update(ALICE, record.task_id, {key: {"action": action}})
    assert flow.workflows.named("refuse") == [("token-1", error)]
    assert flow.workflows.named("answer") == []
    assert flow.record(record.task_id).status == "input_required"  # the workflow decides


def test_a_retried_update_after_a_failed_resume_resumes_again(flow: Flow) -> None:
    record = flow.create()
    key = flow.ask(record)
    flow.workflows.failing.add("answer")
    with pytest.raises(RuntimeError):
        flow.service.update(ALICE, record.task_id, {key: accept(done=True)})
    flow.service.update(ALICE, record.task_id, {key: accept(done=False)})  # first answer wins
    assert flow.workflows.named("answer") == [
        ("token-1", accept(done=True)),
        ("token-1", accept(done=True)),
    ]


def test_only_the_tasks_own_execution_may_ask(flow: Flow) -> None:
    record = flow.create()
    other = execution_arn_for(MACHINE, "someone-else")
    with pytest.raises(AskRefused) as refused:
        flow.doors.ask(record.task_id, other, "token", QUESTION)
    assert refused.value.error == "McpUnknownTask"
    with pytest.raises(AskRefused):
        flow.doors.ask("0" * 32, other, "token", QUESTION)


def test_a_cancelled_task_refuses_questions(flow: Flow) -> None:
    record = flow.create()
    flow.service.cancel(ALICE, record.task_id)
    with pytest.raises(AskRefused) as refused:
        flow.ask(record)
    assert refused.value.error == "McpTaskEnded"


def test_one_question_at_a_time(flow: Flow) -> None:
    record = flow.create()
    flow.ask(record)
    with pytest.raises(AskRefused) as refused:
        flow.ask(record, token="token-2")
    assert refused.value.error == "McpAskPending"
    assert flow.record(record.task_id).task_token == "token-1"


def test_a_workflow_may_ask_for_sampling_and_gets_the_models_answer(flow: Flow) -> None:
    capabilities = {"sampling": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}
    record = flow.create(capabilities=capabilities)
    assert record.execution_arn is not None
    request = {
        "method": "sampling/createMessage",
        "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": "Summarize."}}],
            "maxTokens": 50,
        },
    }
    key = flow.ask(record, "token-s", request)
    assert flow.record(record.task_id).input_requests == {key: request}
    reply = {
        "role": "assistant",
        "content": {"type": "text", "text": "A summary."},
        "model": "test-model",
    }
    flow.service.update(ALICE, record.task_id, {key: reply})
    # The state's output is the model's answer as the client gave it.
    assert flow.workflows.named("answer") == [("token-s", reply)]


def test_sampling_needs_the_clients_sampling_capability(flow: Flow) -> None:
    record = flow.create()  # elicitation only
    assert record.execution_arn is not None
    request = {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}
    with pytest.raises(AskRefused) as refused:
        flow.ask(record, "t", request)
    assert refused.value.error == "McpUnsupported"


def test_a_client_without_elicitation_cannot_be_asked(flow: Flow) -> None:
    record = flow.create(capabilities={"extensions": {"io.modelcontextprotocol/tasks": {}}})
    with pytest.raises(AskRefused) as refused:
        flow.ask(record)
    assert refused.value.error == "McpUnsupported"


def test_a_request_that_is_no_question_is_refused(flow: Flow) -> None:
    record = flow.create()
    assert record.execution_arn is not None
    with pytest.raises(AskRefused) as refused:
        flow.ask(record, "t", {"method": "roots/list"})
    assert refused.value.error == "McpInvalidRequest"


# -- report ---------------------------------------------------------------------------------


def test_a_report_sets_the_status_message_with_its_progress(flow: Flow) -> None:
    record = flow.create()
    assert record.execution_arn is not None
    assert flow.report(record, "deploying", 1, 2)
    assert flow.record(record.task_id).status_message == "1/2 · deploying"
    flow.ask(record)
    # While a question is open, a report would read as working: it is dropped.
    assert not flow.report(record, "still")
    assert flow.record(record.task_id).visible_status == "input_required"
    with pytest.raises(ValueError, match="progress"):
        flow.report(record, "x", -1)


def test_a_report_with_numbers_no_float_holds_is_refused_as_invalid(flow: Flow) -> None:
    # The AskFunction answers a ValueError as McpInvalidRequest; an OverflowError would be a
    # crash with a traceback.
    record = flow.create()
    assert record.execution_arn is not None
    for progress, total in ((10**400, None), (1, 10**400)):
        with pytest.raises(ValueError, match="too large"):
            flow.report(record, "x", progress, total)


# -- cancel ---------------------------------------------------------------------------------


def test_cancel_stops_the_execution_and_fails_a_waiting_state(flow: Flow) -> None:
    record = flow.create()
    flow.ask(record)
    flow.service.cancel(ALICE, record.task_id)
    assert flow.workflows.named("stop") == [record.execution_arn]
    assert flow.workflows.named("refuse") == [("token-1", "McpTaskCancelled")]
    assert flow.runner.calls == []


def test_cancel_of_a_working_workflow_only_stops_it(flow: Flow) -> None:
    record = flow.create()
    flow.service.cancel(ALICE, record.task_id)
    assert flow.workflows.named("stop") == [record.execution_arn]
    assert flow.workflows.named("refuse") == []


def test_a_refused_question_fails_the_task_and_stops_the_execution(flow: Flow) -> None:
    record = flow.create()
    key = flow.ask(record)
    error = {"code": -32600, "message": "user closed the dialog"}
    assert flow.service.refuse(ALICE, record.task_id, key, "elicitation/create", error)
    assert flow.record(record.task_id).status == "failed"
    assert flow.workflows.named("stop") == [record.execution_arn]


# -- the execution's end --------------------------------------------------------------------


def test_success_completes_with_the_output_as_json_text(flow: Flow) -> None:
    record = flow.create()
    assert flow.settle(record, "SUCCEEDED", output=json.dumps({"done": True})) == "completed"
    ended = flow.record(record.task_id)
    assert ended.status == "completed"
    assert ended.result == {"content": [{"type": "text", "text": '{"done":true}'}]}


def test_success_gives_structured_content_when_an_output_schema_is_declared(
    tmp_path: Path,
) -> None:
    flow = flow_of(tmp_path, outputSchema=DONE)
    record = flow.create()
    flow.settle(record, "SUCCEEDED", output=json.dumps({"done": True}))
    assert flow.record(record.task_id).result["structuredContent"] == {"done": True}  # type: ignore[index]


def test_an_output_that_keeps_the_execution_input_does_not_carry_the_capability(
    tmp_path: Path,
) -> None:
    # States that keep their input (a Pass state, `ResultPath: "$.x"`) end with the input in
    # the output, the capability among it: that is the workflow's door key, not its result
    # (nor what a closed outputSchema names).
    flow = flow_of(tmp_path, outputSchema={**DONE, "additionalProperties": False})
    record = flow.create()
    capability = flow.capability(record)
    output = {"done": True, CAPABILITY_KEY: capability}
    assert flow.settle(record, "SUCCEEDED", output=json.dumps(output)) == "completed"
    ended = flow.record(record.task_id)
    assert ended.result is not None
    assert capability not in json.dumps(ended.result)
    assert ended.result["structuredContent"] == {"done": True}


def test_an_output_the_event_left_out_is_read_from_the_execution(flow: Flow) -> None:
    record = flow.create()
    assert record.execution_arn is not None
    flow.workflows.outputs[record.execution_arn] = '"big"'
    flow.settle(record, "SUCCEEDED", output=None)
    assert flow.workflows.named("output") == [record.execution_arn]
    assert flow.record(record.task_id).result == {"content": [{"type": "text", "text": "big"}]}


def test_an_output_over_the_item_budget_goes_to_the_result_store(tmp_path: Path) -> None:
    flow = flow_of(tmp_path)
    flow.legs.result_budget = 100
    record = flow.create()
    flow.settle(record, "SUCCEEDED", output=json.dumps("x" * 500))
    ended = flow.record(record.task_id)
    assert ended.status == "completed"
    assert ended.result is None
    assert ended.result_ref is not None
    view = flow.service.get(ALICE, record.task_id)
    assert view.result == {"content": [{"type": "text", "text": "x" * 500}]}


def test_a_declared_tool_error_completes_with_is_error(flow: Flow) -> None:
    record = flow.create()
    outcome = flow.settle(record, "FAILED", error="Rejected", cause="not approved")
    assert outcome == "completed"
    ended = flow.record(record.task_id)
    assert ended.tool_error
    assert ended.result == {
        "content": [{"type": "text", "text": "Rejected: not approved"}],
        "isError": True,
    }


@pytest.mark.parametrize("status", ["FAILED", "TIMED_OUT", "ABORTED"])
def test_other_ends_fail_the_task_with_the_error_and_cause(flow: Flow, status: str) -> None:
    record = flow.create()
    assert flow.settle(record, status, error="States.TaskFailed", cause="boom") == "failed"
    ended = flow.record(record.task_id)
    assert ended.status == "failed"
    assert ended.error is not None
    assert ended.error["code"] == -32603
    assert ended.error["data"] == {"status": status, "error": "States.TaskFailed", "cause": "boom"}


LAMBDA_CAUSE = json.dumps(
    {
        "errorMessage": "disk full on /var/deploy",
        "errorType": "OSError",
        "requestId": "4f1e-req",
        "stackTrace": ['  File "/var/task/deploy.py", line 12, in handler\n    secret = "hunter2"'],
    }
)


@pytest.mark.parametrize("error", ["OSError", "Rejected"])
def test_a_lambda_failures_stack_trace_never_reaches_the_client(
    flow: Flow, error: str, caplog: pytest.LogCaptureFixture
) -> None:
    # A Lambda state that raised fails the execution with the function's error payload as its
    # cause: the client reads the error name and the message, the log keeps the rest.
    record = flow.create()
    with caplog.at_level(logging.INFO):
        flow.settle(record, "FAILED", error=error, cause=LAMBDA_CAUSE)
    ended = flow.record(record.task_id)
    shown = json.dumps([ended.error, ended.result])
    assert "stackTrace" not in shown
    assert "deploy.py" not in shown
    assert "4f1e-req" not in shown
    assert "disk full on /var/deploy" in shown
    assert "deploy.py" in caplog.text  # the whole cause, for whoever runs the stack


def test_a_long_cause_is_cut_to_its_first_line_and_a_bound(flow: Flow) -> None:
    record = flow.create()
    cause = "first line " + "x" * 5000 + "\nTraceback (most recent call last):\n  File ..."
    flow.settle(record, "FAILED", error="States.TaskFailed", cause=cause)
    error = flow.record(record.task_id).error
    assert error is not None
    shown = error["data"]["cause"]
    assert shown.startswith("first line xxx")
    assert "Traceback" not in shown
    assert len(shown) <= 301


@pytest.mark.parametrize("status", ["SUCCEEDED", "FAILED", "ABORTED"])
def test_a_workflow_that_ends_while_its_task_is_cancelled_stays_cancelled(
    flow: Flow, status: str
) -> None:
    record = flow.create()
    flow.service.cancel(ALICE, record.task_id)
    assert flow.settle(record, status, output="{}", error="x") == "unchanged"
    assert flow.record(record.task_id).status == "cancelled"


def test_an_execution_that_runs_no_task_is_ignored(flow: Flow) -> None:
    record = flow.create()
    stranger = execution_arn_for(MACHINE, "manual-run")
    assert flow.settle_run(record.task_id, stranger, "SUCCEEDED", output="{}") == "ignored"
    assert flow.settle_run("0" * 32, stranger, "FAILED") == "ignored"
    assert flow.settle_run("manual-run", stranger, "FAILED") == "ignored"
    assert flow.record(record.task_id).status == "working"


def test_the_task_reads_back_like_any_other(flow: Flow) -> None:
    record = flow.create()
    flow.settle(record, "SUCCEEDED", output='{"done": true}')
    assert flow.service.get(ALICE, record.task_id).record.status == "completed"
    with pytest.raises(TaskNotFound):
        flow.service.get("someone else", record.task_id)
