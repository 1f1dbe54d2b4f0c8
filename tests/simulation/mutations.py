"""Deliberate bugs the simulation must catch: a simulator that never fails proves nothing.

Each mutation patches one rule of the product, for the length of a `with`, the way a careless
change would break it:

- `cancel_unguarded`: cancel without its condition (any status, a terminal one included);
- `answer_unchecked`: an answer applied without its key check (keys not outstanding too);
- `outcome_unfenced`: a leg writes its outcome unfenced (no leg in the guard of `complete`);
- `sweeper_ignores_executions`: the sweeper ends a task without asking whether an execution
  runs it (`Run.may_be_running` of the task state machine's runs says "stranded" unasked).

`tests/simulation/test_mutations.py` runs the default seeds under each and requires a
violation of the promise it breaks; `make simulate MUTATION=<name>` shows one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mcp_tasks_aws.protocol.names import TaskStatus
from mcp_tasks_aws.tasks import transitions
from mcp_tasks_aws.tasks.runs.legs import LegsRun
from mcp_tasks_aws.tasks.transitions import Guard

EVERY_STATUS: frozenset[TaskStatus] = frozenset(
    {"working", "input_required", "completed", "failed", "cancelled"}
)


def _cancel_unguarded(owner: str, now_ms: int) -> tuple[Guard, transitions.Changes]:
    guard, changes = _originals["cancel"](owner, now_ms)
    return guard._replace(statuses=EVERY_STATUS), changes


def _answer_unchecked(owner: str, answers: Any, now_ms: int) -> tuple[Guard, transitions.Changes]:
    guard, changes = _originals["answer"](owner, answers, now_ms)
    return guard._replace(outstanding=()), changes


def _complete_unfenced(leg: int, now_ms: int, **outcome: Any) -> tuple[Guard, transitions.Changes]:
    guard, changes = _originals["complete"](leg, now_ms, **outcome)
    return guard._replace(leg=None), changes


_originals: dict[str, Callable[..., Any]] = {
    "cancel": transitions.cancel,
    "answer": transitions.answer,
    "complete": transitions.complete,
}

MUTATIONS: dict[str, tuple[str, list[tuple[Any, str, Any]], str]] = {
    "cancel_unguarded": (
        "cancel without its condition",
        [(transitions, "cancel", _cancel_unguarded)],
        "exactly one end",
    ),
    "answer_unchecked": (
        "an answer applied without its key check",
        [(transitions, "answer", _answer_unchecked)],
        "answers at most once",
    ),
    "outcome_unfenced": (
        "a leg that writes its outcome unfenced",
        [(transitions, "complete", _complete_unfenced)],
        "answers at most once",
    ),
    "sweeper_ignores_executions": (
        "the sweeper ending a task a live execution runs",
        [(LegsRun, "may_be_running", lambda self, record: "stranded")],
        "nothing left working",
    ),
}
"""name -> (what it breaks, the patches (module, attribute, replacement), the promise it
breaks first)."""


@contextlib.contextmanager
def mutated(name: str | None) -> Iterator[None]:
    """The product with mutation `name` in place (None: as it is)."""
    if name is None:
        yield
        return
    _, patches, _ = MUTATIONS[name]
    with pytest.MonkeyPatch.context() as patch:
        for module, attribute, replacement in patches:
            patch.setattr(module, attribute, replacement)
        yield
