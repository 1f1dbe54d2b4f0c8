"""The simulation must be able to fail: each deliberate bug (`simulation.mutations`) is caught
within the seeds `make simulate` runs, by a violation of the promise it breaks."""

from __future__ import annotations

import pytest

from simulation import run
from simulation.mutations import MUTATIONS

BROKEN = {
    "cancel_unguarded": ("exactly one end", "cancel wins"),
    "answer_unchecked": ("answers at most once",),
    "outcome_unfenced": ("answers at most once", "exactly one end"),
    "sweeper_ignores_executions": ("nothing left working",),
}


def test_every_mutation_says_what_it_breaks() -> None:
    assert set(BROKEN) == set(MUTATIONS)
    for name, (_, _, promise) in MUTATIONS.items():
        assert promise in BROKEN[name]


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_each_mutation_is_caught_within_the_default_seeds(name: str) -> None:
    outcome = run.run_seeds(range(run.SEEDS), mutation=name, shrink=False, stop_at_first=True)
    assert outcome.failed, f"{name} ({MUTATIONS[name][0]}) went unnoticed in {run.SEEDS} seeds"
    (failure,) = outcome.failed.values()
    broken = [line for line in failure.splitlines() if line.startswith("  - ")]
    assert any(promise in line for line in broken for promise in BROKEN[name]), failure
