"""The runs by name: which `Run` class a name means, and which run a new task gets.

`RUNS` is the whole registry: a run's name (what `TaskRecord.run` stores) and where its class
lives, in the order a new task's run is chosen (the first that `serves` the tool wins: the most
particular first). A class is imported when its name is first asked for, so a name can be
checked (a stored item's, `is_run`) without importing any run. A name not in `RUNS` is an
error (`UnknownRun`), never read as another run. Adding a run is one module here and its line.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Final

from mcp_tasks_aws.tasks.exceptions import UnknownRun
from mcp_tasks_aws.tasks.model import TaskRecord
from mcp_tasks_aws.tasks.runs.base import Run, RunPorts

if TYPE_CHECKING:
    from mcp_tasks_aws.tools.registry import ToolSpec

RUNS: Final[Mapping[str, str]] = {
    "durable": "mcp_tasks_aws.tasks.runs.durable:DurableRun",
    "workflow": "mcp_tasks_aws.tasks.runs.workflow:WorkflowRun",
    "direct": "mcp_tasks_aws.tasks.runs.direct:DirectRun",
    "legs": "mcp_tasks_aws.tasks.runs.legs:LegsRun",
}


def is_run(name: str) -> bool:
    """Whether `name` is a run of the registry."""
    return name in RUNS


@cache
def run_class(name: str) -> type[Run]:
    """The class of the run `name` (UnknownRun for a name the registry does not have)."""
    where = RUNS.get(name)
    if where is None:
        raise UnknownRun(name)
    module, _, attribute = where.partition(":")
    found = getattr(importlib.import_module(module), attribute)
    if not (isinstance(found, type) and issubclass(found, Run) and found.name == name):
        raise TypeError(f"{where} is not the Run named {name!r}")
    return found


class Runs:
    """The runs of one function, over the ports it has (`RunPorts`)."""

    def __init__(self, ports: RunPorts) -> None:
        self.ports = ports

    def named(self, name: str) -> Run:
        """The run `name` (UnknownRun if the registry has none)."""
        return run_class(name)(self.ports)

    def of(self, record: TaskRecord) -> Run:
        """The run `record` names."""
        try:
            return self.named(record.run)
        except UnknownRun as exc:
            raise UnknownRun(record.run, record.task_id) from exc

    def for_spec(self, spec: ToolSpec) -> Run:
        """The run a new task of `spec` gets: the first of `RUNS` that serves it here."""
        for name in RUNS:
            if run_class(name).serves(spec, self.ports):
                return self.named(name)
        raise RuntimeError(f"{spec.label}: no run can start its tasks here")
