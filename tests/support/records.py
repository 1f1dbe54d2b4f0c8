"""Task records as a store holds them, made for a test: one `Records.make`, with the defaults of
the tasks a test's caller and tools would create, any field overridden.

- `IN_DOMAIN` (and `make_record`): alice's `echo` from `support.domain`, created at START_MS
  (the domain clock's start).
- `IN_DOMAIN_NOW`: the same, created now by the wall clock (stores that compare expiry
  against the real clock).
- `ON_STACK`: the anonymous caller's `slow_compute` (a conformance tool) on the embedded stack,
  created now.

Each is a fresh `working` task with a one-hour TTL, polled every 100 ms.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from mcp_tasks_aws.tasks.model import TaskRecord, new_task_id
from support import domain, tasks


@dataclass(frozen=True)
class Records:
    """Who created the records, with which tool, arguments and capabilities, and when."""

    owner: str
    tool: str
    arguments: Mapping[str, Any]
    capabilities: dict[str, Any]
    created_at: Callable[[], int]

    def make(self, **overrides: Any) -> TaskRecord:
        """A fresh `working` record (its `updated_at` is its `created_at`) unless overridden."""
        created = self.created_at()
        values: dict[str, Any] = {
            "task_id": new_task_id(),
            "owner": self.owner,
            "tool": self.tool,
            "arguments": copy.deepcopy(dict(self.arguments)),
            "capabilities": self.capabilities,
            "status": "working",
            "created_at": created,
            "updated_at": created,
            "ttl_ms": 3_600_000,
            "poll_interval_ms": 100,
        }
        values.update(overrides)
        return TaskRecord(**values)


IN_DOMAIN = Records(
    owner=domain.ALICE,
    tool="echo",
    arguments={"text": "hi"},
    capabilities=domain.CAPABILITIES,
    created_at=lambda: domain.START_MS,
)
IN_DOMAIN_NOW = replace(IN_DOMAIN, created_at=tasks.now_ms)
ON_STACK = Records(
    owner=tasks.ANONYMOUS,
    tool="slow_compute",
    arguments={"seconds": 0, "label": "record"},
    capabilities=tasks.CAPABILITIES,
    created_at=tasks.now_ms,
)

make_record = IN_DOMAIN.make
