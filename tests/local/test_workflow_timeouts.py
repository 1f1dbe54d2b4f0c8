"""A declared workflow whose question times out, on the embedded stack (moto runs the machine,
the AskFunction parks and probes, the reconciler settles): the Catch on `States.Timeout`
asks again and its question replaces the stale one; an answer sent to the stale question
while the workflow pauses is recorded, not delivered, and the task says so; the answer to the
new question reaches the workflow and is its output."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcp_tasks_aws.local.stack import EmbeddedStack
from mcp_tasks_aws.tasks.workflow import STALE_ANSWER_MESSAGE
from support.tasks import TaskClient, WorkerDispatch, wait_until

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:ask-twice"


def ask_state(name: str, timeout_s: int, then: str) -> dict[str, Any]:
    return {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
        "Parameters": {
            "FunctionName": "${AskFunctionArn}",
            "Payload": {
                "action": "ask",
                "taskId.$": "$$.Execution.Name",
                "executionArn.$": "$$.Execution.Id",
                "capability.$": "$$.Execution.Input.mcpTaskCapability",
                "taskToken.$": "$$.Task.Token",
                "request": {
                    "method": "elicitation/create",
                    "params": {
                        "mode": "form",
                        "message": name,
                        "requestedSchema": {
                            "type": "object",
                            "properties": {"ok": {"type": "boolean"}},
                            "required": ["ok"],
                        },
                    },
                },
            },
        },
        "ResultPath": "$.answer",
        "TimeoutSeconds": timeout_s,
        "Next": then,
    }


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedStack]:
    folder: Path = tmp_path_factory.mktemp("timeouts")
    ask = ask_state("First?", 1, "Done")
    ask["Catch"] = [{"ErrorEquals": ["States.Timeout"], "ResultPath": None, "Next": "Pause"}]
    definition = {
        "StartAt": "Ask",
        "States": {
            "Ask": ask,
            "Pause": {"Type": "Wait", "Seconds": 3, "Next": "AskAgain"},
            "AskAgain": ask_state("Second?", 60, "Done"),
            "Done": {"Type": "Pass", "OutputPath": "$.answer", "End": True},
        },
    }
    (folder / "ask.asl.json").write_text(json.dumps(definition))
    declaration = {
        "version": 1,
        "tools": [
            {
                "name": "ask_twice",
                "description": "Asks; asks again when the first question times out.",
                "inputSchema": {"type": "object"},
                "target": {"kind": "stateMachine", "arn": MACHINE, "definition": "ask.asl.json"},
            }
        ],
    }
    (folder / "tools.yaml").write_text(yaml.safe_dump(declaration))
    with EmbeddedStack(env={"MCP_TASKS_TOOLS": str(folder / "tools.yaml")}) as running:
        yield running


def question(client: TaskClient, task_id: str, message: str) -> str:
    """The key of the task's open question once it is `message`."""
    waiting = wait_until(
        lambda: (
            (t := client.get(task_id))["status"] == "input_required"
            and [r["params"]["message"] for r in t["inputRequests"].values()] == [message]
            and t
        ),
        timeout=15,
    )
    (key,) = waiting["inputRequests"]
    return str(key)


def finish(client: TaskClient, task_id: str, key: str) -> None:
    client.update(task_id, {key: {"action": "accept", "content": {"ok": True}}})
    done = client.wait_terminal(task_id, timeout=15)
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == '{"action":"accept","content":{"ok":true}}'


def test_the_re_ask_after_a_timeout_replaces_the_stale_question(stack: EmbeddedStack) -> None:
    # Nobody answers the first question; its state times out and the Catch asks again. The
    # old question is still on the task: the re-ask probes its token, finds it dead, and
    # replaces it (it would have been refused McpAskPending, failing the workflow).
    client = TaskClient(stack, WorkerDispatch(stack))
    task_id = client.create("ask_twice", {})
    stale = question(client, task_id, "First?")
    key = question(client, task_id, "Second?")
    assert key != stale
    # A late answer to the stale key is an unknown key now: acknowledged and ignored.
    late = client.update(task_id, {stale: {"action": "accept", "content": {"ok": False}}})
    assert late["result"] == {"resultType": "complete"}
    assert client.get(task_id)["inputRequests"].keys() == {key}
    finish(client, task_id, key)


def test_an_answer_that_reaches_a_timed_out_question_is_reported(stack: EmbeddedStack) -> None:
    client = TaskClient(stack, WorkerDispatch(stack))
    task_id = client.create("ask_twice", {})
    stale = question(client, task_id, "First?")
    time.sleep(1.5)  # the Ask state's TimeoutSeconds passes; its Catch pauses 3 s
    # An answer to the dead question: acknowledged, recorded, not delivered, and said so.
    answered = client.update(task_id, {stale: {"action": "accept", "content": {"ok": False}}})
    assert answered["result"] == {"resultType": "complete"}
    told = wait_until(
        lambda: (t := client.get(task_id)).get("statusMessage") == STALE_ANSWER_MESSAGE and t,
        timeout=5,
    )
    assert told["status"] == "working"
    # The Catch asks again: the new question parks as any other, and its answer is the output.
    finish(client, task_id, question(client, task_id, "Second?"))
