"""Step Functions as the system meets it: Standard executions of the task runner
(`infra/task_runner.asl.json`) and of a declared workflow, task tokens, timeouts, and the
status-change events EventBridge delivers.

moto runs executions in threads of its own, so here the executions are simulated, behind the
same API the adapters call (`StartExecution`, `SendTaskSuccess`/`Failure`/`Heartbeat`,
`StopExecution`, `DescribeExecution`), with AWS's semantics:

- `StartExecution` is idempotent by name: the same name and input of a running execution
  answers it again; anything else with that name is `ExecutionAlreadyExists`;
- a Task state with `.waitForTaskToken` gets a fresh token each time it is entered, a retry
  included; the state ends with the first `SendTaskSuccess`/`SendTaskFailure` of its token,
  its timeout (`States.Timeout`), a function error of the invoke that carried the token, or a
  stop; any later use of the token is `TaskTimedOut`, `TaskDoesNotExist` or `InvalidToken`;
- the state invokes its function synchronously; the invoke meets Lambda service faults
  (`Lambda.ServiceException`, `Lambda.SdkClientException`, ...) before or after the function
  ran (the answer lost), which the state's `Retry` retries: after such a fault the first
  function may still be running with a token no one waits for any more;
- a function error (the worker crashed, timed out, raised) fails the state: the runner's
  `Catch` ends the execution FAILED;
- `StopExecution` aborts at once, waiting states included (AWS does; moto does not);
- every end is a status-change event; the rules of template.yaml send the runner's FAILED,
  TIMED_OUT and ABORTED, and every end of a declared workflow, to the reconcile function
  (`simulation.aws_lambda`: at least once, late, in any order).

Each Task state's invoke is an action of the run (`pending`, `act`): it happens when the seed
says so, meeting the fault the seed chooses.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from botocore.exceptions import ClientError

from simulation.aws_lambda import SimLambda
from simulation.moto_aws import PROJECT_ROOT
from simulation.scheduler import Process
from simulation.tools import ANSWER_SCHEMA

REGION_ACCOUNT = "us-east-1:123456789012"
TASK_MACHINE = f"arn:aws:states:{REGION_ACCOUNT}:stateMachine:mcp-tasks-sim"
WORKFLOW_MACHINE = f"arn:aws:states:{REGION_ACCOUNT}:stateMachine:sim-approval"


class Retrier(NamedTuple):
    """A Task state's `Retry` (its first retrier: the errors, how often, how long between)."""

    errors: frozenset[str]
    max_attempts: int
    interval_s: float
    backoff_rate: float


def _run_leg_retrier() -> Retrier:
    """RunLeg's `Retry`, read from the task runner's definition as deployed."""
    definition = json.loads(TASK_RUNNER_ASL.read_text())
    retriers = definition["States"]["RunLeg"].get("Retry") or []
    if not retriers:
        return Retrier(frozenset(), 0, 1, 2)
    first = retriers[0]
    return Retrier(
        frozenset(first["ErrorEquals"]),
        int(first.get("MaxAttempts", 3)),
        float(first.get("IntervalSeconds", 1)),
        float(first.get("BackoffRate", 2)),
    )


TASK_RUNNER_ASL = PROJECT_ROOT / "infra" / "task_runner.asl.json"
RUN_LEG_RETRY = _run_leg_retrier()
WORKFLOW_RETRY = Retrier(frozenset({"Lambda.TooManyRequestsException"}), 3, 1, 2)
"""The simulated declared workflow's states retry a throttled invoke only."""
ASK_TIMEOUT_S = 900
"""The declared workflow's question waits this long (`TimeoutSeconds`), then asks again."""
ASKS = 2
"""Times the workflow asks before it gives up (its `Catch` of `States.Timeout` asks again)."""


def _error(code: str, operation: str, message: str = "simulated") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, operation)


def execution_arn(machine: str, name: str) -> str:
    return f"{machine.replace(':stateMachine:', ':execution:', 1)}:{name}"


@dataclass(eq=False)
class Execution:
    arn: str
    name: str
    machine: str
    input: str
    status: str = "RUNNING"
    state: str = ""
    """The Task state it is in (its invoke pending, or waiting for its token)."""
    waiting: bool = False
    """Invoked: waiting for its token (or, without one, for the invoke to return)."""
    token: str | None = None
    attempt: int = 0
    not_before_ms: int = 0
    timeout_s: int | None = None
    asks: int = 0
    losing: str | None = None
    """The token of an invoke whose answer will be lost (the function runs; when the loss
    comes, the state sees a Lambda service fault and retries)."""
    output: str | None = None
    error: str | None = None
    cause: str | None = None
    data: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        return f"{self.machine.rsplit(':', 1)[-1]}/{self.name[:8]}@{self.state}"


@dataclass
class SimStepFunctions:
    clock: Any
    lambda_: SimLambda
    spawn: Callable[[str, str, Callable[[], Any], Callable[[Process], None]], Process]
    body_of: Callable[[str, dict[str, Any]], Callable[[], Any]]
    executions: dict[str, Execution] = field(default_factory=dict)
    dead_tokens: dict[str, str] = field(default_factory=dict)
    """Token -> why it is dead (`TaskTimedOut`, `TaskDoesNotExist`)."""
    stale_token_uses: int = 0
    answers_lost: int = 0
    """Invokes whose answer was lost while their function ran (the state retried it)."""
    _tokens: Any = field(default_factory=lambda: itertools.count(1))

    # -- the API ----------------------------------------------------------------------------------

    def start_execution(self, stateMachineArn: str, name: str, input: str = "{}") -> dict[str, Any]:
        if stateMachineArn not in (TASK_MACHINE, WORKFLOW_MACHINE):
            raise _error("StateMachineDoesNotExist", "StartExecution")
        arn = execution_arn(stateMachineArn, name)
        existing = self.executions.get(arn)
        if existing is not None:
            if existing.status == "RUNNING" and existing.input == input:
                return {"executionArn": arn, "startDate": 0}
            raise _error("ExecutionAlreadyExists", "StartExecution")
        first = "RunLeg" if stateMachineArn == TASK_MACHINE else "Ask"
        execution = Execution(arn, name, stateMachineArn, input, state=first)
        data = json.loads(input)
        execution.timeout_s = (data.get("leg") or {}).get("timeoutSeconds")
        execution.data = data
        self.executions[arn] = execution
        return {"executionArn": arn, "startDate": 0}

    def describe_execution(self, executionArn: str) -> dict[str, Any]:
        execution = self.executions.get(executionArn)
        if execution is None:
            raise _error("ExecutionDoesNotExist", "DescribeExecution")
        answer: dict[str, Any] = {"executionArn": executionArn, "status": execution.status}
        if execution.output is not None:
            answer["output"] = execution.output
        return answer

    def stop_execution(self, executionArn: str, error: str = "", cause: str = "") -> dict[str, Any]:
        execution = self.executions.get(executionArn)
        if execution is None:
            raise _error("ExecutionDoesNotExist", "StopExecution")
        if execution.status == "RUNNING":
            self._end(execution, "ABORTED", error=error or None, cause=cause or None)
        return {"stopDate": 0}

    def send_task_success(self, taskToken: str, output: str) -> dict[str, Any]:
        execution = self._live(taskToken, "SendTaskSuccess")
        self._close_token(execution, "TaskDoesNotExist")
        self._succeeded(execution, json.loads(output))
        return {}

    def send_task_failure(self, taskToken: str, error: str = "", cause: str = "") -> dict[str, Any]:
        execution = self._live(taskToken, "SendTaskFailure")
        self._close_token(execution, "TaskDoesNotExist")
        self._failed(execution, error or "States.TaskFailed", cause)
        return {}

    def send_task_heartbeat(self, taskToken: str) -> dict[str, Any]:
        self._live(taskToken, "SendTaskHeartbeat")
        return {}

    def _live(self, token: str, operation: str) -> Execution:
        for execution in self.executions.values():
            if execution.status == "RUNNING" and execution.token == token:
                return execution
        self.stale_token_uses += 1
        raise _error(self.dead_tokens.get(token, "InvalidToken"), operation)

    # -- the executions' side: invoking a state's function ----------------------------------------

    def pending(self) -> list[Execution]:
        """Executions whose current state has yet to invoke its function, or whose invoke's
        answer is about to be lost."""
        return [
            e
            for e in self.executions.values()
            if e.status == "RUNNING" and (not e.waiting or e.losing is not None)
        ]

    def act(self, execution: Execution, fault: str = "ok") -> Process | None:
        """The state invokes its function, meeting `fault`: a Lambda service fault before
        anything ran (`throttle`, `5xx`), or after the function started, its answer lost at
        once (`timeout_after`: the state retries at once, while the first copy runs) or later
        (`timeout_later`: another action of the run loses it); or, if such an answer is
        pending, it is lost now."""
        if execution.status != "RUNNING":
            return None
        if execution.losing is not None:
            token, execution.losing = execution.losing, None
            if execution.waiting and execution.token == token:
                self.answers_lost += 1
                self._state_error(execution, token, "Lambda.SdkClientException")
            return None
        if execution.waiting:
            return None
        self.clock.advance_to(execution.not_before_ms)
        function, payload, token = self._invocation(execution)
        execution.waiting = True
        execution.token = token
        if token is not None and self._timeout_of(execution) is not None:
            deadline = self.clock.now_ms() + self._timeout_of(execution) * 1000
            self.clock.at(deadline, lambda: self._timed_out(execution, token))
        if fault in ("throttle", "5xx", "timeout_before"):
            code = (
                "Lambda.TooManyRequestsException"
                if fault == "throttle"
                else "Lambda.ServiceException"
            )
            self._state_error(execution, token, code)
            return None
        if fault == "timeout_later" and token is not None:
            # The function runs; the answer of this invoke will be lost (any time while it
            # runs: the run decides when), and the state will retry.
            execution.losing = token
        body = self.body_of(function, payload)
        process = self.spawn(
            function,
            "worker" if function == "WorkerFunction" else "ask",
            body,
            lambda p: self._returned(execution, token, p),
        )
        lost_now = fault == "timeout_after" or (fault == "timeout_later" and token is None)
        if lost_now and execution.waiting and execution.token == token:
            # The function runs; the answer of this invoke is lost at once: the state retries
            # (after its interval) while the first copy runs.
            self.answers_lost += 1
            self._state_error(execution, token, "Lambda.SdkClientException")
            if execution.status == "RUNNING" and not execution.waiting:
                self.act(execution)
        return process

    def _invocation(self, execution: Execution) -> tuple[str, dict[str, Any], str | None]:
        if execution.machine == TASK_MACHINE:
            token = self._new_token(execution)
            return "WorkerFunction", {"taskId": execution.data["taskId"], "taskToken": token}, token
        base = {
            "taskId": execution.name,
            "executionArn": execution.arn,
            "capability": execution.data.get("mcpTaskCapability"),
        }
        if execution.state == "Ask":
            token = self._new_token(execution)
            request = {
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": "Approve?",
                    "requestedSchema": ANSWER_SCHEMA,
                },
            }
            return (
                "AskFunction",
                {**base, "action": "ask", "taskToken": token, "request": request},
                token,
            )
        return "AskFunction", {**base, "action": "report", "message": "approved: deploying"}, None

    def _new_token(self, execution: Execution) -> str:
        return f"token-{execution.name[:6]}-{next(self._tokens)}"

    def _timeout_of(self, execution: Execution) -> int | None:
        if execution.machine == TASK_MACHINE:
            return execution.timeout_s
        return ASK_TIMEOUT_S if execution.state == "Ask" else None

    # -- how a state ends -------------------------------------------------------------------------

    def _returned(self, execution: Execution, token: str | None, process: Process) -> None:
        """The invoke returned (the function ended): an error fails the state if it still
        waits on this invoke; a success matters only to a state without a token."""
        if execution.status != "RUNNING" or not execution.waiting or execution.token != token:
            return
        if process.state != "done":
            error = process.error
            name = getattr(error, "state_error", None) or "Lambda.Unknown"
            self._close_token(execution, "TaskDoesNotExist")
            self._failed(execution, name, "the function failed")
            return
        if token is None:
            self._succeeded(execution, process.result)

    def _timed_out(self, execution: Execution, token: str) -> None:
        if execution.status == "RUNNING" and execution.token == token:
            self._close_token(execution, "TaskTimedOut")
            self._failed(execution, "States.Timeout", "the state timed out")

    def _state_error(self, execution: Execution, token: str | None, code: str) -> None:
        """A Lambda service fault: retried as the state's Retry says (a fresh token then)."""
        self._close_token(execution, "TaskDoesNotExist")
        retry = RUN_LEG_RETRY if execution.machine == TASK_MACHINE else WORKFLOW_RETRY
        if code in retry.errors and execution.attempt < retry.max_attempts:
            wait_s = retry.interval_s * retry.backoff_rate**execution.attempt
            execution.not_before_ms = self.clock.now_ms() + int(wait_s * 1000)
            execution.attempt += 1
            return
        self._failed(execution, code, "Lambda service fault")

    def _close_token(self, execution: Execution, why: str) -> None:
        if execution.token is not None:
            self.dead_tokens[execution.token] = why
        execution.token = None
        execution.waiting = False
        execution.losing = None

    def _succeeded(self, execution: Execution, output: Any) -> None:
        execution.attempt = 0
        execution.waiting = False
        if execution.machine == TASK_MACHINE:
            leg = output if isinstance(output, dict) else {}
            if leg.get("outcome") == "resume":
                execution.state = "RunLeg"
                execution.timeout_s = leg.get("timeoutSeconds")
                return
            self._end(execution, "SUCCEEDED", output=json.dumps(execution.data))
            return
        if execution.state == "Ask":
            execution.data["approval"] = output
            execution.state = "Report"
            return
        approval = execution.data.get("approval") or {}
        result = {"approved": (approval.get("content") or {}).get("v")}
        self._end(execution, "SUCCEEDED", output=json.dumps(result))

    def _failed(self, execution: Execution, error: str, cause: str) -> None:
        execution.attempt = 0
        execution.waiting = False
        if execution.machine == TASK_MACHINE:
            # Catch States.ALL -> LegFailed (a Fail state).
            self._end(execution, "FAILED", error="LegFailed", cause=cause)
            return
        if execution.state == "Ask" and error in ("McpDeclined", "McpCancelled"):
            self._end(execution, "FAILED", error="Rejected", cause="The approval was refused")
            return
        if execution.state == "Ask" and error == "States.Timeout" and execution.asks + 1 < ASKS:
            execution.asks += 1  # the Catch asks again: the open question is replaced
            return
        self._end(execution, "FAILED", error=error, cause=cause)

    def _end(
        self,
        execution: Execution,
        status: str,
        *,
        output: str | None = None,
        error: str | None = None,
        cause: str | None = None,
    ) -> None:
        self._close_token(execution, "TaskDoesNotExist")
        execution.status, execution.output = status, output
        execution.error, execution.cause = error, cause
        forwarded = execution.machine == WORKFLOW_MACHINE or status in (
            "FAILED",
            "TIMED_OUT",
            "ABORTED",
        )
        if not forwarded:
            return
        detail: dict[str, Any] = {
            "executionArn": execution.arn,
            "stateMachineArn": execution.machine,
            "name": execution.name,
            "status": status,
        }
        if output is not None:
            detail["output"] = output
        if error is not None:
            detail["error"] = error
        if cause is not None:
            detail["cause"] = cause
        event = {
            "source": "aws.states",
            "detail-type": "Step Functions Execution Status Change",
            "detail": detail,
        }
        self.lambda_.enqueue("ReconcileFunction", event, source="eventbridge")
