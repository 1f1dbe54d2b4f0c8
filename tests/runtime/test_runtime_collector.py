"""The collector during a cold start (`runtime.init_phase`, `runtime.collector_paused`): off
while long-lived objects are built, frozen afterwards, and back on for requests.

The pause is checked on a fake `gc` (the real one is process-wide and pytest's own); the
handlers and clients in a fresh interpreter, with the real one.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import Any

import pytest

from mcp_tasks_aws import runtime
from support.lambdas import API_CHILD_PRELUDE, api_job, deployed_environment, run_child


class FakeCollector:
    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.freezes = 0

    def isenabled(self) -> bool:
        return self.enabled

    def disable(self) -> None:
        self.enabled = False

    def enable(self) -> None:
        self.enabled = True

    def freeze(self) -> None:
        self.freezes += 1


@pytest.fixture
def collector(monkeypatch: pytest.MonkeyPatch) -> FakeCollector:
    fake = FakeCollector()
    monkeypatch.setattr(runtime, "gc", fake)
    return fake


def test_init_phase_pauses_then_freezes_and_resumes(collector: FakeCollector) -> None:
    with runtime.init_phase():
        assert not collector.enabled
        assert runtime.collector_is_paused()
    assert collector.enabled
    assert collector.freezes == 1
    assert not runtime.collector_is_paused()


def test_a_pause_without_freeze_only_resumes(collector: FakeCollector) -> None:
    with runtime.collector_paused():
        assert not collector.enabled
    assert (collector.enabled, collector.freezes) == (True, 0)


def test_nested_holders_resume_once_at_the_outermost_exit(collector: FakeCollector) -> None:
    with runtime.collector_paused():
        with runtime.init_phase():
            pass
        assert not collector.enabled  # the outer holder still builds
        assert collector.freezes == 0
    # The inner holder asked for a freeze: it happens when the last one leaves.
    assert (collector.enabled, collector.freezes) == (True, 1)


def test_a_collector_that_was_off_stays_off(collector: FakeCollector) -> None:
    collector.enabled = False
    with runtime.init_phase():
        pass
    assert not collector.enabled


def test_an_exception_inside_still_resumes(collector: FakeCollector) -> None:
    with pytest.raises(RuntimeError), runtime.init_phase():
        raise RuntimeError("import failed")
    assert collector.enabled


def test_holders_in_several_threads_resume_when_the_last_leaves(
    collector: FakeCollector,
) -> None:
    inside, leave = threading.Barrier(3), threading.Event()

    def hold() -> None:
        with runtime.collector_paused():
            inside.wait()
            leave.wait(5)

    threads = [threading.Thread(target=hold) for _ in range(2)]
    for thread in threads:
        thread.start()
    inside.wait()
    assert not collector.enabled
    leave.set()
    for thread in threads:
        thread.join(5)
    assert collector.enabled


# -- the real collector, in a fresh interpreter --------------------------------------------------

HANDLER_BUILT = (
    API_CHILD_PRELUDE
    + """
import gc
api.handler  # what the runtime reads at init: builds the handler
print(json.dumps({"enabled": gc.isenabled(), "frozen": gc.get_freeze_count()}))
"""
)


def test_the_api_handlers_init_leaves_the_collector_on_with_init_frozen() -> None:
    state = run_child(HANDLER_BUILT, api_job())
    assert state["enabled"] is True
    assert state["frozen"] > 10_000  # modules, classes, validators: out of every collection


CLIENTS = """
import gc, json
from mcp_tasks_aws.aws.call_policies import ONCE, REPEATABLE
from mcp_tasks_aws.aws.clients import Clients

before = gc.get_freeze_count()
first = Clients().client("dynamodb", REPEATABLE)
after_first = gc.get_freeze_count()
Clients().client("dynamodb", REPEATABLE)  # a second client of the service: nothing more frozen
Clients().client("dynamodb", ONCE)  # nor for another policy
print(json.dumps({
    "first": after_first - before,
    "second": gc.get_freeze_count() - after_first,
    "enabled": gc.isenabled(),
}))
"""


def test_the_first_client_of_a_service_is_frozen_and_later_ones_are_not() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CLIENTS],
        env=deployed_environment(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    counts: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert counts["enabled"] is True
    assert counts["first"] > 10_000  # botocore and the client's data
    assert counts["second"] == 0


def test_entering_init_imports_nothing_heavy() -> None:
    """A handler enters `init_phase` before its imports: the package root and `runtime` must
    not import the tool API (pydantic and the rest) ahead of it."""
    script = (
        "import json, sys\nimport mcp_tasks_aws.runtime\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('pydantic', "
        "'mcp_tasks_aws.tools', 'botocore')))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=deployed_environment(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
