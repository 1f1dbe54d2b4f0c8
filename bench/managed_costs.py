"""On paper: what a million runs of "one approval, then a 5-minute step" cost three ways.

1. **managed**: a declared Standard machine whose run is the MCP task (examples/managed's
   `deploy`): the client creates the task and polls it with the server's adaptive hints, the
   machine asks through the AskFunction, waits 5 minutes holding no compute (a Wait or a
   service integration), reports once, and its end reaches the reconciler.
2. **python**: the same work as a Python tool on the direct path: the first leg asks and hands
   over to the task runner (5 transitions for one input round), the second leg runs the
   5-minute step inside the worker, billed the whole time.
3. **agentcore**: the same machine behind AgentCore Gateway's Step Functions connector, the
   agent polling DescribeExecution every 5 s (the approval has to be asked by the agent
   outside the workflow). Only the Gateway's InvokeTool fee and the machine's transitions are
   priced: the model tokens of each polling turn, which dominate such a bill, are not.

Prices are `cost_model.PRICES` (dated there) and the Gateway's InvokeTool price below (dated).
Durations are assumptions (`ASSUMED_*`), not measurements: `costs` measures the task paths.
"""

from __future__ import annotations

import argparse

from cost_model import (
    ANSWER_AFTER_S,
    LEG_OVERHEAD_S,
    PRICES,
    PRICES_AS_OF,
    Bill,
    Op,
    Timeline,
    polls,
)

STEP_S = 300.0
GATEWAY_INVOKE = 5.00 / 1e6
GATEWAY_AS_OF = "AgentCore Gateway InvokeTool $5 per million (pricing page as of March 2026)"
AGENT_POLL_S = 5.0
ASSUMED_REQUEST_S = 0.03  # an API request of the task path (CPU time, at one vCPU)
ASSUMED_SMALL_INVOKE_S = 0.03  # an AskFunction ask or report, a reconciler settlement
WORKFLOW_TRANSITIONS = (
    6  # AskApproval, Approved?, ReportDeploying, StepLength?, DeployStep, Deployed
)
PYTHON_TRANSITIONS = 5  # one input round on the direct path (docs/figures.md)
MILLION = 1e6


def _op(*calls: str, seconds: float = ASSUMED_REQUEST_S) -> Op:
    return Op(seconds, list(calls))


def managed() -> Bill:
    line = Timeline(LEG_OVERHEAD_S, ANSWER_AFTER_S, ANSWER_AFTER_S + STEP_S + LEG_OVERHEAD_S)
    bill = Bill(transitions=WORKFLOW_TRANSITIONS)
    bill.add(_op("PutItem", "StartExecution"))
    bill.add(_op("UpdateItem", "SendTaskSuccess"))
    for _ in range(polls(line, adaptive=True)):
        bill.add(_op("GetItem"))
    for _ in ("ask", "report", "reconcile"):  # each reads the task, then one guarded write
        bill.add(_op("GetItem", "UpdateItem", seconds=ASSUMED_SMALL_INVOKE_S), request=False)
    return bill


def python_direct() -> Bill:
    line = Timeline(LEG_OVERHEAD_S, ANSWER_AFTER_S, ANSWER_AFTER_S + STEP_S + LEG_OVERHEAD_S)
    bill = Bill(transitions=PYTHON_TRANSITIONS)
    bill.add(_op("PutItem", "Invoke"))
    bill.add(_op("UpdateItem", "SendTaskSuccess"))
    for _ in range(polls(line, adaptive=True)):
        bill.add(_op("GetItem"))
    small = ASSUMED_SMALL_INVOKE_S
    bill.add(_op("UpdateItem", "UpdateItem", "StartExecution", seconds=small), request=False)
    bill.add(_op("UpdateItem", seconds=small), request=False)  # the execution attaches
    bill.add(_op("UpdateItem", seconds=small), waiting_s=STEP_S, request=False)  # the step
    return bill


def agentcore_polling() -> float:
    """Gateway fees and transitions of one run (model tokens not priced)."""
    calls = 1 + int((ANSWER_AFTER_S + STEP_S) / AGENT_POLL_S)  # start, then a poll each 5 s
    return calls * GATEWAY_INVOKE + (WORKFLOW_TRANSITIONS - 2) * PRICES["sfn_transition"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    return


def main(args: argparse.Namespace) -> int:
    print(f"one approval (answered after {ANSWER_AFTER_S:.0f} s), then a {STEP_S:.0f} s step;")
    print(f"prices: {PRICES_AS_OF}; {GATEWAY_AS_OF}")
    rows = {"managed (declared Standard machine)": managed().total}
    rows["python tool, direct path"] = python_direct().total
    rows["agentcore connector, polled every 5 s"] = agentcore_polling()
    for name, cost in rows.items():
        print(f"  {name:42s} ${cost * MILLION:10.2f} per million runs")
    ratio = rows["managed (declared Standard machine)"] / rows["python tool, direct path"]
    print(f"  managed/python {ratio:.2f} (the 5-minute step holds no compute on the managed path)")
    print("  agentcore: Gateway fees and transitions only; each polling turn also costs the")
    print("  agent's model tokens, not priced here")
    return 0
