"""Task handles for 2026-07-28 clients that do not declare the Tasks extension: a long tool, a
task-only tool and a tool that asks, each followed to its result through the handle tools, over
the real transport and the in-memory task domain (legs run when a test says so).

Pinned here: who gets a handle and what it says; the handle tools' listing (only to clients
without tasks, without the outputSchema of a tool that answers with a handle); `task_status`
waiting, answering with the tool's own result, a failure, a cancellation; a question asked
through the client's elicitation as a multi round-trip round on `task_status`, one answered
through `task_answer` (checked against its form), and two status calls racing to answer; the
caller binding; the refusal kept where handles are off; names, prefix and the clash refused at
startup; nothing of input or result logged.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from mcp_tasks_aws.config import Settings
from mcp_tasks_aws.protocol.request_state import RequestStateCodec
from mcp_tasks_aws.server.handles import TaskHandles
from mcp_tasks_aws.server.methods import McpServer
from mcp_tasks_aws.tools.registry import TaskPolicy, ToolDefinitionError, ToolSet
from server.handle_tools import tools
from server.handles_support import (
    ELICITING,
    NOTHING,
    OPTED_IN,
    RELATED,
    HandleStack,
    next_call,
    text,
)
from support.mcp import SECRET

OTHER = "jwt:https://issuer|mallory|app"


@pytest.fixture
def stack() -> HandleStack:
    return HandleStack()


def started(stack: HandleStack, tool: str, arguments: dict[str, Any], **kwargs: Any) -> str:
    """Call `tool` as a client without tasks; check it answered with a handle; its task id."""
    result = stack.result(tool, arguments, **kwargs)
    assert result["resultType"] == "complete"
    handle = result["structuredContent"]
    assert set(handle) == {"taskId", "status", "pollIntervalMs"}
    assert handle["status"] == "working"
    assert result["_meta"] == {RELATED: {"taskId": handle["taskId"]}}
    task_id: str = handle["taskId"]
    return task_id


def status(stack: HandleStack, task_id: str, **kwargs: Any) -> Any:
    wait = kwargs.pop("wait", None)
    arguments: dict[str, Any] = {"taskId": task_id}
    if wait is not None:
        arguments["waitSeconds"] = wait
    return stack.result("task_status", arguments, **kwargs)


# -- the handle -----------------------------------------------------------------------------------


def test_a_task_only_tool_answers_a_client_without_tasks_with_a_handle(
    stack: HandleStack,
) -> None:
    result = stack.result("archive", {"name": "logs"}, capabilities=NOTHING)
    task_id = result["structuredContent"]["taskId"]
    words = text(result)
    # Started, the id, which tool next, and when: in text a model can follow.
    assert f"Started task {task_id}" in words
    assert next_call(words) == ("task_status", {"taskId": task_id, "waitSeconds": 2})
    assert result["structuredContent"] == {
        "taskId": task_id,
        "status": "working",
        "pollIntervalMs": 100,
    }
    assert result["_meta"] == {RELATED: {"taskId": task_id}}
    # The task is the one a task-aware client gets: its caller's, started on the runner.
    record = stack.record(task_id)
    assert (record.owner, record.tool, record.arguments) == (
        "anonymous",
        "archive",
        {"name": "logs"},
    )
    assert stack.runner.named("start") == [task_id]
    # It may ask a form even though the client declared nothing (task_answer answers it).
    assert record.capabilities == {"elicitation": {}}


def test_the_task_only_tool_completes_through_task_status_with_its_own_result(
    stack: HandleStack,
) -> None:
    task_id = started(stack, "archive", {"name": "logs"})
    working = status(stack, task_id)
    assert working["structuredContent"]["status"] == "working"
    assert next_call(text(working)) == ("task_status", {"taskId": task_id, "waitSeconds": 2})
    stack.run_leg(task_id)
    done = status(stack, task_id)
    # As if the original call had answered, with the related-task _meta.
    assert done == {
        "resultType": "complete",
        "content": [{"type": "text", "text": "Archived logs."}],
        "_meta": {RELATED: {"taskId": task_id}},
    }


def test_a_long_optional_tool_gets_a_handle_and_a_short_one_runs_inline(
    stack: HandleStack,
) -> None:
    task_id = started(stack, "build_report", {"rows": 7})
    stack.run_leg(task_id)
    done = status(stack, task_id)
    assert done["structuredContent"] == {"rows": 7, "summary": "7 rows counted"}
    assert "isError" not in done
    # Expected to take a second, under the inline budget: inline, no task.
    inline = stack.result("quick_sum", {"a": 2, "b": 3})
    assert inline["structuredContent"] == {"result": 5}
    assert [r.tool for r in stack.store.all_records()] == ["build_report"]


def test_a_task_aware_client_still_gets_tasks_not_handles(stack: HandleStack) -> None:
    created = stack.result("archive", {"name": "a"}, capabilities=OPTED_IN)
    assert created["resultType"] == "task"
    optional = stack.result("build_report", {"rows": 1}, capabilities=OPTED_IN)
    assert optional["resultType"] == "task"


def test_an_inline_tool_never_gets_a_handle(stack: HandleStack) -> None:
    assert text(stack.result("echo", {"text": "hi"})) == "hi"
    assert stack.store.all_records() == []


# -- tools/list -----------------------------------------------------------------------------------


def listed(stack: HandleStack, capabilities: dict[str, Any]) -> dict[str, dict[str, Any]]:
    result = stack.client.result("tools/list", capabilities=capabilities)
    return {tool["name"]: tool for tool in result["tools"]}


def test_the_handle_tools_are_listed_after_the_servers_own_only_to_clients_without_tasks(
    stack: HandleStack,
) -> None:
    without = list(listed(stack, NOTHING))
    assert without[-3:] == ["task_status", "task_answer", "task_cancel"]
    assert without[:-3] == list(tools.tools)
    assert list(listed(stack, OPTED_IN)) == list(tools.tools)
    described = listed(stack, ELICITING)
    for name in ("task_status", "task_answer", "task_cancel"):
        assert described[name]["description"]
        assert described[name]["inputSchema"]["required"][0] == "taskId"
    assert "waitSeconds" in described["task_status"]["inputSchema"]["properties"]


def test_a_tool_that_answers_with_a_handle_is_listed_without_its_output_schema(
    stack: HandleStack,
) -> None:
    # A client validates structuredContent against a listed outputSchema: a handle is not
    # build_report's output, so a client that gets handles is not shown the schema.
    assert "outputSchema" not in listed(stack, NOTHING)["build_report"]
    schema = listed(stack, OPTED_IN)["build_report"]["outputSchema"]
    assert "outputSchema" in listed(stack, NOTHING)["quick_sum"]  # inline: its own output
    # The tool's own result, through task_status, still fits the schema it declares.
    task_id = started(stack, "build_report", {"rows": 3})
    stack.run_leg(task_id)
    done = status(stack, task_id)
    Draft202012Validator(schema).validate(done["structuredContent"])


# -- waiting ------------------------------------------------------------------------------------


def test_task_status_waits_until_the_task_changes_and_no_longer(stack: HandleStack) -> None:
    task_id = started(stack, "archive", {"name": "w"})
    # The leg finishes during the second poll step of the wait.
    stack.time.on_sleep = [lambda: None, lambda: stack.run_leg(task_id)]
    done = status(stack, task_id, wait=30)  # capped at the inline budget (2 s)
    assert text(done) == "Archived w."
    assert stack.time.sleeps == [0.1, 0.1]


def test_a_wait_that_sees_no_change_ends_at_the_inline_budget(stack: HandleStack) -> None:
    task_id = started(stack, "archive", {"name": "w"})
    working = status(stack, task_id, wait=30)
    assert working["structuredContent"]["status"] == "working"
    assert sum(stack.time.sleeps) == pytest.approx(2.0)
    stack.time.sleeps.clear()
    status(stack, task_id)  # no waitSeconds: answers at once
    assert stack.time.sleeps == []


def test_a_negative_wait_or_a_missing_task_id_is_invalid_params(stack: HandleStack) -> None:
    task_id = started(stack, "archive", {"name": "x"})
    bad_wait = stack.call("task_status", {"taskId": task_id, "waitSeconds": -1})
    assert stack.client.error(bad_wait)["code"] == -32602
    assert "waitSeconds" in stack.client.error(bad_wait)["message"]
    missing = stack.call("task_status", {})
    assert "taskId" in stack.client.error(missing)["message"]


@pytest.mark.parametrize(
    # (Infinity has no JSON spelling: a body holding it is a parse error, tests/protocol.)
    "wait",
    [10**400, -(10**400)],
    ids=["huge", "hugely-negative"],
)
def test_a_wait_no_float_holds_is_invalid_params_not_a_crash(
    stack: HandleStack, wait: float
) -> None:
    # JSON numbers have no bound: one past a float's range is the client's mistake (-32602),
    # never an OverflowError answered 500.
    task_id = started(stack, "archive", {"name": "x"})
    huge = stack.call("task_status", {"taskId": task_id, "waitSeconds": wait})
    assert huge.status == 200
    assert stack.client.error(huge)["code"] == -32602
    assert "waitSeconds" in stack.client.error(huge)["message"]


# -- failed and cancelled -------------------------------------------------------------------------


def test_a_failed_task_is_a_tool_error_with_the_json_rpc_code_and_message(
    stack: HandleStack,
) -> None:
    task_id = started(stack, "broken", {})
    stack.run_leg(task_id)
    failed = status(stack, task_id)
    assert failed["isError"] is True
    assert "The upstream service refused the job." in text(failed)
    assert "-32603" in text(failed)
    assert failed["structuredContent"]["error"]["code"] == -32603
    assert failed["structuredContent"]["status"] == "failed"


def test_cancel_wins_and_task_status_says_so(stack: HandleStack) -> None:
    task_id = started(stack, "archive", {"name": "c"})
    cancelled = stack.result("task_cancel", {"taskId": task_id})
    assert "is cancelled" in text(cancelled)
    stack.run_leg(task_id)  # the leg runs after the cancel: it does not undo it
    after = status(stack, task_id)
    assert after["isError"] is True
    assert "was cancelled" in text(after)
    assert after["structuredContent"]["status"] == "cancelled"
    again = stack.result("task_cancel", {"taskId": task_id})
    assert "is cancelled" in text(again)


def test_cancelling_a_finished_task_says_there_was_nothing_to_cancel(stack: HandleStack) -> None:
    task_id = started(stack, "archive", {"name": "d"})
    stack.run_leg(task_id)
    late = stack.result("task_cancel", {"taskId": task_id})
    assert "already ended (completed)" in text(late)
    assert stack.record(task_id).status == "completed"


# -- questions --------------------------------------------------------------------------------


def test_a_question_is_asked_through_the_clients_elicitation_on_task_status(
    stack: HandleStack,
) -> None:
    task_id = started(stack, "greet_later", {}, capabilities=ELICITING)
    stack.run_leg(task_id)  # parks: asks "What is your name?"
    asked = status(stack, task_id, capabilities=ELICITING)
    # A multi round-trip round on the task_status call itself, with the task's own question.
    assert asked["resultType"] == "input_required"
    assert asked["inputRequests"] == stack.record(task_id).input_requests
    assert list(asked["inputRequests"]) == ["name"]
    answered = status(
        stack,
        task_id,
        capabilities=ELICITING,
        inputResponses={"name": {"action": "accept", "content": {"name": "Ada"}}},
        requestState=asked["requestState"],
    )
    # The answer went to the task (tasks/update's path): it resumed.
    assert answered["structuredContent"]["status"] == "working"
    assert stack.record(task_id).answers == {
        "name": {"action": "accept", "content": {"name": "Ada"}}
    }
    assert len(stack.runner.named("resume")) == 1
    stack.run_leg(task_id)
    assert text(status(stack, task_id, capabilities=ELICITING)) == "Hello, Ada!"


def test_a_sampling_question_is_asked_through_the_clients_sampling(stack: HandleStack) -> None:
    sampling = {"sampling": {}}
    task_id = started(stack, "ask_model", {}, capabilities=sampling)
    stack.run_leg(task_id)
    asked = status(stack, task_id, capabilities=sampling)
    assert asked["inputRequests"]["capital"]["method"] == "sampling/createMessage"
    reply = {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}
    status(
        stack,
        task_id,
        capabilities=sampling,
        inputResponses={"capital": reply},
        requestState=asked["requestState"],
    )
    stack.run_leg(task_id)
    assert text(status(stack, task_id, capabilities=sampling)) == "The model said: Paris"


def test_two_status_calls_racing_answer_the_question_once(stack: HandleStack) -> None:
    task_id = started(stack, "greet_later", {}, capabilities=ELICITING)
    stack.run_leg(task_id)
    first = status(stack, task_id, capabilities=ELICITING)
    second = status(stack, task_id, capabilities=ELICITING)  # both asked the same question
    for round_, name in ((first, "Ada"), (second, "Grace")):
        answered = status(
            stack,
            task_id,
            capabilities=ELICITING,
            inputResponses={"name": {"action": "accept", "content": {"name": name}}},
            requestState=round_["requestState"],
        )
        assert answered["structuredContent"]["status"] == "working"
    # First answer wins. The late update may resume again (the domain retries a resume that
    # may have failed), but its token works once: the task's one wait ended once.
    assert stack.record(task_id).answers["name"]["content"] == {"name": "Ada"}
    assert len(set(stack.runner.named("resume"))) == 1
    assert len(stack.runner.used_tokens) == 1
    stack.run_leg(task_id)
    assert text(status(stack, task_id)) == "Hello, Ada!"


def test_a_sealed_round_cannot_answer_another_tasks_question(stack: HandleStack) -> None:
    task_id = started(stack, "greet_later", {}, capabilities=ELICITING)
    other_id = started(stack, "greet_later", {}, capabilities=ELICITING)
    stack.run_leg(task_id)
    stack.run_leg(other_id)
    asked = status(stack, task_id, capabilities=ELICITING)
    replayed = stack.call(
        "task_status",
        {"taskId": other_id},
        capabilities=ELICITING,
        inputResponses={"name": {"action": "accept", "content": {"name": "Eve"}}},
        requestState=asked["requestState"],
    )
    assert stack.client.error(replayed)["code"] == -32602
    assert stack.record(other_id).answers == {}


def test_without_elicitation_the_question_comes_back_as_text_and_task_answer_takes_it(
    stack: HandleStack,
) -> None:
    task_id = started(stack, "greet_later", {}, capabilities=NOTHING)
    stack.run_leg(task_id)
    asked = status(stack, task_id, capabilities=NOTHING)
    assert asked["resultType"] == "complete"
    words = text(asked)
    assert "What is your name?" in words
    assert '"required": ["name"]' in words  # the requested schema, as JSON
    assert next_call(words) == (
        "task_answer",
        {"taskId": task_id, "answers": {"name": {"name": "<string>"}}},
    )
    assert asked["structuredContent"]["status"] == "input_required"
    # A wrong answer: -32602 naming the field, and nothing stored.
    wrong = stack.call(
        "task_answer", {"taskId": task_id, "answers": {"name": {"name": 42}}}, capabilities=NOTHING
    )
    error = stack.client.error(wrong)
    assert error["code"] == -32602
    assert "'name'" in error["message"]
    assert "field 'name'" in error["message"]
    assert stack.record(task_id).answers == {}
    missing = stack.call(
        "task_answer", {"taskId": task_id, "answers": {"name": {}}}, capabilities=NOTHING
    )
    assert "field 'name' is required" in stack.client.error(missing)["message"]
    assert stack.record(task_id).answers == {}
    # The right one is recorded (an accepted form) and the task resumes.
    right = stack.result(
        "task_answer",
        {"taskId": task_id, "answers": {"name": {"name": "Ada"}}},
        capabilities=NOTHING,
    )
    assert "Recorded 1 answer(s)" in text(right)
    assert next_call(text(right)) == ("task_status", {"taskId": task_id, "waitSeconds": 2})
    assert stack.record(task_id).answers == {
        "name": {"action": "accept", "content": {"name": "Ada"}}
    }
    stack.run_leg(task_id)
    assert text(status(stack, task_id, capabilities=NOTHING)) == "Hello, Ada!"


def test_task_answer_again_after_its_resume_failed_resumes_the_task(stack: HandleStack) -> None:
    # Given a task_answer whose answer was recorded, but whose resume of the execution failed
    # (the function crashed there, or Step Functions stayed busy)
    task_id = started(stack, "greet_later", {}, capabilities=NOTHING)
    stack.run_leg(task_id)
    token = stack.record(task_id).task_token
    stack.runner.failing.add("resume")
    failed = stack.call("task_answer", {"taskId": task_id, "answers": {"name": {"name": "Ada"}}})
    assert "error" in failed.json
    assert stack.record(task_id).input_requests == {}
    # When the client calls it again, as it should: nothing is open any more
    again = stack.result("task_answer", {"taskId": task_id, "answers": {"name": {"name": "Ada"}}})
    # Then the execution is resumed this time (else it waits on its token for good)
    assert stack.runner.named("resume") == [token, token]
    assert "task_status" in text(again)
    stack.run_leg(task_id)
    assert text(status(stack, task_id)) == "Hello, Ada!"


def test_task_answer_can_decline_and_says_which_keys_are_not_open(stack: HandleStack) -> None:
    task_id = started(stack, "greet_later", {}, capabilities=NOTHING)
    stack.run_leg(task_id)
    declined = stack.result(
        "task_answer",
        {"taskId": task_id, "answers": {"name": {"action": "decline"}, "nope": {"x": 1}}},
    )
    assert "'nope'" in text(declined)
    stack.run_leg(task_id)
    assert text(status(stack, task_id)) == "No name given."
    late = stack.result("task_answer", {"taskId": task_id, "answers": {"name": {"name": "B"}}})
    assert text(late) == "No name given."  # nothing open: the task's outcome


def test_a_sampling_question_without_sampling_is_answered_as_text(stack: HandleStack) -> None:
    task_id = started(stack, "ask_model", {}, capabilities={"sampling": {}})
    stack.run_leg(task_id)
    asked = status(stack, task_id, capabilities=NOTHING)  # this request declares no sampling
    assert "What is the capital of France?" in text(asked)
    stack.result("task_answer", {"taskId": task_id, "answers": {"capital": "Paris"}})
    stack.run_leg(task_id)
    assert text(status(stack, task_id)) == "The model said: Paris"


# -- the same guarantees as tasks --------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("task_status", {}),
        ("task_cancel", {}),
        ("task_answer", {"answers": {"name": {"name": "Eve"}}}),
    ],
)
def test_another_callers_handle_reads_as_missing(
    stack: HandleStack, tool: str, arguments: dict[str, Any]
) -> None:
    task_id = started(stack, "greet_later", {})
    stack.run_leg(task_id)
    foreign = stack.client.error(
        stack.call(tool, {"taskId": task_id, **arguments}, principal=OTHER)
    )
    unknown = stack.client.error(stack.call(tool, {"taskId": "0" * 32, **arguments}))
    assert foreign == unknown
    assert foreign["code"] == -32602
    record = stack.record(task_id)
    assert (record.status, record.answers) == ("input_required", {})


def test_nothing_of_the_input_the_answers_or_the_result_is_logged(
    stack: HandleStack, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    task_id = started(stack, "archive", {"name": "secret-input-7"}, capabilities=NOTHING)
    status(stack, task_id)
    stack.run_leg(task_id)
    status(stack, task_id)
    asking = started(stack, "greet_later", {}, capabilities=NOTHING)
    stack.run_leg(asking)
    stack.result("task_answer", {"taskId": asking, "answers": {"name": {"name": "secret-7"}}})
    stack.run_leg(asking)
    status(stack, asking)
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "secret-input-7" not in logged
    assert "secret-7" not in logged


# -- settings, overrides, names ----------------------------------------------------------------


def test_with_handles_off_a_task_only_tool_is_refused_with_32021() -> None:
    stack = HandleStack(enabled=False)
    response = stack.call("archive", {"name": "a"})
    assert response.status == 400
    error = stack.client.error(response)
    assert error["code"] == -32021
    assert error["data"] == {
        "requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    }
    # An optional tool runs inline, however long it is said to be.
    inline = stack.result("build_report", {"rows": 2})
    assert inline["structuredContent"] == {"rows": 2, "summary": "2 rows counted"}
    assert stack.store.all_records() == []
    assert "task_status" not in listed(stack, NOTHING)


def test_a_tools_override_keeps_the_refusal_with_handles_on(stack: HandleStack) -> None:
    response = stack.call("refusing", {})
    assert stack.client.error(response)["code"] == -32021
    assert stack.store.all_records() == []


def test_a_tools_override_gives_handles_where_the_deployment_turned_them_off() -> None:
    toolset = ToolSet(name="t")

    @toolset.tool(task=TaskPolicy.REQUIRED, handles=True)
    def keep(name: str) -> str:
        """Keeps something."""
        return name

    @toolset.tool(task=TaskPolicy.REQUIRED)
    def other(name: str) -> str:
        """Another task-only tool."""
        return name

    stack = HandleStack(toolset=toolset, enabled=False)
    assert stack.result("keep", {"name": "x"})["structuredContent"]["status"] == "working"
    assert stack.client.error(stack.call("other", {"name": "x"}))["code"] == -32021
    assert "task_status" in listed(stack, NOTHING)


def test_a_prefix_names_the_handle_tools() -> None:
    stack = HandleStack(prefix="jobs_")
    names = list(listed(stack, NOTHING))[-3:]
    assert names == ["jobs_task_status", "jobs_task_answer", "jobs_task_cancel"]
    task_id = started(stack, "archive", {"name": "p"})
    assert next_call(text(stack.result("jobs_task_status", {"taskId": task_id}))) == (
        "jobs_task_status",
        {"taskId": task_id, "waitSeconds": 2},
    )
    assert stack.client.error(stack.call("task_status", {"taskId": task_id}))["code"] == -32602


def test_startup_refuses_a_handle_tool_that_clashes_with_a_server_tool() -> None:
    toolset = ToolSet(name="clash")

    @toolset.tool(task=TaskPolicy.REQUIRED)
    def task_status(task: str) -> str:
        """A server tool with a handle tool's name."""
        return task

    with pytest.raises(ToolDefinitionError, match=r"'task_status'.*MCP_TASKS_HANDLE_PREFIX"):
        HandleStack(toolset=toolset)
    HandleStack(toolset=toolset, prefix="jobs_")  # a prefix resolves it
    HandleStack(toolset=toolset, enabled=False)  # no tool answers with a handle: no clash


def test_an_invalid_prefix_is_refused_at_startup() -> None:
    with pytest.raises(ToolDefinitionError, match="MCP_TASKS_HANDLE_PREFIX"):
        HandleStack(prefix="bad prefix ")


def test_the_settings_read_the_handle_variables() -> None:
    defaults = Settings.from_env({})
    assert (defaults.task_handles, defaults.handle_tool_prefix, defaults.inline_budget_ms) == (
        True,
        "",
        20_000,
    )
    chosen = Settings.from_env(
        {
            "MCP_TASKS_HANDLES": "off",
            "MCP_TASKS_HANDLE_PREFIX": "jobs_",
            "MCP_TASKS_INLINE_BUDGET_MS": "5000",
        }
    )
    assert (chosen.task_handles, chosen.handle_tool_prefix, chosen.inline_budget_ms) == (
        False,
        "jobs_",
        5000,
    )
    with pytest.raises(ValueError, match="MCP_TASKS_HANDLES"):
        Settings.from_env({"MCP_TASKS_HANDLES": "maybe"})


def test_a_negative_expected_duration_is_refused_at_registration() -> None:
    with pytest.raises(ToolDefinitionError, match="expected_seconds"):
        ToolSet().tool(task=TaskPolicy.OPTIONAL, expected_seconds=-1)(lambda: None)


def test_handles_are_built_for_the_servers_tool_set() -> None:
    codec = RequestStateCodec(SECRET)
    handles = TaskHandles(tools, HandleStack().service, state_codec=codec)
    with pytest.raises(ValueError, match="tool set"):
        McpServer(ToolSet(name="other"), state_codec=codec, handles=handles)


# -- the published schema ---------------------------------------------------------------------


def test_every_handle_shape_matches_the_published_schema(stack: HandleStack) -> None:
    from support.schemas import MCP

    assert_valid = MCP.assert_valid

    listing = stack.client.result("tools/list", capabilities=NOTHING)
    assert_valid(listing, "ListToolsResult")
    shapes = []
    task_id = started(stack, "greet_later", {}, capabilities=ELICITING)
    shapes.append(status(stack, task_id, capabilities=ELICITING))  # working
    stack.run_leg(task_id)
    asked = status(stack, task_id, capabilities=ELICITING)
    assert_valid(asked, "InputRequiredResult")
    shapes.append(status(stack, task_id, capabilities=NOTHING))  # the question as text
    shapes.append(
        stack.result("task_answer", {"taskId": task_id, "answers": {"name": {"name": "A"}}})
    )
    stack.run_leg(task_id)
    shapes.append(status(stack, task_id))  # completed: the tool's result
    failing = started(stack, "broken", {})
    stack.run_leg(failing)
    shapes.append(status(stack, failing))
    shapes.append(stack.result("task_cancel", {"taskId": started(stack, "archive", {"name": "z"})}))
    shapes.append(stack.result("archive", {"name": "y"}))  # the handle itself
    for shape in shapes:
        assert_valid(shape, "CallToolResult")


# -- the conformance fixtures -------------------------------------------------------------------


def test_the_conformance_fixture_the_suite_expects_to_refuse_still_refuses() -> None:
    from mcp_tasks_aws.toolsets.conformance import tools as conformance_tools

    stack = HandleStack(toolset=conformance_tools)
    response = stack.call("failing_job", {}, capabilities={})
    assert response.status == 400
    error = stack.client.error(response)
    assert error["code"] == -32021
    assert error["data"] == {
        "requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    }
    # The suite's other task-only fixtures answer a client without tasks with a handle.
    handled = stack.result("confirm_delete", {"filename": "a.txt"}, capabilities={})
    assert handled["structuredContent"]["status"] == "working"
    # slow_compute declares no duration: still inline for clients without tasks.
    inline = stack.result("slow_compute", {"seconds": 0, "label": "x"}, capabilities={})
    assert text(inline) == "Computed x after 0.0s."


def test_a_tool_with_a_prelude_asks_inline_first_then_answers_with_a_handle() -> None:
    from mcp_tasks_aws.toolsets.conformance import tools as conformance_tools

    stack = HandleStack(toolset=conformance_tools)
    asked = stack.result("test_tool_with_task", {}, capabilities=ELICITING)
    assert asked["resultType"] == "input_required"  # before any task exists
    assert stack.store.all_records() == []
    handle = stack.result(
        "test_tool_with_task",
        {},
        capabilities=ELICITING,
        inputResponses={"user_name": {"action": "accept", "content": {"name": "Alice"}}},
        requestState=asked["requestState"],
    )
    task_id = handle["structuredContent"]["taskId"]
    assert stack.record(task_id).answers == {
        "user_name": {"action": "accept", "content": {"name": "Alice"}}
    }
    stack.run_leg(task_id)
    assert "Alice" in text(status(stack, task_id))


def test_answers_too_large_are_refused_before_anything_is_read(stack: HandleStack) -> None:
    task_id = started(stack, "greet_later", {})
    stack.run_leg(task_id)
    huge = {"name": {"name": "x" * 200_000}}
    response = stack.call("task_answer", {"taskId": task_id, "answers": huge})
    assert "too large" in stack.client.error(response)["message"]
    assert stack.record(task_id).answers == {}
