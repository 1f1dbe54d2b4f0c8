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
- **settle** (`tasks.reconcile.settle_workflow_end`, the reconciler on the execution's
  status-change event): SUCCEEDED `complete`s the task with the output as the declaration maps
  it; FAILED, TIMED_OUT and ABORTED `lose` it with a JSON-RPC error carrying the execution's
  error and cause, or complete it with a tool error where the declaration names that error.

Only the task's own execution may use the doors: every call names its execution, which must
be the one on the record.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

from mcp_tasks_aws.protocol.progress import format_status
from mcp_tasks_aws.tasks import transitions
from mcp_tasks_aws.tasks.model import TaskRecord, now_ms
from mcp_tasks_aws.tasks.ports import TaskStore
from mcp_tasks_aws.tools.journal import ELICIT, SAMPLE

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


def execution_arn_for(machine_arn: str, name: str) -> str:
    """The ARN of `machine_arn`'s execution called `name` (what StartExecution answers)."""
    base = machine_arn.replace(":stateMachine:", ":execution:", 1)
    return f"{base}:{name}"


def ask_key(leg: int) -> str:
    """The key of the question parked at `leg` (the leg after the park): fresh per question,
    and found again by a retried `tasks/update` after a resume that failed."""
    return f"{ASK_PREFIX}{leg}"


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
    """What a workflow's states may do to their task: ask the user, report progress."""

    def __init__(self, store: TaskStore, clock: Callable[[], int] = now_ms) -> None:
        self.store = store
        self.clock = clock

    def _own(self, task_id: str, execution_arn: str) -> TaskRecord:
        record = self.store.get(task_id)
        if record is None or record.execution_arn is None:
            raise AskRefused("McpUnknownTask", f"No workflow task {task_id}")
        if record.execution_arn != execution_arn:
            raise AskRefused("McpUnknownTask", f"Task {task_id} is not this execution's")
        return record

    def ask(
        self, task_id: str, execution_arn: str, task_token: str, request: Mapping[str, Any]
    ) -> str:
        """Park the task `input_required` with `request` (`{method, params}`), holding the
        state's token; returns the question's key. A task that ended (cancelled included)
        refuses (`McpTaskEnded`); one already waiting on a question refuses too (one question
        at a time: a second would lose the first one's token)."""
        method = request.get("method")
        params = request.get("params")
        if method not in ASKABLE or not isinstance(params, dict):
            raise AskRefused(
                "McpInvalidRequest",
                f"A workflow asks with method {' or '.join(ASKABLE)} and params (an object)",
            )
        for _ in range(_PARK_ROUNDS):
            record = self._own(task_id, execution_arn)
            if record.is_terminal or record.is_expired(self.clock()):
                raise AskRefused("McpTaskEnded", f"Task {task_id} has ended ({record.status})")
            if record.input_requests:
                raise AskRefused("McpAskPending", f"Task {task_id} is waiting on a question")
            capability = ASKABLE[str(method)]
            if capability not in record.capabilities:
                raise AskRefused(
                    "McpUnsupported", f"The client of task {task_id} does not support {capability}"
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
    ) -> bool:
        """Set the task's statusMessage (with progress numbers); False if the task has ended
        (the report is dropped: cancellation wins). ValueError for numbers that are not."""
        status = format_status(message[:1000], progress, total)
        record = self._own(task_id, execution_arn)
        if record.input_requests:
            # A question is open (another branch asked): `report` would read as working and
            # the answer's move starts from input_required. The fence on the leg keeps a
            # report read before a park from landing after it.
            return False
        guard, changes = transitions.report(record.leg, status, self.clock())
        outcome = self.store.apply(task_id, guard, changes)
        return outcome is not None and outcome.changed
