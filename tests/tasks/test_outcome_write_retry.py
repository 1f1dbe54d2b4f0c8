"""The write that records a finished tool's outcome is retried with backoff (issue 19.14).

The tool has run by then: if that one write failed for good at its first transient error, the
result would be lost and the task would end `failed` as a crashed leg.
"""

from __future__ import annotations

from typing import Any

import pytest

from mcp_tasks_aws.tasks.legs import END_RETRY_DELAYS_S
from mcp_tasks_aws.tasks.ports import Throttled
from support.domain import Domain


def flaky_ending(domain: Domain, failures: int) -> list[float]:
    """Make the next `failures` writes of an ending move (complete/fail) raise; return the
    list of backoff sleeps the leg takes."""
    real_apply = domain.store.apply
    left = [failures]

    def apply(task_id: str, guard: Any, changes: Any) -> Any:
        if changes.move in ("complete", "fail") and left[0] > 0:
            left[0] -= 1
            raise Throttled(1)
        return real_apply(task_id, guard, changes)

    domain.store.apply = apply  # type: ignore[method-assign]
    slept: list[float] = []
    domain.legs.sleep = slept.append
    return slept


def test_a_transient_failure_of_the_outcome_write_is_retried_and_the_result_kept() -> None:
    domain = Domain()
    task_id = domain.create("echo", {"text": "kept"})
    slept = flaky_ending(domain, failures=2)
    assert domain.run_leg(task_id, "tok") == "done"
    record = domain.record(task_id)
    assert record.status == "completed"
    assert record.result == {"content": [{"type": "text", "text": "kept"}]}
    assert slept == list(END_RETRY_DELAYS_S[:2])


def test_a_write_that_keeps_failing_gives_up_after_every_retry() -> None:
    domain = Domain()
    task_id = domain.create("echo", {"text": "lost"})
    slept = flaky_ending(domain, failures=len(END_RETRY_DELAYS_S) + 1)
    with pytest.raises(Throttled):
        domain.run_leg(task_id, "tok")
    assert slept == list(END_RETRY_DELAYS_S)
    assert domain.record(task_id).status == "working"  # the reconciler settles it from here
