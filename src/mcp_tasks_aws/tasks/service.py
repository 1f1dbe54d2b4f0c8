"""The task use cases a client drives: create, get, list, update, cancel (and refuse).

Pure code over the ports (`TaskStore`, `ResultStore`, and those of the runs); what each may
change is `tasks.transitions`. What runs a task is its run (`tasks.runs`): the use cases ask it
(start, resume, release) and never tell the runs apart. Results are domain values (records,
views); `server.tasks` maps them to the protocol. Each use case is a few primitives, in an
order chosen so a crash between two of them leaves a task that still answers and still ends:

- create: the run is chosen (`Runs.for_spec`: a declared workflow's execution; else the
  first leg directly, an asynchronous invoke of the worker, unless no direct legs are
  configured or the tool opted out; else every leg in an execution), the record is put, named
  after its run and holding what the run keeps from the start, then the run starts it. If
  the start fails, the task is failed before the error is answered, so no record stays
  `working` with nothing to run it; if that `fail` is refused because a leg has moved the
  task on, the start landed and only its answer was lost (a timeout): the task is
  acknowledged. If the `fail` cannot be written either, the sweeper ends the task later. A
  start whose target refused it (`TargetUnavailable`: a declared machine missing or denied)
  fails the task at once with a message naming it and the AWS error code (the created task
  is answered, already failed). A run may learn the truth of a start that did not answer
  itself (a declared workflow asks `DescribeExecution`: `workflow.start_execution`).
- put: a create whose `PutItem` landed though its answer was lost is retried by the SDK and
  refused (the id exists); the store recognises its own write (`put_new`), so it is one task.
- update: one guarded write records the answers; if nothing is outstanding after it, the run
  resumes the task with what its park stored (the token). Only the write that answered the
  last key sees nothing outstanding, so only one caller resumes; a retried update after a
  failed resume resumes again (a used token is reported stale, never raised). A workflow
  whose waiting state timed out before the answer came has a dead token: the update that
  answered records that the answer was not delivered in the task's statusMessage (the ack
  stays an ack).
- cancel: the durable cancel marker first (the task is `cancelled` from that moment), then
  the run releases the work (an execution waiting for input is interrupted, a working one
  stopped). A retried cancel releases it again, in case the first one failed after its
  marker. A task its direct leg still holds has nothing to release: the leg notices at its
  next report, and an execution it started notices before it attaches.

Unknown, foreign and expired tasks all raise TaskNotFound; foreign ones exactly like unknown.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Final, NamedTuple

from mcp_tasks_aws.protocol.errors import INTERNAL_ERROR, InvalidParams
from mcp_tasks_aws.protocol.jsonrpc import encoded_text_size
from mcp_tasks_aws.tasks import transitions, workflow
from mcp_tasks_aws.tasks.exceptions import (
    ResultGone,
    TargetUnavailable,
    TaskAnswerInvalid,
    TaskArgumentsTooLarge,
    TaskCallTooLarge,
    TaskNotFound,
    TaskNotStarted,
    TaskTooLarge,
)
from mcp_tasks_aws.tasks.model import TaskHead, TaskRecord, is_task_id, new_task_id, now_ms
from mcp_tasks_aws.tasks.ports import (
    Applied,
    DirectLegs,
    Page,
    ResultStore,
    Runner,
    TaskStore,
    Workflows,
)
from mcp_tasks_aws.tasks.runs.base import RunPorts
from mcp_tasks_aws.tasks.runs.registry import Runs
from mcp_tasks_aws.tools.journal import ELICIT, LIST_ROOTS, SAMPLE, form_problem, validate_answer
from mcp_tasks_aws.tools.registry import ToolSpec

logger = logging.getLogger(__name__)

MAX_ARGUMENTS_BYTES: Final = 256 * 1024
MAX_ANSWER_KEY_CHARS: Final = 128
_FAIL_ATTEMPTS: Final = 3
_ANSWER_ROUNDS: Final = 3
"""Guarded answer writes per update: each refusal drops keys another update answered first."""


def answerable_methods(value: Any) -> frozenset[str]:
    """The input-request methods whose result `value` has the shape of (empty: none)."""
    fits = set()
    for method in (ELICIT, SAMPLE, LIST_ROOTS):
        try:
            validate_answer(method, value)
        except InvalidParams:
            continue
        fits.add(method)
    return frozenset(fits)


class TaskView(NamedTuple):
    """A task as `tasks/get` shows it: the record, with an offloaded result read back, and the
    poll interval to suggest now (it grows with the task's age).

    `result_withheld`: the task is completed but its offloaded result was not read back (it
    is larger than the view was allowed to read; see `TaskService.view`)."""

    record: TaskRecord
    result: dict[str, Any] | None
    poll_interval_ms: int
    result_withheld: bool = False


class TaskService:
    """Create, read, answer and cancel tasks on a TaskStore, whatever runs them.

    The ports (`runner`, `direct_legs`, `workflows`, `door_keys`, and `run_adapters`: ports of
    further runs, by run name) are what the runs are given (`tasks.runs`): with `direct_legs`,
    a tool's first leg runs directly unless the tool opted out. `default_poll_interval_ms` and
    `max_poll_interval_ms` bound the poll interval suggested as a task ages, unless the tool
    sets its own.
    """

    def __init__(
        self,
        store: TaskStore,
        runner: Runner,
        *,
        direct_legs: DirectLegs | None = None,
        results: ResultStore | None = None,
        workflows: Workflows | None = None,
        door_keys: workflow.DoorKeys | None = None,
        run_adapters: Mapping[str, Any] | None = None,
        default_ttl_ms: int | None = 24 * 3600 * 1000,
        max_ttl_ms: int | None = 30 * 24 * 3600 * 1000,
        default_poll_interval_ms: int = 500,
        max_poll_interval_ms: int = 10_000,
        clock: Callable[[], int] = now_ms,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.sleep = sleep
        self.store = store
        self.runner = runner
        self.direct_legs = direct_legs
        self.results = results
        self.workflows = workflows
        self.door_keys = door_keys
        self.run_adapters = dict(run_adapters or {})
        self.default_ttl_ms = default_ttl_ms
        self.max_ttl_ms = max_ttl_ms
        self.default_poll_interval_ms = default_poll_interval_ms
        self.max_poll_interval_ms = max_poll_interval_ms
        self.clock = clock

    # -- create -------------------------------------------------------------------------------

    def create(
        self,
        owner: str,
        spec: ToolSpec,
        arguments: dict[str, Any],
        capabilities: dict[str, Any],
        journal: Mapping[str, Any] | None = None,
        *,
        ttl_ms: int | None = None,
    ) -> TaskRecord:
        """Durably create a task for a call of `spec` and start it.

        `journal` holds answers gathered inline before the task existed (a tool's prelude);
        `ttl_ms` is the retention the client asked (2025-11-25 `params.task.ttl`; None: the
        tool's), capped like any other.
        """
        if len(json.dumps(arguments)) > MAX_ARGUMENTS_BYTES:
            raise TaskArgumentsTooLarge()
        now = self.clock()
        run = self.runs().for_spec(spec)
        floor = spec.poll_interval_ms or self.default_poll_interval_ms
        blank = TaskRecord(
            task_id=new_task_id(),
            owner=owner,
            tool=spec.name,
            arguments=arguments,
            capabilities=capabilities,
            status="working",
            created_at=now,
            updated_at=now,
            ttl_ms=self.ttl_for(ttl_ms if ttl_ms is not None else spec.ttl_ms),
            poll_interval_ms=floor,
            poll_interval_max_ms=max(floor, spec.max_poll_interval_ms or self.max_poll_interval_ms),
            answers=dict(journal or {}),
            asked_keys=frozenset(journal or {}),
            run=run.name,
        )
        record = run.prepare(blank, spec)
        try:
            self.store.put_new(record)  # TaskAlreadyExists: 128 random bits collided, a broken RNG
        except TaskTooLarge as exc:
            raise TaskCallTooLarge() from exc  # nothing was written: the call is refused
        try:
            run.start(record, spec)
        except TargetUnavailable as exc:
            # The declared machine is missing or denied: the task ends now, saying so.
            error = {"code": INTERNAL_ERROR, "message": f"The task could not start: {exc}"}
            failed = self._fail_unstarted(record, error)
            return failed.record if failed is not None else record
        except Exception as exc:
            # The record exists: end it rather than leave it working with nothing to run it.
            failed = self._fail_unstarted(record)
            if failed is None or failed.changed:
                raise TaskNotStarted() from exc
            # Refused: a leg has run it already, so the start landed and only its answer was
            # lost (a timeout). The task runs: acknowledge it rather than orphan it.
            logger.warning("task %s: its start failed to answer, but the task runs", record.task_id)
        return record

    def ttl_for(self, asked_ms: int | None) -> int | None:
        """A task's retention: what was asked (else the default), never past the server's cap."""
        ttl = asked_ms if asked_ms is not None else self.default_ttl_ms
        if self.max_ttl_ms is None:
            return ttl
        return self.max_ttl_ms if ttl is None else min(ttl, self.max_ttl_ms)

    def _fail_unstarted(
        self, record: TaskRecord, error: dict[str, Any] | None = None
    ) -> Applied | None:
        """Fail a task whose execution could not be started, trying a few times: what the
        store answered (not `changed` if a leg had moved the task on, so its start landed), or
        None if the task is gone or the write could not be made.

        The start already failed (a fault or throttling), so the write that ends the task may
        fail too; nothing else would ever end it (no execution, so no reconcile event), so it
        is retried with a short backoff before giving up and saying so in the log (the
        sweeper ends it later, `tasks.sweep`).
        """
        error = error or {"code": INTERNAL_ERROR, "message": "The task could not be started"}
        for attempt in range(_FAIL_ATTEMPTS):
            try:
                moved = transitions.fail(record.leg, error, self.clock())
                return self.store.apply(record.task_id, *moved)
            except Exception:
                if attempt + 1 == _FAIL_ATTEMPTS:
                    logger.error(
                        "task %s was created but neither started nor failed; it stays working "
                        "until the sweeper ends it",
                        record.task_id,
                        exc_info=True,
                    )
                    return None
                self.sleep(0.05 * 4**attempt)
        return None

    # -- read ---------------------------------------------------------------------------------

    def get(self, owner: str, task_id: str) -> TaskView:
        return self.view(self.load(owner, task_id))

    def load(self, owner: str, task_id: str) -> TaskRecord:
        """The caller's live record (one consistent read; an offloaded result stays where it is)."""
        self._check_id(task_id)
        record = self.store.get(task_id)
        if record is None or record.owner != owner:
            raise TaskNotFound()
        if record.is_expired(self.clock()):
            raise TaskNotFound(expired=True)
        return record

    def view(self, record: TaskRecord, *, result_limit: int | None = None) -> TaskView:
        """The view of a record, reading an offloaded result back (only once it is shown).

        With `result_limit`, an offloaded result larger than that many bytes (as encoded in a
        response, `protocol.jsonrpc.encoded_size`) is left out: the view is `result_withheld`.
        Its stored size is asked first, so one larger even unescaped is not read at all, and
        one whose escapes make it too large is dropped before it is parsed. A listen window
        bounds its bytes this way without holding results it will not send.
        """
        result = record.result
        poll_interval_ms = record.poll_interval_at(self.clock())
        if record.visible_status == "completed" and record.result_ref is not None:
            if self.results is None:
                raise RuntimeError("a result was offloaded but no result store is configured")
            try:
                if result_limit is not None and self.results.size(record.result_ref) > result_limit:
                    return TaskView(record, None, poll_interval_ms, result_withheld=True)
                body = self.results.get(record.result_ref)
                if result_limit is not None and encoded_text_size(body) > result_limit:
                    # Its escapes make it too large after all: dropped before it is parsed.
                    return TaskView(record, None, poll_interval_ms, result_withheld=True)
                result = json.loads(body)
            except ResultGone as exc:
                # The bucket keeps a result at least as long as its task: gone means expired.
                raise TaskNotFound(expired=True) from exc
        return TaskView(record, result, poll_interval_ms)

    def live(self, owner: str, task_ids: list[str]) -> dict[str, TaskRecord]:
        """The caller's live tasks among `task_ids` (one consistent batch read)."""
        wanted = [task_id for task_id in task_ids if is_task_id(task_id)]
        now = self.clock()
        return {
            task_id: record
            for task_id, record in self.store.get_many(wanted).items()
            if record.owner == owner and not record.is_expired(now)
        }

    def peek(self, owner: str, task_ids: list[str]) -> dict[str, TaskHead]:
        """The heads of the caller's live tasks among `task_ids` (one projected batch read)."""
        wanted = [task_id for task_id in task_ids if is_task_id(task_id)]
        now = self.clock()
        return {
            task_id: head
            for task_id, head in self.store.peek_many(wanted).items()
            if head.owner == owner and not head.is_expired(now)
        }

    def list(self, owner: str, *, limit: int, after: str | None = None) -> Page:
        """One page of the caller's tasks, newest first (ValueError for a foreign `after`)."""
        return self.store.list_by_owner(owner, limit=limit, after=after)

    # -- update -------------------------------------------------------------------------------

    def update(
        self,
        owner: str,
        task_id: str,
        responses: Mapping[str, Any],
        *,
        validate_content: bool = False,
        loaded: TaskRecord | None = None,
    ) -> None:
        """Record answers to outstanding requests; resume the task once none is outstanding.

        Answers to keys that are not outstanding (never asked, or answered already) are
        ignored, as the Tasks extension prescribes. An answer to an outstanding request that
        does not have the shape of that request's result (`{"action": "bogus"}`, roots for an
        elicitation) raises TaskAnswerInvalid and nothing is stored, so the client can correct
        it: first answer wins, and a wrong first answer would otherwise fail the task.

        With `validate_content`, the record is read first and an accepted elicitation's
        content must also fit the form it answers (its `requestedSchema`): TaskAnswerInvalid
        names the field, and nothing is stored. It costs that read, so `tasks/update` (whose
        first call is the guarded write) does not ask for it; the task handles do, since
        their answers come from a model reading the schema as text. `loaded` is the
        caller's record as it has just read it (`load`), to check against instead of reading
        it again (a question's form never changes: its key is asked once).
        """
        self._check_id(task_id)
        shaped = {
            key: (value, answerable_methods(value))
            for key, value in responses.items()
            if 0 < len(key) <= MAX_ANSWER_KEY_CHARS
        }
        now = self.clock()
        writable = {key: answer for key, answer in shaped.items() if answer[1]}
        record: TaskRecord | None = None
        if validate_content:
            record = loaded if loaded is not None else self.load(owner, task_id)
            if record.task_id != task_id or record.owner != owner:
                raise ValueError("`loaded` must be this caller's record of this task")
            _reject_misfits(record, shaped)
            _reject_content_misfits(record, shaped)
        elif len(writable) < len(shaped) or not writable:
            # Some value answers no request at all: one read tells whether it was meant for an
            # outstanding one (an error) or for a key nobody asked (ignored).
            record = self.load(owner, task_id)
            _reject_misfits(record, shaped)
        answered = False  # whether this update's write landed (else it is a retry's)
        for _ in range(_ANSWER_ROUNDS):
            if not writable:
                break
            outcome = self.store.apply(task_id, *transitions.answer(owner, writable, now))
            record = self._owned(outcome, owner, now)
            if outcome is not None and outcome.changed:
                answered = True
                break
            # Refused: an answer of the wrong kind is the client's to correct; keys answered
            # meanwhile (by another update) drop out, and the rest is tried once more.
            _reject_misfits(record, writable)
            waiting = record.status == "input_required"
            writable = {k: a for k, a in writable.items() if waiting and k in record.input_requests}
        if (
            record is not None
            and record.status == "input_required"
            and record.task_token
            and not record.input_requests
        ):
            # Every outstanding request is answered: resume. A retried update after a resume
            # that failed gets here too and resumes again; a used token is reported stale.
            self.runs().of(record).resume(record, answered)

    # -- cancel -------------------------------------------------------------------------------

    def cancel(self, owner: str, task_id: str) -> Applied:
        """Cancel an active task (a terminal one is left as it is, and `changed` is False)."""
        self._check_id(task_id)
        now = self.clock()
        outcome = self.store.apply(task_id, *transitions.cancel(owner, now))
        record = self._owned(outcome, owner, now)
        changed = outcome is not None and outcome.changed
        if changed or record.status == "cancelled":
            # The marker is durable now; what follows only saves compute. A retried cancel
            # gets here too: the first one may have failed after writing its marker.
            self._release(record)
        return Applied(record, changed)

    def refuse(
        self, owner: str, task_id: str, key: str, method: str, error: dict[str, Any]
    ) -> bool:
        """The client answered the outstanding request `key` with an error: fail the task
        with `error` and release its execution. False (nothing changed) if `key` is not
        outstanding any more (answered, or the task moved on)."""
        self._check_id(task_id)
        now = self.clock()
        outcome = self.store.apply(task_id, *transitions.refuse(owner, key, method, error, now))
        record = self._owned(outcome, owner, now)
        if outcome is not None and outcome.changed:
            self._release(record)
            return True
        return False

    def _release(self, record: TaskRecord) -> None:
        """Stop the work of a task that is over for good (`Run.release`). A failure only
        leaves compute running: it is logged, never raised, and a retried cancel tries again."""
        run = self.runs().of(record)
        try:
            run.release(record)
        except Exception:
            logger.warning(
                "task %s has ended (%s) but its %s run was not released",
                record.task_id,
                record.status,
                run.name,
                exc_info=True,
            )

    def runs(self) -> Runs:
        """The runs of this service's tasks, over its ports as they are now (a test may swap
        one: `direct_legs = None` turns direct legs off)."""
        return Runs(
            RunPorts(
                self.store,
                runner=self.runner,
                direct_legs=self.direct_legs,
                workflows=self.workflows,
                door_keys=self.door_keys,
                clock=self.clock,
                sleep=self.sleep,
                adapters=self.run_adapters,
            )
        )

    # -- lookups ------------------------------------------------------------------------------

    def _check_id(self, task_id: str) -> None:
        if not is_task_id(task_id):
            raise TaskNotFound()

    @staticmethod
    def _owned(outcome: Applied | None, owner: str, now_ms: int) -> TaskRecord:
        """The record a guarded write found, if the caller may see it."""
        if outcome is None or outcome.record.owner != owner:
            raise TaskNotFound()
        if outcome.record.is_expired(now_ms):
            raise TaskNotFound(expired=True)
        return outcome.record


def _reject_content_misfits(
    record: TaskRecord, answers: Mapping[str, tuple[Any, frozenset[str]]]
) -> None:
    """Raise TaskAnswerInvalid for an accepted elicitation whose content does not fit its form."""
    if record.status != "input_required":
        return
    for key, (value, _) in answers.items():
        request = record.input_requests.get(key)
        if request is None or request.get("method") != ELICIT or value.get("action") != "accept":
            continue
        schema = (request.get("params") or {}).get("requestedSchema")
        problem = form_problem(schema, value.get("content"))
        if problem is not None:
            raise TaskAnswerInvalid(key, ELICIT, problem)


def _reject_misfits(record: TaskRecord, answers: Mapping[str, tuple[Any, frozenset[str]]]) -> None:
    """Raise TaskAnswerInvalid for an answer to an outstanding request it does not fit."""
    if record.status != "input_required":
        return
    for key, (_, methods) in answers.items():
        request = record.input_requests.get(key)
        if request is not None and request.get("method") not in methods:
            raise TaskAnswerInvalid(key, str(request.get("method")))
