"""The simulation itself: a seed replays alike, both stores run, and what a run prints."""

from __future__ import annotations

from simulation import run


def _fingerprint(outcome: run.Outcome) -> tuple[object, ...]:
    totals = outcome.totals
    return (
        totals.schedules,
        totals.steps,
        sorted(totals.operations.items()),
        sorted(totals.stats.faults.items()),
        sorted(totals.stats.crash_points.items()),
        totals.stats.attempts,
        sorted(totals.checks.items()),
    )


def test_a_seed_replays_alike_and_another_seed_differs() -> None:
    first = run.run_seeds([3], schedules=3, shrink=False)
    again = run.run_seeds([3], schedules=3, shrink=False)
    other = run.run_seeds([4], schedules=3, shrink=False)
    assert not first.failed, first.failed
    assert _fingerprint(first) == _fingerprint(again)
    assert _fingerprint(first) != _fingerprint(other)


def test_a_seed_runs_on_the_dynamodb_adapter_over_moto() -> None:
    outcome = run.run_seeds([0], store="moto", schedules=2, shrink=False)
    assert not outcome.failed, outcome.failed
    assert outcome.totals.stats.calls["dynamodb:UpdateItem"] > 0


def test_the_summary_names_every_figure_make_simulate_promises() -> None:
    outcome = run.run_seeds([1], schedules=2, shrink=False)
    text = "\n".join(run.summary(outcome, "twin"))
    for figure in ("schedules", "operations", "faults injected", "crash points hit"):
        assert figure in text
    for promise in run.PROMISES:
        assert f"{promise} " in text


def test_a_failure_says_how_to_replay_it() -> None:
    assert run.replay_command(17, "twin", run.SCHEDULES, run.STEPS, None) == (
        "make simulate SEED=17"
    )
    assert run.replay_command(3, "moto", 9, run.STEPS, "cancel_unguarded") == (
        "make simulate SEED=3 STORE=moto SCHEDULES=9 MUTATION=cancel_unguarded"
    )
