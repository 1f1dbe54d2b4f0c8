"""Tasks whose work is a declared workflow's execution (a managed Standard state machine).

A tool declared with a Standard state machine target has no leg in this server. Creating its
task starts the machine's execution, named after the task (so a retried start is idempotent),
and the record holds that execution's ARN (`TaskRecord.execution_arn`) from its first write.
From then on the execution drives the task through three doors, each one move of the
transition table (`tasks.transitions`), so a task cancelled meanwhile stays cancelled:

- **ask** (`WorkflowDoors.ask`, the AskFunction a state calls with `.waitForTaskToken`): the
  move `park` stores the question under a fresh key (`ask_key`: one per leg) with the state's
  task token. `tasks/update` (either era) records the answer, and the service then sends it
  as that state's output (`resumption`); a declined or cancelled elicitation fails the state
  with a named error instead (`DECLINED`, `CANCELLED`), so its Catch decides what follows.
- **report** (`WorkflowDoors.report`): `report` sets the statusMessage (progress numbers
  first, as `ctx.report` writes them).
- **settle** (`tasks.runs.workflow.WorkflowRun.settle_lost`, the reconciler on the
  execution's status-change event): SUCCEEDED `complete`s the task with the output as the
  declaration maps it; FAILED, TIMED_OUT and ABORTED `lose` it with a JSON-RPC error carrying
  the execution's error and cause, or complete it with a tool error where the declaration
  names that error.

This module holds the workflow's side of its task (the doors, the capability, the start, the
resume and the release); `tasks.runs.workflow` is the run that the use cases, the reconciler
and the sweeper ask.

Only the task's own execution may use the doors: every call names its execution, which must
be the one on the record, and carries the task's *capability* (`DoorKeys`): a token sealed to
that execution under the deployment's state secret, which the start puts in the execution's
input (`CAPABILITY_KEY`; a state passes `$$.Execution.Input.mcpTaskCapability`). Whoever else
may invoke the AskFunction cannot forge one for a task id it learnt.

Starting (`start_execution`): the execution is named after the task, and a start with the same
name and input is idempotent, so a start that failed is tried again before anything is
concluded; if every try failed, `DescribeExecution` says whether one landed though its answer
was lost (the task runs: it is acknowledged), or not (the task fails). If even that cannot be
read, the task stays `working` and the sweeper (`tasks.sweep`) settles it later the same way.

Timeouts: a waiting state whose `TimeoutSeconds` (or heartbeat) passes leaves its question on
the task (nothing tells this server). A re-ask from the execution (the usual Catch of
`States.Timeout`) finds that question open, probes its token (`Workflows.still_waiting`) and,
the token being dead, replaces it; while it lives, the re-ask is refused (`McpAskPending`). An
answer that reaches a dead token is recorded but not delivered: the task says so in its
statusMessage (`resume`), and the workflow's Catch decides what follows.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

from mcp_tasks_aws.protocol.progress import format_status
from mcp_tasks_aws.protocol.request_state import SecretSource
from mcp_tasks_aws.protocol.sealing import Sealer, Unsealable
from mcp_tasks_aws.tasks import transitions
from mcp_tasks_aws.tasks.exceptions import TargetUnavailable
from mcp_tasks_aws.tasks.model import TaskRecord, now_ms
from mcp_tasks_aws.tasks.ports import TaskStore, Workflows
from mcp_tasks_aws.tools.journal import ELICIT, SAMPLE

logger = logging.getLogger(__name__)

ASK_PREFIX: Final = "ask-"
DECLINED: Final = "McpDeclined"
"""The error a state's `.waitForTaskToken` fails with when the user declined the elicitation."""
CANCELLED: Final = "McpCancelled"
"""... when the user dismissed it without choosing (elicitation action `cancel`)."""
TASK_CANCELLED: Final = "McpTaskCancelled"
"""... when the task was cancelled while the state waited (the execution is stopped too)."""
ASKABLE: Final = {ELICIT: "elicitation", SAMPLE: "sampling"}
"""What a workflow may ask, and the client capability each needs."""
_PARK_ROUNDS: Final = 5
_REPORT_ROUNDS: Final = 2
CAPABILITY_KEY: Final = "mcpTaskCapability"
"""The execution input's member holding the task's capability (`DoorKeys`); reserved."""
MAX_EXECUTION_S: Final = 366 * 24 * 3600
"""A Standard execution runs at most a year: how long a capability of an unlimited task lasts."""
START_RETRY_DELAYS_S: Final = (0.2,)
"""Pauses between tries of a start that failed (the same name and input: idempotent)."""
REFUSED_STARTS: Final = frozenset(
    {
        "StateMachineDoesNotExist",
        "StateMachineDeleting",
        "AccessDeniedException",
        "InvalidArn",
        "InvalidName",
        "InvalidExecutionInput",
        "ValidationException",
    }
)
"""Codes of a start the machine refused outright: nothing ran, and a retry would not run it."""
STALE_ANSWER_MESSAGE: Final = (
    "The workflow stopped waiting for this answer before it arrived (its question timed out): "
    "the answer was recorded but not delivered"
)


def execution_arn_for(machine_arn: str, name: str) -> str:
    """The ARN of `machine_arn`'s execution called `name` (what StartExecution answers)."""
    base = machine_arn.replace(":stateMachine:", ":execution:", 1)
    return f"{base}:{name}"


def ask_key(leg: int) -> str:
    """The key of the question parked at `leg` (the leg after the park): fresh per question,
    and found again by a retried `tasks/update` after a resume that failed."""
    return f"{ASK_PREFIX}{leg}"


class DoorKeys:
    """Per-task capabilities: a token sealed to one execution (its ARN names the task and the
    machine) under a key derived from the deployment's state secret for this use alone, bound
    to the deployment (`audience`) and valid while the task lives. The task service issues
    it into the execution's input; the AskFunction opens it on every ask and report."""

    KIND: Final = "door"

    def __init__(
        self,
        secrets: SecretSource | bytes,
        *,
        audience: str = "",
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self._sealer = Sealer(secrets, "workflow-doors", lambda: clock() / 1000, audience=audience)
        self._clock = clock

    def issue(self, record: TaskRecord) -> str:
        """The capability of `record`'s execution, valid until the task expires."""
        if record.execution_arn is None:
            raise ValueError(f"task {record.task_id} runs no workflow")
        expires = record.expires_at or self._clock() // 1000 + MAX_EXECUTION_S
        return self._sealer.seal(self.KIND, {"x": record.execution_arn}, expires_at=expires)

    def opens(self, execution_arn: str, capability: Any) -> bool:
        """Whether `capability` was issued to `execution_arn` and is still valid."""
        if not isinstance(capability, str):
            return False
        try:
            sealed = self._sealer.open(self.KIND, capability)
        except Unsealable:
            return False
        return sealed.get("x") == execution_arn


def start_execution(
    flows: Workflows,
    machine_arn: str,
    record: TaskRecord,
    payload: dict[str, Any],
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """Start `record`'s execution, learning the truth when a start fails to answer.

    True: it runs (started now, or it had landed though its answer was lost). False: nobody
    can tell yet (every start and the describe failed): the task stays working and the
    sweeper settles it. Raises what the start raised when it certainly did not start (the
    machine refused it, or the execution does not exist after every try).
    """
    execution_arn = record.execution_arn
    assert execution_arn is not None
    failure: Exception | None = None
    for delay in (*START_RETRY_DELAYS_S, None):
        try:
            flows.start(machine_arn, record.task_id, payload)
            if failure is not None:
                logger.warning("task %s: its workflow started on a second try", record.task_id)
            return True
        except TargetUnavailable as exc:
            if exc.code in REFUSED_STARTS:
                raise
            failure = exc
        except Exception as exc:
            failure = exc
        if delay is not None:
            sleep(delay)
    try:
        status = flows.describe(execution_arn)
    except Exception:
        logger.error(
            "task %s: its workflow's start failed, and whether it landed cannot be read; it "
            "stays working until the sweeper learns it",
            record.task_id,
            exc_info=True,
        )
        return False
    if status is not None:
        logger.warning(
            "task %s: its workflow's start failed to answer, but the execution exists (%s)",
            record.task_id,
            status,
        )
        return True
    assert failure is not None  # every try failed
    raise failure


def resume(flows: Workflows, record: TaskRecord) -> bool:
    """Send the answer to the workflow's waiting state (`resumption`); False when its token
    is dead (the state timed out, or was resumed already)."""
    assert record.task_token is not None
    how, value = resumption(record)
    if how == "refuse":
        error, cause = value
        return flows.refuse(record.task_token, error, cause)
    return flows.answer(record.task_token, value)


def release(flows: Workflows, record: TaskRecord, execution_arn: str) -> None:
    """Stop a cancelled (or refused) workflow task's execution. A state waiting for an answer
    is also failed (`TASK_CANCELLED`): Step Functions aborts a waiting state on stop, an
    emulator may not, and on AWS the token is stale by then (reported, not raised). The task
    is over for good already: a failure here is the caller's to log (`TaskService`), and a
    retried cancel tries again."""
    flows.stop(execution_arn)
    if record.waiting_on_token and record.task_token is not None:
        flows.refuse(record.task_token, TASK_CANCELLED, transitions.CANCELLED_MESSAGE)


def resumption(record: TaskRecord) -> tuple[Literal["answer", "refuse"], Any]:
    """How to resume a workflow task whose question is answered: the state's output
    (`"answer"`, the answer as recorded), or the error it fails with (`"refuse"`,
    `(error, cause)`) for a declined or cancelled elicitation."""
    answer = record.answers.get(ask_key(record.leg))
    if isinstance(answer, dict) and answer.get("action") in ("decline", "cancel"):
        if answer["action"] == "decline":
            return "refuse", (DECLINED, "The user declined the request")
        return "refuse", (CANCELLED, "The user dismissed the request")
    return "answer", answer


class AskRefused(Exception):
    """A workflow's ask or report cannot be served; `error` is the name the calling state
    sees (its Catch can match it), the message says why (no user data)."""

    def __init__(self, error: str, message: str) -> None:
        super().__init__(message)
        self.error = error


class WorkflowDoors:
    """What a workflow's states may do to their task: ask the user, report progress.

    Every call carries the task's capability (`DoorKeys`), checked before the task is read;
    `workflows` probes an open question's token when the execution asks again."""

    def __init__(
        self,
        store: TaskStore,
        keys: DoorKeys,
        workflows: Workflows | None = None,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.store = store
        self.keys = keys
        self.workflows = workflows
        self.clock = clock

    def _own(self, task_id: str, execution_arn: str, capability: Any) -> TaskRecord:
        # The capability first: a caller without one learns nothing, not even whether the
        # task exists, and costs no read.
        if not self.keys.opens(execution_arn, capability):
            raise AskRefused("McpUnknownTask", f"No workflow task {task_id} for this execution")
        record = self.store.get(task_id)
        if record is None or record.execution_arn is None:
            raise AskRefused("McpUnknownTask", f"No workflow task {task_id}")
        if record.execution_arn != execution_arn:
            raise AskRefused("McpUnknownTask", f"Task {task_id} is not this execution's")
        return record

    def _question_lives(self, record: TaskRecord) -> bool:
        """Whether the open question's waiting state still waits (its token is alive).

        Only a dead token (its state timed out: `Workflows.still_waiting` is False) lets a
        new question replace it; a question without a token, or no way to probe it, lives.
        """
        if record.task_token is None or self.workflows is None:
            return True
        return self.workflows.still_waiting(record.task_token)

    def ask(
        self,
        task_id: str,
        execution_arn: str,
        task_token: str,
        request: Mapping[str, Any],
        capability: Any = None,
    ) -> str:
        """Park the task `input_required` with `request` (`{method, params}`), holding the
        state's token; returns the question's key. A task that ended (cancelled included)
        refuses (`McpTaskEnded`); one already waiting on a question refuses too while that
        question's state still waits (one question at a time: a second would lose the first
        one's token), and has it replaced once that state timed out (its token is dead: the
        re-ask of a Catch on `States.Timeout`)."""
        method = request.get("method")
        params = request.get("params")
        if method not in ASKABLE or not isinstance(params, dict):
            raise AskRefused(
                "McpInvalidRequest",
                f"A workflow asks with method {' or '.join(ASKABLE)} and params (an object)",
            )
        for _ in range(_PARK_ROUNDS):
            record = self._own(task_id, execution_arn, capability)
            if record.is_terminal or record.is_expired(self.clock()):
                raise AskRefused("McpTaskEnded", f"Task {task_id} has ended ({record.status})")
            if record.input_requests and self._question_lives(record):
                raise AskRefused("McpAskPending", f"Task {task_id} is waiting on a question")
            # `park` replaces the open requests and the token: the stale question's key is no
            # longer outstanding, so a late answer to it is an unknown key (ignored).
            needed = ASKABLE[str(method)]  # the client's, not the task's door capability
            if needed not in record.capabilities:
                raise AskRefused(
                    "McpUnsupported", f"The client of task {task_id} does not support {needed}"
                )
            key = ask_key(record.leg + 1)
            guard, changes = transitions.park(
                record.leg,
                {key: {"method": method, "params": params}},
                task_token,
                {},
                self.clock(),
            )
            parked = self.store.apply(task_id, guard, changes)
            if parked is not None and parked.changed:
                return key
            # Refused: the leg moved (a report does not move it) or the task ended: look again.
        raise AskRefused("McpBusy", f"Task {task_id} kept changing; ask again")

    def report(
        self,
        task_id: str,
        execution_arn: str,
        message: str,
        progress: float | None = None,
        total: float | None = None,
        capability: Any = None,
    ) -> bool:
        """Set the task's statusMessage (with progress numbers); False if the task has ended
        (the report is dropped: cancellation wins). ValueError for numbers that are not."""
        status = format_status(message[:1000], progress, total)
        for _ in range(_REPORT_ROUNDS):
            record = self._own(task_id, execution_arn, capability)
            if record.input_requests or record.is_terminal:
                # A question is open (another branch asked): `report` would read as working
                # and the answer's move starts from input_required. The fence on the leg
                # keeps a report read before a park from landing after it.
                return False
            guard, changes = transitions.report(record.leg, status, self.clock())
            outcome = self.store.apply(task_id, guard, changes)
            if outcome is None or outcome.changed:
                return outcome is not None
            # Refused: the leg moved (the sweeper took the task out of its index, or a park
            # landed) or the task ended: look again.
        return False
