"""The checker on histories written by hand: each promise it judges can fail, and a history
that keeps them all passes."""

from __future__ import annotations

from dataclasses import replace

from mcp_tasks_aws.tasks.model import TaskRecord
from simulation.checker import Verdict, judge
from simulation.history import Answered, Created, History, Probe, Seen
from simulation.stores import Landed
from support.records import make_record

NOT_FOUND = {"code": -32602, "message": "Failed to retrieve task: Task not found"}


def landed(seq: int, record: TaskRecord, move: str, writer: str = "w") -> Landed:
    return Landed(seq, seq, writer, move, record)


def asked(record: TaskRecord) -> TaskRecord:
    request = {"method": "elicitation/create", "params": {}}
    return replace(
        record,
        status="input_required",
        input_requests={"k1": request},
        asked_keys=frozenset({"k1"}),
        leg=1,
    )


def answered(record: TaskRecord, value: str) -> TaskRecord:
    answer = {"action": "accept", "content": {"v": value}}
    return replace(record, input_requests={}, answers={"k1": answer})


def completed(
    record: TaskRecord, text: str = '{"answers": {"k1": "a.1"}, "tool": "ask"}'
) -> TaskRecord:
    result = {"content": [{"type": "text", "text": text}]}
    return replace(record, status="completed", input_requests={}, result=result)


def judged(history: History, trail: list[Landed], final: TaskRecord) -> Verdict:
    return judge(
        history,
        {final.task_id: trail},
        {final.task_id: final},
        [],
        end_ms=final.created_at,
        at_rest=True,
    )


def broken(verdict: Verdict) -> set[str]:
    return {promise for promise, _ in verdict.violations}


def a_task() -> tuple[History, list[Landed], TaskRecord]:
    """A task created, asked, answered once (acknowledged) and completed with that answer."""
    record = make_record()
    history = History(created=[Created(record.task_id, record.owner, "ask", "m0", 2)])
    waiting = asked(record)
    history.answered.append(
        Answered(record.task_id, record.owner, {"k1": "a.1"}, 5, 7, True, "modern")
    )
    done = completed(answered(waiting, "a.1"))
    trail = [
        landed(1, record, "create"),
        landed(3, waiting, "park"),
        landed(6, answered(waiting, "a.1"), "answer"),
        landed(9, done, "complete"),
    ]
    return history, trail, done


def test_a_history_that_keeps_every_promise_passes() -> None:
    history, trail, final = a_task()
    history.seen.append(
        Seen(
            final.task_id,
            final.owner,
            "input_required",
            4,
            4,
            "modern tasks/get",
            open_keys=frozenset({"k1"}),
        )
    )
    history.seen.append(Seen(final.task_id, final.owner, "completed", 10, 11, "modern tasks/get"))
    verdict = judged(history, trail, final)
    assert verdict.ok, verdict.violations
    assert verdict.checks["exactly one end"]
    assert verdict.checks["read your writes"]


def test_a_second_end_breaks_exactly_one_end() -> None:
    history, trail, final = a_task()
    cancelled = replace(final, status="cancelled")
    verdict = judged(history, [*trail, landed(12, cancelled, "cancel")], cancelled)
    assert "exactly one end" in broken(verdict)


def test_an_answer_that_changes_or_was_never_asked_breaks_answers_at_most_once() -> None:
    history, trail, final = a_task()
    changed = answered(asked(final), "b.2")
    history.answered.append(
        Answered(final.task_id, final.owner, {"k1": "b.2"}, 8, 8, True, "modern")
    )
    assert "answers at most once" in broken(
        judged(history, [*trail[:3], landed(8, changed, "answer")], changed)
    )
    stray = replace(
        final, answers={**final.answers, "zz": {"action": "accept", "content": {"v": "x"}}}
    )
    assert "answers at most once" in broken(judged(history, trail, stray))


def test_a_foreign_task_that_answers_unlike_an_unknown_one_breaks_isolation() -> None:
    history, trail, final = a_task()
    history.probes.append(Probe(final.task_id, "bob", "modern tasks/get", None, NOT_FOUND))
    assert "nothing visible to another caller" in broken(judged(history, trail, final))


def test_a_stale_read_breaks_read_your_writes() -> None:
    history, trail, final = a_task()
    # Shown working after it completed (sent after the end landed)
    history.seen.append(Seen(final.task_id, final.owner, "working", 10, 11, "modern tasks/get"))
    assert "read your writes" in broken(judged(history, trail, final))


def test_an_acknowledged_task_left_active_breaks_exactly_one_end() -> None:
    history, trail, _ = a_task()
    waiting = trail[2].record
    assert "exactly one end" in broken(judged(history, trail[:3], waiting))
