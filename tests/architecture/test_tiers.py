"""The test tiers are read from what each test uses (tests/support/tiers.py), and held to it:
`make check` runs the in-process and moto tiers only, so a test the reading misses would slow
the fast loop, and a test marked wrongly would be left out of it."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path
from types import FunctionType
from typing import Any

import pytest

from mcp_tasks_aws.local.stack import EmbeddedStack
from support.local_aws import template_resources
from support.tiers import (
    Guard,
    Reader,
    TierMissed,
    _codes,
    _instructions_by_dis,
    instructions,
)

ROOT = Path(__file__).resolve().parents[2]


def starts_a_stack() -> None:
    with EmbeddedStack(env={"MCP_TASKS_TOOLS": "conformance"}):
        pass


def through_a_helper() -> None:
    starts_a_stack()


def runs_a_process() -> None:
    subprocess.run([sys.executable, "-c", "pass"], check=True)


def forks() -> int:
    return os.fork()


def transforms() -> Any:
    from samtranslator.translator.transform import transform

    return transform


def uses_moto() -> None:
    with template_resources():
        pass


def computes() -> int:
    return sum(range(10))


class Helper:
    def go(self) -> None:
        runs_a_process()


def via_a_method() -> None:
    Helper().go()


@pytest.mark.parametrize(
    ("name", "tiers"),
    [
        ("starts_a_stack", {"stack"}),
        ("through_a_helper", {"stack"}),
        ("runs_a_process", {"subprocess"}),
        ("forks", {"subprocess"}),
        ("transforms", {"template"}),
        ("uses_moto", {"moto"}),
        ("via_a_method", {"subprocess"}),
        ("computes", set()),
    ],
)
def test_the_reading_follows_what_a_function_reaches(name: str, tiers: set[str]) -> None:
    # By name: a function passed as a parameter would be read as this test's own use.
    assert Reader().tiers([globals()[name]]) == tiers


def test_the_instructions_read_are_what_dis_reads_on_every_function_of_the_tree() -> None:
    """The reading's quick bytecode decoder (CPython 3.11) against `dis` itself, on every
    function of the project loaded in this process (the whole test tree, once collected)."""
    codes = [
        code
        for thing in gc.get_objects()
        if isinstance(thing, FunctionType) and thing.__code__.co_filename.startswith(str(ROOT))
        for code in _codes(thing.__code__)
    ]
    assert len(codes) > 100
    differing = [code for code in codes if instructions(code) != _instructions_by_dis(code)]
    assert not differing, differing[:5]


def test_a_table_of_functions_is_read_too() -> None:
    assert Reader().tiers([{"one": computes, "two": runs_a_process}]) == {"subprocess"}


# Collects tests (one process, the real conftests) and prints each one's tier markers.
_COLLECT = """
import json, sys
import pytest

class Show:
    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session):
        tiers = {"stack", "subprocess", "template", "moto"}
        found = {i.nodeid: sorted(m.name for m in i.iter_markers() if m.name in tiers)
                 for i in session.items}
        print("TIERS " + json.dumps(found))

pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *sys.argv[1:]], plugins=[Show()])
"""


def collected_tiers(*paths: str) -> dict[str, set[str]]:
    """Each collected test's tiers, as `pytest` marks them."""
    done = subprocess.run(
        [sys.executable, "-c", _COLLECT, *paths],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("TIERS ")]
    assert lines, done.stdout + done.stderr
    return {test: set(tiers) for test, tiers in json.loads(lines[-1][6:]).items()}


# Known tests: one that gets the embedded stack from its folder's conftest fixture, one that
# asks for moto resources by name at run time, and one that only computes.
STACK_TEST = "tests/tasks/test_races.py::test_leg_running_past_its_timeout_ends_the_task_failed"
MOTO_TEST = "tests/tasks/test_store_clock.py"
PURE_TEST = "tests/protocol/test_jsonrpc.py"


def test_collection_marks_each_test_with_its_tiers() -> None:
    found = collected_tiers(STACK_TEST, MOTO_TEST, PURE_TEST)
    by_file: dict[str, set[frozenset[str]]] = {}
    for test, tiers in found.items():
        by_file.setdefault(test.split("::")[0], set()).add(frozenset(tiers))
    assert all("stack" in tiers for tiers in by_file[STACK_TEST.split("::")[0]])
    assert by_file[MOTO_TEST] == {frozenset({"moto"})}
    assert by_file[PURE_TEST] == {frozenset()}


def test_a_test_that_starts_what_its_tiers_do_not_say_fails() -> None:
    class Owner:
        @staticmethod
        def start() -> str:
            return "started"

    guard = Guard()
    guard.watch(Owner, "start", "subprocess", "starts a process")
    assert Owner.start() == "started"  # between tests: nothing to hold to
    guard.running = ("tests/x.py::test_marked", {"subprocess"})
    assert Owner.start() == "started"
    guard.running = ("tests/x.py::test_pure", set())
    with pytest.raises(TierMissed, match=r"test_pure starts a process but is not marked"):
        Owner.start()
