"""What a leg's journal holds, and how a leg stops: the vocabulary of tool questions.

A *journal* maps keys to what a tool was given on earlier legs: the client's answers to its
questions and the results of its `ctx.step(...)` calls (see `tools.context`, which replays
it). This module owns what the journal and its readers agree on, without the `ToolContext`:

- the questions a tool can ask, by JSON-RPC method (:data:`ELICIT`, :data:`SAMPLE`,
  :data:`LIST_ROOTS`);
- the shape of each answer (:class:`ElicitResult`, :class:`SamplingResult`,
  :class:`RootsResult`) and :func:`validate_answer`, which checks a client's answer against the
  question before it is recorded or replayed (-32602 if it does not fit);
- :data:`STEP_PREFIX`, the key namespace kept for step results (no question may use it);
- how many keys one round may write (:data:`MAX_QUESTIONS_PER_ROUND`,
  :data:`MAX_STEPS_PER_ROUND`);
- the control-flow signals that end a leg early: :class:`InputNeeded` (questions are
  outstanding) and :class:`BecomeTask` (an inline prelude is done).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from mcp_tasks_aws.protocol.errors import InvalidParams

ELICIT = "elicitation/create"
SAMPLE = "sampling/createMessage"
LIST_ROOTS = "roots/list"
STEP_PREFIX = "step:"

MAX_QUESTIONS_PER_ROUND = 64
"""The most questions a tool may ask at once (one `ctx.ask_all`, which is one round of input).

A round is what one `tasks/update` answers (it takes at most 64 answers), and each of its keys
takes a share of the conditional writes that park the task, attach its execution and record
the answers: DynamoDB refuses any expression over 4 KB, and at this bound every one of them
stays under it (pinned in tests/aws/test_expression_bounds.py)."""

MAX_STEPS_PER_ROUND = 128
"""The most new `ctx.step(...)` results a leg may record with its round of questions: they are
written by the same write that parks the task, next to the questions (see above)."""


class InputNeeded(Exception):
    """Control flow, not a failure: the leg stops because these requests are unanswered."""

    def __init__(self, requests: dict[str, dict[str, Any]]) -> None:
        super().__init__(f"{len(requests)} input request(s) outstanding")
        self.requests = requests


class BecomeTask(Exception):
    """Control flow: a tool's inline prelude is done (`ctx.run_as_task()`); make it a task."""


class Answer(BaseModel):
    """A client's answer to one question, as a tool reads it (extra fields are kept)."""

    model_config = ConfigDict(extra="allow", frozen=True, defer_build=True)


class ElicitResult(Answer):
    """The user's answer to an elicitation."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None

    @property
    def accepted(self) -> bool:
        return self.action == "accept"


class SamplingResult(Answer):
    """The client's model's answer to a sampling request."""

    role: Literal["assistant", "user"]
    content: Any
    model: str | None = None
    stopReason: str | None = None

    @property
    def text(self) -> str:
        """Concatenated text of the answer's text blocks."""
        blocks = self.content if isinstance(self.content, list) else [self.content]
        return "".join(
            b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"
        )


class Root(Answer):
    uri: str
    name: str | None = None


class RootsResult(Answer):
    roots: list[Root]


_ANSWER_MODEL: dict[str, type[Answer]] = {
    ELICIT: ElicitResult,
    SAMPLE: SamplingResult,
    LIST_ROOTS: RootsResult,
}


def validate_answer(method: str, answer: Any) -> Answer:
    """Check a client's answer against the shape of the request it answers (-32602 if not)."""
    try:
        return _ANSWER_MODEL[method].model_validate(answer)
    except ValidationError as exc:
        raise InvalidParams(f"Invalid input response for a {method} request") from exc


_MAX_PROBLEM_CHARS = 200


def form_problem(schema: Any, content: Any) -> str | None:
    """What is wrong with an accepted elicitation's `content` for its `requestedSchema`, naming
    the field (None: it fits, or the schema cannot be checked)."""
    if not isinstance(schema, dict):
        return None
    from jsonschema import Draft202012Validator  # answers checked against a form only
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError:
        return None  # the tool's schema is its own business; the tool sees the answer
    instance = content if content is not None else {}
    errors = sorted(
        Draft202012Validator(schema).iter_errors(instance),
        key=lambda e: (list(map(str, e.absolute_path)), str(e.validator)),
    )
    if not errors:
        return None
    error = errors[0]
    path = ".".join(str(p) for p in error.absolute_path)
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [name for name in error.validator_value or () if name not in error.instance]
        field = ".".join(filter(None, [path, str(missing[0]) if missing else ""]))
        return f"field {field!r} is required"
    message = error.message
    if len(message) > _MAX_PROBLEM_CHARS:
        message = message[: _MAX_PROBLEM_CHARS - 1] + "\u2026"
    return f"field {path!r}: {message}" if path else f"the content: {message}"
