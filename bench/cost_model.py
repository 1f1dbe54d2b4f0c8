"""The cost model of `costs.py`: prices, the four cases, the clients' schedules, a task's bill.

Pure code: what one path's operations cost is measured by `costs.py` (`Measured`); this module
turns it into what one task of each case costs, line by line (`Bill`), by simulating the
client's schedule with the server's own poll-interval rule and the extension's listen windows.

Listening is simulated under two server rules (`Listening`):
- `HOLDING` (before): every buffered window holds up to its length (20 s) for a change, and the
  client listens again at once after a window that delivered anything (the snapshot included);
- `PACED` (now, `tasks.watch`): a buffered window holds only while the task is young (polled at
  its floor interval, the first 10 s) and not at all while it waits for input; after a window
  with no news the client waits the task's `pollIntervalMs` (cut short by its own answer).
Each simulated listen also checks the delivery delay of every change against the poll step in
force when it happened (`Latency`): the store read step while a window holds, the task's
poll interval otherwise.

Each function role (API, worker) has its own memory size (`Memory`): a measured CPU overhead
is billed for its time on a full core x 1769 / MB (a function has MB / 1769 of a vCPU), a wait
(a tool's sleep, a window holding) for its wall time, and GB-s at the role's size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mcp_tasks_aws.config import Settings
from mcp_tasks_aws.tasks.model import floor_interval_age_ms, suggested_poll_interval

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
    # SnapStart for Python (since its November 2024 launch): the snapshot cached per published
    # version, per GB of function memory and second it exists; a restore, per GB restored.
    "snapstart_cache_gb_s": 0.0000015046,
    "snapstart_restore_gb": 0.0001397998,
}
MEMORY_MB = 512  # template.yaml: ApiMemorySize and WorkerMemorySize default
FULL_CORE_MB = 1769  # Lambda gives one vCPU at 1769 MB
CPU_SCALE = FULL_CORE_MB / MEMORY_MB
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


@dataclass(frozen=True)
class Memory:
    """Memory sizes (MB) of the two function roles."""

    api: int = MEMORY_MB
    worker: int = MEMORY_MB

    def label(self) -> str:
        return f"API {self.api} MB, worker {self.worker} MB"


DEFAULT_MEMORY = Memory()


@dataclass
class Op:
    """One kind of invocation: its median duration and the calls it made."""

    seconds: float
    calls: list[str]

    def billed_ms(self, waiting_s: float = 0.0, memory_mb: int = MEMORY_MB) -> int:
        scale = FULL_CORE_MB / min(memory_mb, FULL_CORE_MB)
        return math.ceil(self.seconds * 1000 * scale + waiting_s * 1000)


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
    """What one task costs, by line. `add` bills an API invocation (`request`: through API
    Gateway) or, with `request=False`, a worker's."""

    memory: Memory = DEFAULT_MEMORY
    requests: int = 0
    lambda_invocations: int = 0
    lambda_ms: int = 0
    api_ms: int = 0
    worker_ms: int = 0
    wru: int = 0
    rru: int = 0
    transitions: int = 0

    def add(self, op: Op, *, waiting_s: float = 0.0, request: bool = True) -> None:
        self.requests += int(request)
        self.lambda_invocations += 1
        billed = op.billed_ms(waiting_s, self.memory.api if request else self.memory.worker)
        self.lambda_ms += billed
        if request:
            self.api_ms += billed
        else:
            self.worker_ms += billed
        self.wru += sum(1 for c in op.calls if c in ("PutItem", "UpdateItem"))
        self.rru += sum(1 for c in op.calls if c in ("GetItem", "BatchGetItem", "Query"))

    def lines(self) -> dict[str, float]:
        gb_s = (self.api_ms * self.memory.api + self.worker_ms * self.memory.worker) / 1e3 / 1024
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


@dataclass(frozen=True)
class Listening:
    """A server rule for buffered listen windows, and the client's behaviour with it."""

    name: str
    paced: bool
    """True: windows hold only while the task is young and the client waits out windows
    without news (`PACED`); False: the 20 s windows of before (`HOLDING`)."""


HOLDING = Listening("20 s windows (before)", paced=False)
PACED = Listening("paced windows (now)", paced=True)
YOUNG_UNTIL_S = floor_interval_age_ms(FLOOR_MS, CEILING_MS) or 0
YOUNG_UNTIL_S /= 1000  # polled at the floor interval until this age


@dataclass
class Latency:
    """The worst delivery delay of a status change in a simulated listen, against the poll
    step in force when it happened."""

    worst_s: float = 0.0
    worst_ratio: float = 0.0

    def seen(self, changed_at: float, delivered_at: float, step_s: float) -> None:
        delay = max(0.0, delivered_at - changed_at)
        self.worst_s = max(self.worst_s, delay)
        self.worst_ratio = max(self.worst_ratio, delay / step_s)


def _hold_s(line: Timeline, t: float, rule: Listening) -> float:
    """How long a window opened at `t` holds for a change (`tasks.watch`)."""
    if not rule.paced:
        return WINDOW_S
    if line.status(t) != "working":
        return 0.0  # parked for input (or ended): nothing changes until the client acts
    return max(0.0, min(WINDOW_S, YOUNG_UNTIL_S - t))


def windows(
    line: Timeline, rule: Listening = HOLDING, latency: Latency | None = None
) -> list[Window]:
    """The client's listen windows under `rule`. A window ends at the next change it sees (at
    its next store read) or after its hold; it costs one tasks/get unless it brought the final
    state. Under `PACED`, a window without news is followed by the task's poll interval (a
    parked task's is the ceiling), cut short by the client's own answer."""
    changes = sorted(
        x for x in (line.asked_at, line.answered_at, line.ends_at) if x is not None and x > 0
    )
    latency = latency if latency is not None else Latency()
    result: list[Window] = []
    t, known = 0.0, line.status(0.0)
    pending: tuple[float, float] | None = None  # a change not yet delivered: (at, step)
    if line.asked_at == 0.0:
        latency.seen(0.0, 0.0, STORE_POLL_S)  # the first window's snapshot shows the question
    while t < line.ends_at:
        opened_status = line.status(t)
        news = opened_status != known
        if pending is not None and news:
            latency.seen(pending[0], t, pending[1])  # in the snapshot of this window
            pending = None
        known = opened_status
        hold = _hold_s(line, t, rule)
        upcoming = [c for c in changes if c > t]
        if upcoming and upcoming[0] - t <= hold:
            length = min(hold, math.ceil((upcoming[0] - t) / STORE_POLL_S) * STORE_POLL_S)
            length = max(length, upcoming[0] - t)
            seen_status = line.status(t + length)
            if upcoming[0] != line.answered_at:
                latency.seen(upcoming[0], t + length, STORE_POLL_S)
            news = news or seen_status != known
            known = seen_status
        else:
            length = hold
        final = line.status(t + length) == "completed"
        result.append(Window(length, 0 if final else 1))
        t += length
        if final or not rule.paced or news:
            if not rule.paced and not final and length == 0:
                t += hint(known, t, True)  # a quick window without news: poll's pace
            continue
        pause = hint(known, t, True)
        woken = line.answered_at is not None and t < line.answered_at < t + pause
        step = pause
        nxt = [c for c in changes if t < c <= t + pause and c != line.answered_at]
        if nxt:
            pending = (nxt[0], step)
        t = line.answered_at if woken and line.answered_at is not None else t + pause
    if pending is not None:
        latency.seen(pending[0], t, pending[1])
    return result


def bill(
    case: Case,
    m: Measured,
    path: str,
    adaptive: bool = True,
    *,
    rule: Listening = PACED,
    memory: Memory = DEFAULT_MEMORY,
    latency: Latency | None = None,
) -> Bill:
    line = timeline(case)
    b = Bill(memory=memory, transitions=m.transitions_input if case.asks else m.transitions_plain)
    bill_work(b, case, m)
    if case.listening:
        for window in windows(line, rule, latency):
            b.add(m.listen_open, waiting_s=window.length_s)
            b.rru += math.ceil(window.length_s / STORE_POLL_S)
            for _ in range(window.gets):
                b.add(m.get)
    else:
        for _ in range(polls(line, adaptive)):
            b.add(m.get)
    return b


def bill_work(b: Bill, case: Case, m: Measured) -> None:
    """What every client of `case` pays for alike: the create, the legs, the answer."""
    b.add(m.create)
    if case.asks:
        b.add(m.leg_asks, request=False)
        if m.leg_attach is not None:
            b.add(m.leg_attach, request=False)
        b.add(m.update)
        b.add(m.leg_resumed, waiting_s=case.work_s, request=False)
    else:
        b.add(m.leg_done, waiting_s=case.work_s, request=False)


def container_month() -> float:
    fargate = (
        CONTAINER["vcpu"] * PRICES["fargate_vcpu_h"] + CONTAINER["gb"] * PRICES["fargate_gb_h"]
    )
    alb = PRICES["alb_h"] + CONTAINER["lcu"] * PRICES["alb_lcu_h"]
    return (fargate + alb) * HOURS_A_MONTH


SECONDS_A_MONTH = HOURS_A_MONTH * 3600


@dataclass(frozen=True)
class ColdStarts:
    """What a new execution environment costs, with and without SnapStart (one function)."""

    memory_mb: int
    init_cpu_s: float
    """CPU time (s, one full core) of a first task request from a fresh process."""
    restored_cpu_s: float
    """CPU time of the same from a restored snapshot (after-restore hooks included)."""

    def _gb(self) -> float:
        return self.memory_mb / 1024

    def _billed_s(self, cpu_s: float) -> float:
        return cpu_s * FULL_CORE_MB / min(self.memory_mb, FULL_CORE_MB)

    def without(self) -> float:
        """Per new environment: init and the first request billed as duration."""
        return self._billed_s(self.init_cpu_s) * self._gb() * PRICES["lambda_gb_s"]

    def with_snapstart(self) -> float:
        """Per new environment: the restore charge, and the restored first request's duration."""
        restored = self._billed_s(self.restored_cpu_s) * self._gb() * PRICES["lambda_gb_s"]
        return self._gb() * PRICES["snapstart_restore_gb"] + restored

    def cache_month(self) -> float:
        """The snapshot of one published version, kept a month."""
        return self._gb() * SECONDS_A_MONTH * PRICES["snapstart_cache_gb_s"]

    def latency_s(self, cpu_s: float) -> float:
        """The CPU part of a first request's latency at this memory size."""
        return self._billed_s(cpu_s)
