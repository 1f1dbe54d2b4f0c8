"""Failures the simulation found, each kept as the schedule that showed it, written out step
by step (`simulation.script`), so it replays whatever the state machine draws next.

Each ran red before its fix; docs/simulation.md says what each was.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from simulation.run import quiet_logs
from simulation.script import Script, violations


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    with quiet_logs():
        yield


def test_a_retried_leg_whose_first_copy_parks_first_does_not_strand_the_task() -> None:
    # Found by seed 17 (and 8, 19): Step Functions retried RunLeg after the answer of its
    # invoke was lost, so two copies of the first leg ran, each with its own token. The first
    # copy parked with its token (dead: the state had retried); the second, fenced out of its
    # own park, ended the execution. The task waited on a dead token for good: its answer
    # resumed nothing, and it stayed "working" until it expired.
    with Script() as run:
        run.start("m0", "create", tool="on_machine")
        run.finish("m0")
        run.invoke("timeout_later")  # RunLeg invokes the worker; its answer will be lost
        run.invoke()  # ... lost now: the state retries
        run.invoke()  # RunLeg again: a second copy of the leg, with a new token
        run.go("WorkerFunction", nth=1)  # the second copy reads the task
        run.finish("WorkerFunction", nth=0)  # the first copy parks it (dead token)
        run.finish("WorkerFunction")  # the second copy's park is refused
        verdict = run.judged()
        assert violations(verdict) == [], run.log()


def test_a_handle_answer_retried_after_a_crash_before_its_resume_resumes_the_task() -> None:
    # Found by seed 314: a client without tasks answered through `task_answer`; the API
    # function wrote the answer and crashed before it resumed the execution (502). The retried
    # call found nothing open and answered "it asks nothing now" without resuming: the
    # execution waited on its token for good, and the task stayed "working" until it expired.
    with Script() as run:
        run.start("h3", "create", tool="ask")
        run.finish("h3")
        run.world.deliver(run.world.lambda_.queue[0], twice=False)  # the direct leg
        run.finish("WorkerFunction")  # claims, asks, parks, starts the execution
        run.invoke()  # RunLeg attaches its token
        run.finish("WorkerFunction")
        (task_id,) = run.task_ids()
        run.start("h3", "get", task=task_id)  # task_status: the question
        run.finish("h3")
        run.start("h3", "answer", task=task_id)
        run.go("h3", times=2)  # task_answer reads the task, writes the answer
        run.go("h3", "crash")  # and the function dies before SendTaskSuccess
        run.finish("h3")  # the client calls task_answer again
        verdict = run.judged()
        assert violations(verdict) == [], run.log()
