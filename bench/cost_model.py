"""The cost model of `costs.py`: prices, the four cases, the clients' schedules, a task's bill.

Pure code: what one path's operations cost is measured by `costs.py` (`Measured`); this module
turns it into what one task of each case costs, line by line (`Bill`), by simulating the
client's schedule with the server's own poll-interval rule and the extension's listen windows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mcp_tasks_aws.config import Settings
from mcp_tasks_aws.tasks.model import suggested_poll_interval

# -- prices ------------------------------------------------------------------------------------

PRICES_AS_OF = "2025 list prices, us-east-1, no free tier (check the AWS pricing pages)"
PRICES = {
    "apigw_request": 1.00 / 1e6,  # HTTP API, first 300 M requests a month
    "lambda_request": 0.20 / 1e6,
    "lambda_gb_s": 0.0000133334,  # arm64
    "dynamodb_wru": 0.625 / 1e6,  # on-demand, after the November 2024 cut
    "dynamodb_rru": 0.125 / 1e6,
    "sfn_transition": 0.025 / 1000,  # Standard workflows
    "logs_gb": 0.50,  # CloudWatch Logs ingestion
    "fargate_vcpu_h": 0.03238,  # Linux/ARM
    "fargate_gb_h": 0.00356,
    "alb_h": 0.0225,
    "alb_lcu_h": 0.008,
}
MEMORY_MB = 512  # template.yaml, Globals.Function.MemorySize
CPU_SCALE = 1769 / MEMORY_MB  # Lambda gives one vCPU at 1769 MB
LOG_BYTES_PER_INVOCATION = 700  # estimate: START/END/REPORT lines and one structured line
HOURS_A_MONTH = 730
CONTAINER = {"vcpu": 0.25, "gb": 0.5, "lcu": 1.0}

# -- the cases ---------------------------------------------------------------------------------

_SERVER = Settings()  # the server's defaults
FLOOR_MS, CEILING_MS = _SERVER.poll_interval_ms, _SERVER.max_poll_interval_ms
TODAY_MS = 1000  # the fixed interval every task suggested before adaptive polling
WINDOW_S = _SERVER.listen_window_ms / 1000  # a listen window...
STORE_POLL_S = _SERVER.listen_poll_ms / 1000  # ...and how often it reads the store
ANSWER_AFTER_S = 30.0
TARGET_RATIO = 0.25


@dataclass(frozen=True)
class Case:
    number: int
    name: str
    work_s: float
    asks: bool
    listening: bool


CASES = (
    Case(1, "1 s task, no input, polling", 1.0, False, False),
    Case(2, "1 s task, no input, listening", 1.0, False, True),
    Case(3, "5 min task, 1 input round, polling", 300.0, True, False),
    Case(4, "5 min task, 1 input round, listening", 300.0, True, True),
)


@dataclass
class Op:
    """One kind of invocation: its median duration and the calls it made."""

    seconds: float
    calls: list[str]

    def billed_ms(self, waiting_s: float = 0.0) -> int:
        return math.ceil(self.seconds * 1000 * CPU_SCALE + waiting_s * 1000)


@dataclass
class Measured:
    """What one path's operations cost, measured."""

    create: Op
    get: Op
    update: Op
    listen_open: Op
    """A listen window's own work (ack, its first read, close), measured on an ended task;
    the model adds its waiting and one more read per STORE_POLL_S."""
    listen_reads: int
    """Reads the measured window (about 1 s) made, to check the count above against."""
    listen_seconds: float
    leg_done: Op  # a first leg that completes (direct, or the execution's)
    leg_asks: Op  # a first leg that asks (direct: hands over; execution: parks)
    leg_attach: Op | None  # the execution's leg that only attaches its token (direct path)
    leg_resumed: Op
    transitions_plain: int
    transitions_input: int


# -- the model -----------------------------------------------------------------------------------


@dataclass
class Bill:
    """What one task costs, by line."""

    requests: int = 0
    lambda_invocations: int = 0
    lambda_ms: int = 0
    wru: int = 0
    rru: int = 0
    transitions: int = 0

    def add(self, op: Op, *, waiting_s: float = 0.0, request: bool = True) -> None:
        self.requests += int(request)
        self.lambda_invocations += 1
        self.lambda_ms += op.billed_ms(waiting_s)
        self.wru += sum(1 for c in op.calls if c in ("PutItem", "UpdateItem"))
        self.rru += sum(1 for c in op.calls if c in ("GetItem", "BatchGetItem", "Query"))

    def lines(self) -> dict[str, float]:
        gb_s = self.lambda_ms / 1000 * MEMORY_MB / 1024
        logs_gb = self.lambda_invocations * LOG_BYTES_PER_INVOCATION / 1e9
        return {
            "API Gateway": self.requests * PRICES["apigw_request"],
            "Lambda requests": self.lambda_invocations * PRICES["lambda_request"],
            "Lambda GB-s": gb_s * PRICES["lambda_gb_s"],
            "DynamoDB": self.wru * PRICES["dynamodb_wru"] + self.rru * PRICES["dynamodb_rru"],
            "Step Functions": self.transitions * PRICES["sfn_transition"],
            "Logs (est.)": logs_gb * PRICES["logs_gb"],
        }

    @property
    def total(self) -> float:
        return sum(self.lines().values())


@dataclass
class Timeline:
    """When the task's shown status changes (seconds from creation)."""

    asked_at: float | None  # input_required from here...
    answered_at: float | None  # ...until the answer (the client then polls at once)
    ends_at: float

    def status(self, t: float) -> str:
        if t >= self.ends_at:
            return "completed"
        asked, answered = self.asked_at, self.answered_at
        if asked is not None and answered is not None and asked <= t < answered:
            return "input_required"
        return "working"


LEG_OVERHEAD_S = 0.1
"""Assumed time from the create to the leg's start, plus writing the outcome (on AWS)."""


def timeline(case: Case) -> Timeline:
    if not case.asks:
        return Timeline(None, None, case.work_s + LEG_OVERHEAD_S)
    return Timeline(0.0, ANSWER_AFTER_S, ANSWER_AFTER_S + case.work_s + LEG_OVERHEAD_S)


def hint(status: str, age_s: float, adaptive: bool) -> float:
    """The server's pollIntervalMs, in seconds (see `TaskRecord.poll_interval_at`)."""
    if not adaptive:
        return TODAY_MS / 1000
    if status != "working":
        return CEILING_MS / 1000
    return suggested_poll_interval(int(age_s * 1000), FLOOR_MS, CEILING_MS) / 1000


def polls(line: Timeline, adaptive: bool) -> int:
    """tasks/get requests of a client that sleeps each hint, and looks at once after answering."""
    t, count = 0.0, 0
    delay = hint("working", 0.0, adaptive)  # CreateTaskResult's
    answered = False
    while True:
        t += delay
        if line.answered_at is not None and not answered and t >= line.answered_at:
            t, answered = line.answered_at, True  # the answer is sent, the wait wakes
        count += 1
        status = line.status(t)
        if status == "completed":
            return count
        delay = hint(status, t, adaptive)


@dataclass
class Window:
    length_s: float
    gets: int


def windows(line: Timeline) -> list[Window]:
    """The client's listen windows: each ends at the next change (seen at the next store
    read) or after WINDOW_S; each costs one tasks/get unless it brought the final state."""
    changes = sorted(
        x for x in (line.asked_at, line.answered_at, line.ends_at) if x is not None and x > 0
    )
    result, t = [], 0.0
    while t < line.ends_at:
        upcoming = [c for c in changes if c > t]
        seen = math.ceil((upcoming[0] - t) / STORE_POLL_S) * STORE_POLL_S if upcoming else WINDOW_S
        length = min(WINDOW_S, seen)
        final = line.status(t + length) == "completed"
        result.append(Window(length, 0 if final else 1))
        t += length
    return result


def bill(case: Case, m: Measured, path: str, adaptive: bool = True) -> Bill:
    line = timeline(case)
    b = Bill(transitions=m.transitions_input if case.asks else m.transitions_plain)
    b.add(m.create)
    if case.asks:
        b.add(m.leg_asks, request=False)
        if m.leg_attach is not None:
            b.add(m.leg_attach, request=False)
        b.add(m.update)
        b.add(m.leg_resumed, waiting_s=case.work_s, request=False)
    else:
        b.add(m.leg_done, waiting_s=case.work_s, request=False)
    if case.listening:
        for window in windows(line):
            b.add(m.listen_open, waiting_s=window.length_s)
            b.rru += math.ceil(window.length_s / STORE_POLL_S)
            for _ in range(window.gets):
                b.add(m.get)
    else:
        for _ in range(polls(line, adaptive)):
            b.add(m.get)
    return b


def container_month() -> float:
    fargate = (
        CONTAINER["vcpu"] * PRICES["fargate_vcpu_h"] + CONTAINER["gb"] * PRICES["fargate_gb_h"]
    )
    alb = PRICES["alb_h"] + CONTAINER["lcu"] * PRICES["alb_lcu_h"]
    return (fargate + alb) * HOURS_A_MONTH
