"""`make bench` (bench/run.py): `--smoke` runs every section as short as it can be, and a
section that fails or raises is reported while the others still run and print."""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def bench_run(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCH))  # the sections import each other by name
    return importlib.import_module("run")


def test_every_smoke_value_is_an_argument_and_the_smoke_uses_them(bench_run: ModuleType) -> None:
    plain, smoke = bench_run.parse_args([]), bench_run.parse_args(["--smoke"])
    values = bench_run.smoke_values()
    assert values
    assert set(values) <= set(vars(plain))  # a SMOKE key no argument reads is a typo
    assert {key: getattr(smoke, key) for key in values} == values
    assert all(getattr(plain, key) != value for key, value in values.items())
    explicit = bench_run.parse_args(["--smoke", "--rounds", "3"])
    assert explicit.rounds == 3


def test_a_failing_section_is_reported_and_the_others_still_run(
    bench_run: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ran: list[str] = []

    def section(name: str, outcome: int | None) -> SimpleNamespace:
        def main(args: argparse.Namespace) -> int:
            ran.append(name)
            print(f"{name} report")
            if outcome is None:
                raise RuntimeError(f"{name} broke")
            return outcome

        return SimpleNamespace(main=main)

    sections = {"a": section("a", None), "b": section("b", 1), "c": section("c", 0)}
    monkeypatch.setattr(bench_run, "SECTIONS", sections)
    monkeypatch.setattr(bench_run, "parse_args", lambda argv: argparse.Namespace(only=None))
    assert bench_run.main([]) == 1
    out = capsys.readouterr().out
    assert ran == ["a", "b", "c"]
    assert "RuntimeError: a broke" in out
    assert "-- a: FAILED" in out
    assert "-- b: FAILED (status 1)" in out
    assert "-- c: ok" in out
    assert "c report" in out
    assert out.rstrip().endswith("bench: 2 section(s) failed: a, b")
