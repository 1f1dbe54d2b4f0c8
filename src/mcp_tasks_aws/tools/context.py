"""The `ToolContext` a tool receives, and the replay mechanism behind its questions.

A tool is plain Python that is run from the top every time (one *leg*). When it asks the client
something (`await ctx.elicit(...)`, `ctx.sample(...)`, `ctx.list_roots()`), the context looks the
question's key up in the *journal* of answers it was given:

- answered: the awaited call returns the recorded answer at once;
- not answered: the leg stops with :class:`InputNeeded`, which carries every outstanding request.

Inline, the journal travels in an HMAC-protected `requestState` (multi round-trip requests); in
a task, it lives on the task item. The same tool code serves both. What the journal holds
(question methods, answer shapes and their validation, the `step:` key namespace) and the
signals that stop a leg (:class:`InputNeeded`, :class:`BecomeTask`) live in `tools.journal`,
so readers of answers (the task service, the 2025-11-25 questions) need no `ToolContext`.

Invariants:
- keys are deterministic per call site (qualified function name, line offset, occurrence), or
  given explicitly; a key is asked at most once per leg, so no key is reused within a task;
- asking for a capability the client did not declare raises -32021 naming that capability;
- recorded answers are validated against the shape of what was asked before a tool sees them;
- `ctx.step(name, fn)` results are journalled like answers (keys `step:<name>`, a namespace no
  question may use), so a replay returns them instead of running `fn` again;
- a question must be awaited: using an un-awaited one as an answer, or returning while one was
  never awaited, is a bug in the tool and fails the call loudly (:class:`UnawaitedQuestion`);
- a round asks at most `MAX_QUESTIONS_PER_ROUND` questions and records at most
  `MAX_STEPS_PER_ROUND` new steps with them (`tools.journal`); more is a bug in the tool that
  fails the call with a message saying so (:class:`TooManyQuestions`, :class:`TooManySteps`).
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable, Generator, Mapping
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from mcp_tasks_aws.protocol.errors import InternalError, MissingClientCapability
from mcp_tasks_aws.protocol.models import ClientCapabilities
from mcp_tasks_aws.tools.journal import (
    ELICIT,
    LIST_ROOTS,
    MAX_QUESTIONS_PER_ROUND,
    MAX_STEPS_PER_ROUND,
    SAMPLE,
    STEP_PREFIX,
    Answer,
    BecomeTask,
    ElicitResult,
    InputNeeded,
    RootsResult,
    SamplingResult,
    validate_answer,
)

_CAPABILITY_OF = {ELICIT: "elicitation", SAMPLE: "sampling", LIST_ROOTS: "roots"}
_KEY_PREFIX = {ELICIT: "elicit", SAMPLE: "sample", LIST_ROOTS: "roots"}
AnswerT = TypeVar("AnswerT", bound=Answer)
StepT = TypeVar("StepT")


class UnawaitedQuestion(InternalError):
    """A tool created a question (`ctx.elicit(...)`, ...) and never awaited it."""

    def __init__(self, method: str) -> None:
        call = {ELICIT: "ctx.elicit", SAMPLE: "ctx.sample", LIST_ROOTS: "ctx.list_roots"}[method]
        super().__init__(
            f"Tool bug: {call}(...) was not awaited, so the question was never asked; "
            f"write `answer = await {call}(...)`"
        )


class TooManyQuestions(InternalError):
    """A tool asked more questions in one round than a task can record (a bug in the tool)."""

    def __init__(self, asked: int) -> None:
        super().__init__(
            f"Tool bug: ctx.ask_all(...) asks {asked} questions in one round; at most "
            f"{MAX_QUESTIONS_PER_ROUND} may be asked at once: ask the rest in a later round"
        )


class TooManySteps(InternalError):
    """A tool ran more new steps before asking than a task can record with the round."""

    def __init__(self, steps: int) -> None:
        super().__init__(
            f"Tool bug: the tool ran {steps} new ctx.step(...) calls before asking; at most "
            f"{MAX_STEPS_PER_ROUND} can be recorded with one round of questions"
        )


class PendingInput(Generic[AnswerT]):
    """One question, not yet asked: await it alone, or pass several to `ctx.ask_all`."""

    __slots__ = ("_ctx", "key", "method", "params")

    def __init__(self, ctx: ToolContext, key: str, method: str, params: dict[str, Any]) -> None:
        self._ctx = ctx
        self.key = key
        self.method = method
        self.params = params

    def as_request(self) -> dict[str, Any]:
        return {"method": self.method, "params": self.params}

    def __await__(self) -> Generator[Any, None, AnswerT]:
        answers = yield from self._ctx.ask_all(self).__await__()
        answer: AnswerT = answers[0]
        return answer

    def __getattr__(self, name: str) -> Any:
        # Reached only for names a PendingInput lacks: `.accepted`, `.content`, `.text`...
        # are an answer's, read off a question that was never awaited.
        if name.startswith("__"):
            raise AttributeError(name)
        raise UnawaitedQuestion(self.method)


def capabilities_from_json(declared: Mapping[str, Any]) -> ClientCapabilities:
    """The capabilities a client declared, read back from their JSON form (as a task record
    keeps them), so the worker can build a context without knowing the wire model."""
    return ClientCapabilities.model_validate(declared)


class ToolContext:
    """What a running tool can see and do. Created per leg by the inline path or the worker."""

    def __init__(
        self,
        *,
        capabilities: ClientCapabilities,
        principal: str,
        journal: Mapping[str, Any] | None = None,
        task_id: str | None = None,
        report: Callable[[str], None] | None = None,
        log: Callable[[str, Any], None] | None = None,
        stop_at_task_boundary: bool = False,
        list_changed: Callable[[str], None] | None = None,
        progress: Callable[[float, float | None, str | None], None] | None = None,
    ) -> None:
        self.capabilities = capabilities
        self._progress = progress
        self._list_changed = list_changed
        self.principal = principal
        self.task_id = task_id
        self._journal = dict(journal or {})
        self._report = report
        self._log = log
        self._site_counts: dict[str, int] = {}
        self._keys_used: set[str] = set()
        self._consumed: dict[str, Any] = {}
        self._new_steps: dict[str, Any] = {}
        self._unawaited: dict[str, str] = {}  # question key -> method, until it is awaited
        self._stop_at_task_boundary = stop_at_task_boundary

    # -- what the client declared -------------------------------------------------------------

    @property
    def can_elicit(self) -> bool:
        return self.capabilities.elicitation is not None

    @property
    def can_sample(self) -> bool:
        return self.capabilities.sampling is not None

    @property
    def can_list_roots(self) -> bool:
        return self.capabilities.roots is not None

    @property
    def in_task(self) -> bool:
        return self.task_id is not None

    # -- questions ----------------------------------------------------------------------------

    def elicit(
        self,
        message: str,
        schema: dict[str, Any] | type[BaseModel],
        *,
        key: str | None = None,
    ) -> PendingInput[ElicitResult]:
        """Ask the user to fill a form. Await the result: an :class:`ElicitResult`."""
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            schema = _flat_form_schema(schema)
        params = {"mode": "form", "message": message, "requestedSchema": schema}
        return self._pending(ELICIT, params, key)

    def sample(
        self,
        prompt: str | list[dict[str, Any]],
        *,
        max_tokens: int,
        system_prompt: str | None = None,
        key: str | None = None,
        **extra: Any,
    ) -> PendingInput[SamplingResult]:
        """Ask the client's model. Await the result: a :class:`SamplingResult`."""
        messages = (
            [{"role": "user", "content": {"type": "text", "text": prompt}}]
            if isinstance(prompt, str)
            else prompt
        )
        params: dict[str, Any] = {"messages": messages, "maxTokens": max_tokens, **extra}
        if system_prompt is not None:
            params["systemPrompt"] = system_prompt
        return self._pending(SAMPLE, params, key)

    def list_roots(self, *, key: str | None = None) -> PendingInput[RootsResult]:
        """Ask the client for its roots. Await the result: a :class:`RootsResult`."""
        return self._pending(LIST_ROOTS, {}, key)

    async def ask_all(self, *pending: PendingInput[Any]) -> tuple[Any, ...]:
        """Ask several questions at once: all are outstanding together until all are answered.

        At most `MAX_QUESTIONS_PER_ROUND` at once (TooManyQuestions, on every run: the bound
        does not depend on what was answered).
        """
        if len(pending) > MAX_QUESTIONS_PER_ROUND:
            raise TooManyQuestions(len(pending))
        for p in pending:
            self._unawaited.pop(p.key, None)
        answered = [p for p in pending if p.key in self._journal]
        answers = {p.key: validate_answer(p.method, self._journal[p.key]) for p in answered}
        # Answers to some of the questions are kept even when others are still open, so a
        # partial round is not asked again.
        for p in answered:
            self._consumed[p.key] = self._journal[p.key]
        missing = {p.key: p.as_request() for p in pending if p.key not in self._journal}
        if missing:
            if len(self._new_steps) > MAX_STEPS_PER_ROUND:
                # They would be recorded with the round, in the one write that parks the task.
                raise TooManySteps(len(self._new_steps))
            raise InputNeeded(missing)
        return tuple(answers[p.key] for p in pending)

    def step(self, name: str, fn: Callable[[], StepT]) -> StepT:
        """Run `fn` once per task (or multi round-trip call): replays return its recorded result.

        Use it for side effects before a question (a deployment, a charge, an email): when the
        tool is replayed after the answer, the step is not done again. The result must be JSON
        (it is stored with the task's answers) and `name` unique within the tool.
        """
        key = f"{STEP_PREFIX}{name}"
        if key in self._keys_used:
            raise ValueError(f"step {name!r} is used twice in one run of the tool")
        self._keys_used.add(key)
        if key in self._journal:
            recorded: StepT = self._journal[key]
            self._consumed[key] = recorded
            return recorded
        value = fn()
        json.dumps(value)  # fail now, not when the task is saved, if it cannot be recorded
        self._new_steps[key] = value
        self._consumed[key] = value
        return value

    def sleep(self, seconds: float) -> None:
        """Wait `seconds` (at least 1) without holding compute: a durable tool's wait
        (`runner="durable"`, `tasks.durable`), during which its task stays `working` with a
        status message saying until when, for up to the task's TTL.

        Only a durable tool can wait so: a leg, or an inline call, would hold a Lambda
        function the whole time, so elsewhere this is a bug in the tool, said loudly.
        """
        raise InternalError(
            "Tool bug: ctx.sleep(...) waits without compute only in a durable tool "
            "(@tools.tool(task='required', runner='durable'))"
        )

    def ensure_questions_awaited(self) -> None:
        """The tool returned: a question it created but never awaited is a bug, said loudly."""
        if self._unawaited:
            raise UnawaitedQuestion(next(iter(self._unawaited.values())))

    @property
    def new_steps(self) -> dict[str, Any]:
        """Step results first computed in this leg (the worker records them when it parks)."""
        return dict(self._new_steps)

    @property
    def consumed_answers(self) -> dict[str, Any]:
        """The recorded answers this leg actually used (what the next round must carry)."""
        return dict(self._consumed)

    async def run_as_task(self) -> None:
        """Mark where a tool's inline prelude ends and its durable task work begins.

        Inline (during `tools/call`, for a tool registered with `prelude=True` and a client that
        opted in to tasks) this stops the call and turns it into a task; the answers gathered so
        far go with it. In the task, and for clients without tasks, it returns at once.
        """
        if self._stop_at_task_boundary:
            raise BecomeTask()

    # -- progress -----------------------------------------------------------------------------

    def report(
        self, message: str = "", *, progress: float | None = None, total: float | None = None
    ) -> None:
        """Tell the client how the work goes: a message, and optionally how far it is.

        In a task, this sets the task's `statusMessage`, with the numbers first
        (`"3/10 · migrating schema"`, `"42% · ..."` when `total` is 100; see
        `mcp_tasks_aws.protocol.progress`), at most once a second; it is also where a cancelled task
        stops. Inline, on a request that carries a `progressToken`, a report with `progress`
        sends `notifications/progress` (increasing values only, at most one per 100 ms, always
        the first and the one reaching `total`); a report without numbers is not sent inline.
        `progress` and `total` are finite numbers >= 0; `total` > 0.
        """
        from mcp_tasks_aws.protocol.progress import (  # tools that report
            check_numbers,
            format_status,
        )

        check_numbers(progress, total)
        if self._report is not None:
            self._report(format_status(message, progress, total))
        if self._progress is not None and progress is not None:
            self._progress(progress, total, message or None)

    def notify_list_changed(self, *, tools: bool = False, prompts: bool = False) -> None:
        """Tell listening clients that the tool and/or prompt list changed (for this server).

        Clients subscribed with `subscriptions/listen` receive `notifications/tools/list_changed`
        (or prompts); without a change feed configured (no task table) it does nothing.
        """
        if self._list_changed is None:
            return
        for kind, changed in (("tools", tools), ("prompts", prompts)):
            if changed:
                self._list_changed(kind)

    def log(self, level: str, data: Any) -> None:
        """Send a log message to the client, if it asked for logs on this request."""
        if self._log is not None:
            self._log(level, data)

    # -- internals ----------------------------------------------------------------------------

    def _pending(self, method: str, params: dict[str, Any], key: str | None) -> PendingInput[Any]:
        capability = _CAPABILITY_OF[method]
        if getattr(self.capabilities, capability) is None:
            raise MissingClientCapability({capability: {}})
        if key is None:
            key = self._site_key(method)
        elif key.startswith(STEP_PREFIX):
            raise ValueError(f"input key {key!r} uses the {STEP_PREFIX!r} prefix kept for steps")
        if key in self._keys_used:
            # Two questions under one key would make an answer ambiguous (and reuse a key).
            raise ValueError(f"input key {key!r} is asked twice in one run of the tool")
        self._keys_used.add(key)
        self._unawaited[key] = method
        return PendingInput(self, key, method, params)

    def _site_key(self, method: str) -> str:
        # The tool's frame is three up: this helper, _pending, then elicit/sample/list_roots.
        frame = sys._getframe(3)
        code = frame.f_code
        site = f"{code.co_qualname}:{frame.f_lineno - code.co_firstlineno}"
        count = self._site_counts.get(site, 0) + 1
        self._site_counts[site] = count
        digest = hashlib.sha256(site.encode()).hexdigest()[:8]
        return f"{_KEY_PREFIX[method]}-{digest}-{count}"


def _flat_form_schema(model: type[BaseModel]) -> dict[str, Any]:
    """An elicitation form schema (flat object of primitives) from a pydantic model."""
    schema = model.model_json_schema()
    properties = {
        name: {k: v for k, v in prop.items() if k != "title" or "description" not in prop}
        for name, prop in schema.get("properties", {}).items()
    }
    form: dict[str, Any] = {"type": "object", "properties": properties}
    if schema.get("required"):
        form["required"] = schema["required"]
    return form
