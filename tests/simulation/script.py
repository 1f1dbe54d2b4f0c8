"""Schedules written out step by step: a failure the simulation found, kept as a regression
test that does not depend on how the state machine draws its steps (a seed replays only
while the machine draws alike; a script replays for good).

    with Script() as run:
        run.client("m0").does("create", tool="on_machine")
        run.finish("m0")
        run.invoke("mcp-tasks-sim", fault="timeout_after")
        ...
        verdict = run.judged()
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

from simulation.checker import Verdict
from simulation.clients import Client
from simulation.scheduler import Process
from simulation.world import World, WorldConfig


class Script:
    def __init__(self, store: str = "twin") -> None:
        self.world = World(WorldConfig(store=store, seed_bytes=b"script"))

    def __enter__(self) -> Script:
        return self

    def __exit__(
        self, *exc: tuple[type[BaseException] | None, BaseException | None, TracebackType | None]
    ) -> None:
        self.world.close()

    def client(self, name: str) -> Client:
        return next(c for c in self.world.clients if c.name == name)

    def start(self, name: str, operation: str, *, tool: str = "", task: str | None = None) -> None:
        self.world.start(self.client(name), operation, task, tool)

    def process(self, prefix: str, nth: int = 0) -> Process:
        """The `nth` (oldest first) waiting process whose name starts with `prefix`."""
        found = [p for p in self.world.scheduler.blocked() if p.name.startswith(prefix)]
        return found[nth]

    def go(self, prefix: str, fault: str = "ok", *, nth: int = 0, times: int = 1) -> None:
        """The process goes on `times` points (meeting `fault` at the first)."""
        process = self.process(prefix, nth)
        for n in range(times):
            if process.state != "blocked":
                return
            self.world.advance(process, fault if n == 0 else "ok")

    def finish(self, prefix: str, *, nth: int = 0) -> None:
        """The process goes on, without faults, until it ends."""
        process = self.process(prefix, nth)
        while process.state == "blocked":
            self.world.advance(process, "ok")

    def invoke(self, fault: str = "ok", nth: int = 0) -> None:
        """The `nth` execution with something to do does it (its state invokes its
        function, or an invoke's answer is lost)."""
        self.world.act(self.world.sfn.pending()[nth], fault)

    def task_ids(self) -> list[str]:
        return [c.task_id for c in self.world.history.created]

    def judged(self) -> Verdict:
        return self.world.judged()

    def log(self) -> str:
        return "\n".join([*self.world.history.notes, *self.world.history.lines()])


def violations(verdict: Verdict) -> list[str]:
    return [f"{promise}: {why}" for promise, why in verdict.violations]


__all__ = ["Any", "Script", "violations"]
