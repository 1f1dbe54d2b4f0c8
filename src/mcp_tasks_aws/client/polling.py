"""How long to wait between two `tasks/get` polls: pure code, no I/O, no clock.

This module owns the polling cadence. The server's `pollIntervalMs` is a hint that may change
from one response to the next; the client honours the latest one, within bounds it controls:

- a **floor**: never poll faster than this, whatever the server says (a zero or tiny hint);
- a **cap**: never sleep longer than this, so a huge hint cannot make a waiting client
  unresponsive (the server may rate-limit a client that polls faster than its hint, so keep the
  cap generous);
- **jitter**: each delay is stretched by a random fraction in ``[0, jitter]`` so that many
  clients started together do not poll in lockstep; jitter only ever lengthens the hint, never
  shortens it, and the cap still applies after it;
- without a hint, the delay starts at ``default`` and grows by ``growth`` per poll (up to the
  cap), and the growth restarts from ``default`` whenever the server sends a hint again.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

__all__ = ["Backoff", "PollPolicy"]


@dataclass(frozen=True, kw_only=True)
class PollPolicy:
    """Bounds for the polling cadence (seconds)."""

    floor: float = 0.05
    cap: float = 30.0
    default: float = 1.0
    growth: float = 1.5
    jitter: float = 0.1

    def __post_init__(self) -> None:
        if not 0 < self.floor <= self.cap:
            raise ValueError("PollPolicy needs 0 < floor <= cap")
        if not self.floor <= self.default <= self.cap:
            raise ValueError("PollPolicy needs floor <= default <= cap")
        if self.growth < 1:
            raise ValueError("PollPolicy.growth must be at least 1")
        if not 0 <= self.jitter <= 1:
            raise ValueError("PollPolicy.jitter must be within [0, 1]")

    def backoff(self, rng: random.Random | None = None) -> Backoff:
        """A fresh cadence for one wait."""
        # Jitter only spreads polls out; it needs no cryptographic randomness.
        return Backoff(self, rng if rng is not None else random.Random())  # noqa: S311


@dataclass
class Backoff:
    """The cadence of one wait; call `next_delay` with each response's `pollIntervalMs`."""

    policy: PollPolicy
    rng: random.Random
    _unhinted: float | None = field(default=None, init=False)

    def base_delay(self, poll_interval_ms: int | float | None) -> float:
        """The delay before jitter: the clamped hint, or the growing default without one."""
        policy = self.policy
        if poll_interval_ms is not None and poll_interval_ms >= 0:
            self._unhinted = None
            base = poll_interval_ms / 1000
        else:
            self._unhinted = (
                policy.default if self._unhinted is None else self._unhinted * policy.growth
            )
            base = self._unhinted
        return min(policy.cap, max(policy.floor, base))

    def next_delay(self, poll_interval_ms: int | float | None) -> float:
        """Seconds to sleep before the next poll."""
        base = self.base_delay(poll_interval_ms)
        stretched = base * (1 + self.rng.uniform(0, self.policy.jitter))
        return min(self.policy.cap, stretched)
