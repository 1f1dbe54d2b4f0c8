"""Run pytest and treat "no tests collected" (exit 5) as a failure, never a silent pass."""

from __future__ import annotations

import sys

import pytest

NO_TESTS_COLLECTED = 5

if __name__ == "__main__":
    code = pytest.main(["-q", *sys.argv[1:]])
    if code == NO_TESTS_COLLECTED:
        print("pytest collected no tests: failing on purpose", file=sys.stderr)
        code = 1
    raise SystemExit(int(code))
