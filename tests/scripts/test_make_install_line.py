"""The first `make run` (any target that needs `.venv`) says what it installs before pip runs,
instead of a minute of silence (issue 29, item 5). Run with a stand-in Python that only writes
down what it was asked, so nothing is installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FAKE_PYTHON = """#!/bin/sh
# A stand-in interpreter: `-m venv DIR` makes DIR/bin/python (itself); anything else is logged.
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  mkdir -p "$3/bin" && cp "$0" "$3/bin/python" && exit 0
fi
echo "ran: python $*"
"""


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_the_install_step_says_what_it_installs_before_pip_runs(tmp_path: Path) -> None:
    fake = tmp_path / "python"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    venv = tmp_path / "venv"
    done = subprocess.run(
        [
            "make",
            "--no-print-directory",
            "-s",
            "-C",
            str(ROOT),
            "install",
            f"PYTHON={fake}",
            f"VENV={venv}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    first_pip = next(i for i, line in enumerate(lines) if "-m pip install" in line)
    said = lines[:first_pip]
    assert said == [
        f"installing mcp-tasks-aws and its development tools into {venv} (pip, about a minute; "
        "once, and again when pyproject.toml changes)"
    ]
    assert (venv / ".installed").exists()
