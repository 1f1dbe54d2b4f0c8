"""A seeded, deterministic simulation of the whole system: the real domain, server and adapters
over simulated AWS (Lambda's asynchronous queue, Step Functions, EventBridge, the SDK's
retries), with faults at every AWS call, crashes between any two of a function's calls, a
virtual clock, many clients of both protocol eras, and a checker that judges every promise
against the recorded history (docs/simulation.md).

Test machinery only: nothing under `src/` imports it, and no deployed function can.
`make simulate` runs it (`scripts/simulate.py`); `simulation.machine` is the Hypothesis state
machine that drives it.
"""
