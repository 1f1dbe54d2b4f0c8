"""Judging a run: every promise, against what the clients saw, the store's trail and its end.

The promises (docs/simulation.md states them for readers):

- **exactly one end**: a task ends once (one write into a terminal status, nothing after
  it), every acknowledged task has ended when the run is at rest (or expired), and no client
  is ever shown another end than the one it got;
- **cancel wins**: after an acknowledged cancel the task is `cancelled`, unless it had ended
  before the cancel was answered;
- **answers at most once**: an answer, once recorded, never changes; a key never asked is
  never stored; an answer sent after another answer to the same key was acknowledged changes
  nothing (first answer wins); and none is lost: a completed task used exactly the answers
  recorded for it, a failed one says why;
- **steps at most once**: a `ctx.step` side effect never runs again once its result is
  recorded; where it ran twice before that (a leg that died between the step and the write
  that records it, two copies of one leg), the platform gives only at-least-once: measured;
- **nothing acknowledged is lost**: an acknowledged task is there for its owner until it
  expires;
- **nothing visible to another caller**: a request about another caller's task answers
  exactly what it answers for an id nobody has, and a listen never honours it;
- **read your writes**: what a read shows was the task's state at some moment while the read
  was in flight (so it sees every write acknowledged before it was sent): a task shown ended
  stays so, an answered question is not shown open again, a cancelled task is not shown
  running;
- **nothing left working**: at rest, past the sweeper's bound, no task is still active; and the
  sweeper ends only what nothing runs (no execution of the task was running as it wrote).
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mcp_tasks_aws.tasks.model import TaskRecord
from simulation.history import Answered, History, Seen
from simulation.stores import Landed

PROMISES = (
    "exactly one end",
    "cancel wins",
    "answers at most once",
    "steps at most once",
    "nothing acknowledged lost",
    "nothing visible to another caller",
    "read your writes",
    "nothing left working",
)
TERMINAL = frozenset({"completed", "failed", "cancelled"})
STEP_PREFIX = "step:"


@dataclass
class Verdict:
    checks: Counter[str] = field(default_factory=Counter)
    violations: list[tuple[str, str]] = field(default_factory=list)
    measured: Counter[str] = field(default_factory=Counter)

    def check(self, promise: str, holds: bool, why: str) -> None:
        self.checks[promise] += 1
        if not holds:
            self.violations.append((promise, why))

    @property
    def ok(self) -> bool:
        return not self.violations


def shown(record: TaskRecord, view: str) -> str:
    """The status a client of `view` is shown for `record`."""
    status = record.visible_status
    if view.startswith("legacy") and status == "completed" and record.tool_error:
        return "failed"
    return status


def _value(answer: Any) -> str:
    if isinstance(answer, dict):
        if answer.get("action", "accept") != "accept":
            return str(answer.get("action"))
        content = answer.get("content") or {}
        return str(content.get("v"))
    return str(answer)


def judge(
    history: History,
    trail: dict[str, list[Landed]],
    final: dict[str, TaskRecord],
    effects: Iterable[Any],
    *,
    end_ms: int,
    at_rest: bool,
    harness_errors: Iterable[str] = (),
) -> Verdict:
    verdict = Verdict()
    for error in harness_errors:
        verdict.violations.append(("harness", error))
    _one_end(verdict, history, trail, final, end_ms)
    _cancel_wins(verdict, history, trail, final)
    _answers(verdict, history, trail, final)
    _steps(verdict, trail, effects)
    _nothing_lost(verdict, history, final)
    _isolation(verdict, history, final)
    _reads(verdict, history, trail)
    _at_rest(verdict, history, trail, final, end_ms, at_rest)
    return verdict


def _short(task_id: str) -> str:
    return task_id[:8]


def _one_end(
    verdict: Verdict,
    history: History,
    trail: dict[str, list[Landed]],
    final: dict[str, TaskRecord],
    end_ms: int,
) -> None:
    promise = "exactly one end"
    for task_id, writes in trail.items():
        ends = [w for w in writes if w.record.status in TERMINAL]
        after = writes[writes.index(ends[0]) + 1 :] if ends else []
        verdict.check(
            promise,
            len(ends) <= 1 and not after,
            f"task {_short(task_id)} changed after it ended: "
            + ", ".join(
                f"{w.move} -> {w.record.status} by {w.writer}" for w in [*ends[:1], *after]
            ),
        )
        owners = {w.record.owner for w in writes}
        verdict.check(
            "nothing visible to another caller",
            len(owners) == 1,
            f"task {_short(task_id)} changed owner: {sorted(owners)}",
        )
    for created in history.created:
        record = final.get(created.task_id)
        if record is None:
            continue  # judged under "nothing acknowledged lost"
        ended = record.status in TERMINAL or record.is_expired(end_ms)
        verdict.check(
            promise,
            ended,
            f"acknowledged task {_short(created.task_id)} ({created.tool}) never ended: "
            f"{record.status}, {len(record.input_requests)} open question(s), leg {record.leg}",
        )
    for seen in history.seen:
        record = final.get(seen.task_id)
        if record is None or seen.status not in TERMINAL:
            continue
        expected = shown(record, seen.via)
        verdict.check(
            promise,
            seen.status == expected,
            f"task {_short(seen.task_id)} was shown {seen.status} ({seen.via} at "
            f"#{seen.answered}) but ended {expected}",
        )


def _cancel_wins(
    verdict: Verdict, history: History, trail: dict[str, list[Landed]], final: dict[str, TaskRecord]
) -> None:
    for cancel in history.cancelled:
        if not cancel.acknowledged:
            continue
        record = final.get(cancel.task_id)
        if record is None:
            continue
        if record.status == "cancelled":
            verdict.check("cancel wins", True, "")
            continue
        ends = [w for w in trail.get(cancel.task_id, []) if w.record.status in TERMINAL]
        ended_first = bool(ends) and ends[0].seq < cancel.answered
        verdict.check(
            "cancel wins",
            ended_first,
            f"task {_short(cancel.task_id)}: a cancel acknowledged at #{cancel.answered} "
            f"({cancel.via}) but the task ended {record.status}"
            + (f" at #{ends[0].seq} by {ends[0].writer}" if ends else ""),
        )
        if cancel.shown is not None:
            verdict.check(
                "cancel wins",
                cancel.shown in TERMINAL,
                f"task {_short(cancel.task_id)}: a cancel answered it {cancel.shown}",
            )


def _answers(
    verdict: Verdict, history: History, trail: dict[str, list[Landed]], final: dict[str, TaskRecord]
) -> None:
    promise = "answers at most once"
    sent: dict[str, list[Answered]] = {}
    for answered in history.answered:
        sent.setdefault(answered.task_id, []).append(answered)
    for task_id, writes in trail.items():
        recorded: dict[str, str] = {}
        for write in writes:
            for key, answer in write.record.answers.items():
                if key.startswith(STEP_PREFIX):
                    continue
                value = _value(answer)
                before = recorded.setdefault(key, value)
                verdict.check(
                    promise,
                    before == value,
                    f"task {_short(task_id)}: the answer to {key} changed from "
                    f"{before} to {value} ({write.move} by {write.writer})",
                )
        for before, write in itertools.pairwise(writes):
            # A tool ends only past its questions: a leg that completes a task while a
            # question it asked is open ran on a stale journal (a declared workflow's own end
            # may come while it asks: it is not a leg).
            asking = before.record.status == "input_required" and before.record.input_requests
            verdict.check(
                promise,
                not (
                    asking and write.record.status == "completed" and write.record.run != "workflow"
                ),
                f"task {_short(task_id)} was completed ({write.writer}) while its question(s) "
                f"{sorted(before.record.input_requests)} were open",
            )
        record = final.get(task_id)
        if record is None:
            continue
        stored = {k for k in record.answers if not k.startswith(STEP_PREFIX)}
        verdict.check(
            promise,
            stored <= record.asked_keys,
            f"task {_short(task_id)} stored answers to keys never asked: "
            f"{sorted(stored - record.asked_keys)}",
        )
        senders = sent.get(task_id, [])
        for key, value in recorded.items():
            origin = [a for a in senders if a.answers.get(key) == value]
            acked_first = [a for a in senders if key in a.answers and a.acknowledged]
            if not origin:
                verdict.check(
                    promise, False, f"task {_short(task_id)}: {key}={value} was never sent"
                )
                continue
            first_sent = min(a.sent for a in origin)
            earlier = [
                a for a in acked_first if a.answered < first_sent and a.answers[key] != value
            ]
            verdict.check(
                promise,
                not earlier,
                f"task {_short(task_id)}: {key}={value} (sent #{first_sent}) replaced the answer "
                f"{earlier[0].answers[key] if earlier else ''} acknowledged at "
                f"#{earlier[0].answered if earlier else ''}",
            )
        _answers_used(verdict, task_id, record)


def _answers_used(verdict: Verdict, task_id: str, record: TaskRecord) -> None:
    promise = "answers at most once"
    if record.status == "failed":
        message = (record.error or {}).get("message")
        verdict.check(promise, bool(message), f"task {_short(task_id)} failed without saying why")
        return
    if record.status != "completed" or record.result is None:
        return
    used = _answers_of_result(record.result)
    if used is None:
        return
    answers = {k: _value(v) for k, v in record.answers.items() if not k.startswith(STEP_PREFIX)}
    if "approve" in used:
        asked = sorted((k for k in answers if k.startswith("ask-")), key=lambda k: int(k[4:]))
        expected = answers[asked[-1]] if asked else None
        verdict.check(
            promise,
            used["approve"] == str(expected),
            f"task {_short(task_id)}: the workflow got {used['approve']}, its last "
            f"question's answer is {expected}",
        )
        return
    for key in sorted({*used, *answers}):
        verdict.check(
            promise,
            answers.get(key) == used.get(key),
            f"task {_short(task_id)} completed with {key}={used.get(key)}, but {key} "
            f"was answered {answers.get(key)}",
        )


def _answers_of_result(result: dict[str, Any]) -> dict[str, str] | None:
    structured = result.get("structuredContent")
    if isinstance(structured, dict) and "approved" in structured:
        return {"approve": str(structured["approved"])}
    for block in result.get("content") or []:
        text = block.get("text") if isinstance(block, dict) else None
        try:
            parsed = json.loads(text) if isinstance(text, str) else None
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and "answers" in parsed:
            return {str(k): str(v) for k, v in parsed["answers"].items()}
    return None


def _steps(verdict: Verdict, trail: dict[str, list[Landed]], effects: Iterable[Any]) -> None:
    runs: dict[tuple[str, str], list[Any]] = {}
    for effect in effects:
        runs.setdefault((effect.task_id, effect.step), []).append(effect)
    for (task_id, step), done in runs.items():
        key = f"{STEP_PREFIX}{step}"
        recorded = [w.seq for w in trail.get(task_id, []) if key in w.record.answers]
        first_recorded = min(recorded) if recorded else None
        for again in done[1:]:
            late = first_recorded is not None and first_recorded < again.seq
            verdict.check(
                "steps at most once",
                not late,
                f"task {_short(task_id)}: step {step} ran again ({again.writer}) after "
                f"its result was recorded at #{first_recorded}",
            )
            if not late:
                verdict.measured[f"step ran again before its result was recorded ({step})"] += 1
        verdict.checks["steps at most once"] += 1


def _nothing_lost(verdict: Verdict, history: History, final: dict[str, TaskRecord]) -> None:
    promise = "nothing acknowledged lost"
    acked = {c.task_id: c for c in history.created}
    for created in history.created:
        verdict.check(
            promise,
            created.task_id in final,
            f"acknowledged task {_short(created.task_id)} is not in the store",
        )
    for missing in history.missing:
        created = acked.get(missing.task_id)
        if created is None or created.principal != missing.principal:
            continue
        if missing.sent < created.answered:
            continue
        record = final.get(missing.task_id)
        expires = record.expires_at if record is not None else None
        really = expires is not None and expires * 1000 <= _ms_of(history, missing.answered)
        verdict.check(
            promise,
            missing.expired and really,
            f"task {_short(missing.task_id)} acknowledged at #{created.answered} was "
            f"answered {'expired' if missing.expired else 'not found'} at "
            f"#{missing.answered} ({missing.via})",
        )


def _ms_of(history: History, seq: int) -> int:
    for exchange in history.exchanges:
        if exchange.answered == seq:
            return exchange.answered_ms
    return 0


def _isolation(verdict: Verdict, history: History, final: dict[str, TaskRecord]) -> None:
    for probe in history.probes:
        verdict.check(
            "nothing visible to another caller",
            probe.answer == probe.unknown_answer,
            f"{probe.principal} asked {probe.method} of another caller's task "
            f"{_short(probe.task_id)} and got {probe.answer!r}, not {probe.unknown_answer!r}",
        )


def _reads(verdict: Verdict, history: History, trail: dict[str, list[Landed]]) -> None:
    promise = "read your writes"
    for seen in history.seen:
        writes = trail.get(seen.task_id, [])
        if not writes:
            continue
        before = [w for w in writes if w.seq < seen.sent]
        during = [w for w in writes if seen.sent < w.seq < seen.answered]
        candidates = ([before[-1]] if before else []) + during
        states = {shown(w.record, seen.via) for w in candidates}
        open_sets = [frozenset(w.record.input_requests) for w in candidates]
        verdict.check(
            promise,
            seen.status in states,
            f"task {_short(seen.task_id)} was shown {seen.status} ({seen.via}, #{seen.sent}-"
            f"#{seen.answered}); it was {sorted(states) or 'not there'} then",
        )
        if seen.status == "input_required" and not seen.via.startswith("legacy"):
            verdict.check(
                promise,
                any(seen.open_keys == keys for keys in open_sets),
                f"task {_short(seen.task_id)} was shown asking {sorted(seen.open_keys)} "
                f"({seen.via}, #{seen.sent}); it asked {[sorted(k) for k in open_sets]} then",
            )


def _at_rest(
    verdict: Verdict,
    history: History,
    trail: dict[str, list[Landed]],
    final: dict[str, TaskRecord],
    end_ms: int,
    at_rest: bool,
) -> None:
    promise = "nothing left working"
    verdict.check(promise, at_rest, "the world did not come to rest (settling never ended)")
    for task_id, writes in trail.items():
        for write in writes:
            if not write.writer.startswith("SweepFunction") or write.record.status not in TERMINAL:
                continue
            verdict.check(
                promise,
                not write.running,
                f"task {_short(task_id)} was ended by the sweeper while its execution "
                f"ran ({', '.join(a.rsplit(':', 2)[-2] for a in sorted(write.running))})",
            )
    acked = {c.task_id for c in history.created}
    for task_id, record in final.items():
        if task_id in acked:
            continue  # judged under "exactly one end"
        verdict.check(
            promise,
            record.status in TERMINAL or record.is_expired(end_ms),
            f"task {_short(task_id)} ({record.tool}, never acknowledged) is still "
            f"{record.status} past the sweeper's bound",
        )


def describe(verdict: Verdict) -> list[str]:
    return [f"{promise}: {why}" for promise, why in verdict.violations]


__all__ = ["PROMISES", "Seen", "Verdict", "describe", "judge"]
