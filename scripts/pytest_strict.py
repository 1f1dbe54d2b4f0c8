"""Run pytest and treat "no tests collected" (exit 5) as a failure, never a silent pass.

Python's bytecode caches are kept for the run, whatever `PYTHONDONTWRITEBYTECODE` says: pytest
caches each test module with its asserts rewritten (without the cache every xdist worker
rewrites every module again, about 4 s of CPU each), and the processes tests start import the
package compiled once.
"""

from __future__ import annotations

import os
import sys

import pytest

NO_TESTS_COLLECTED = 5

if __name__ == "__main__":
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # for the workers and the tests' processes
    sys.dont_write_bytecode = False
    code = pytest.main(["-q", *sys.argv[1:]])
    if code == NO_TESTS_COLLECTED:
        print("pytest collected no tests: failing on purpose", file=sys.stderr)
        code = 1
    raise SystemExit(int(code))
