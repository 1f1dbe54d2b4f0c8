"""`make check` / `make unit` run pytest through scripts/pytest_strict.py: a run that collects
nothing (pytest's exit 5: a wrong path, a marker expression that selects nothing) fails,
in parallel workers as in one process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

STRICT = Path(__file__).resolve().parents[2] / "scripts" / "pytest_strict.py"


@pytest.mark.parametrize("workers", [[], ["-n", "1"]], ids=["one process", "xdist"])
def test_nothing_collected_fails(tmp_path: Path, workers: list[str]) -> None:
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n")
    none = subprocess.run(
        [sys.executable, str(STRICT), "-p", "no:cacheprovider", *workers, "-k", "no_such_test"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert none.returncode == 1, none.stdout + none.stderr
    assert "pytest collected no tests: failing on purpose" in none.stderr
