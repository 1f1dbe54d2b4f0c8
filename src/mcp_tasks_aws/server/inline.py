"""Inline runs: a `tools/call` or `prompts/get` answered in its request, with MRTR input.

A tool that asks a question answers `input_required` with the outstanding `inputRequests` and a
sealed `requestState` holding the answers so far, the step results (encrypted) and the keys just
asked; the retried call replays the tool with them plus its answers to exactly those keys.

`InlineRunner.run_call` is the one decision both eras share: first whether the caller's token
grants the tool's scopes (`InsufficientScope`, answered 403 by the HTTP edge) and whether every
argument is one the tool knows; then, by the tool's task policy and the request's opt-in, a
call runs inline, becomes a task at once, or runs its prelude inline until
`ctx.run_as_task()` and then becomes a task with the answers gathered so far. A client that did
not opt in gets, for a tool the server would run as a task, the same task answered with a
*handle* (an ordinary result naming it, `server.handles`), or -32021 where handles are off. A
run that reaches the request's deadline answers a tool error saying so, and a result larger
than a task's may be (`tools.result_cap`: Lambda's 6 MB response, escapes included) one
saying that.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from mcp_tasks_aws.protocol import models as m
from mcp_tasks_aws.protocol.errors import (
    InsufficientScope,
    InvalidParams,
    McpError,
    MissingClientCapability,
)
from mcp_tasks_aws.protocol.request_state import RequestStateCodec, SealedRound, digest
from mcp_tasks_aws.server.call import Call, HandleCreator, TaskCreator
from mcp_tasks_aws.tools.context import ToolContext
from mcp_tasks_aws.tools.deadline import DeadlineExceeded, run_within
from mcp_tasks_aws.tools.invoke import (
    check_argument_names,
    check_declared_arguments,
    run_prompt,
    run_tool,
)
from mcp_tasks_aws.tools.journal import STEP_PREFIX, BecomeTask, InputNeeded
from mcp_tasks_aws.tools.registry import TaskPolicy, ToolSet, ToolSpec, text_result
from mcp_tasks_aws.tools.result_cap import capped, refuse_large_prompt

logger = logging.getLogger(__name__)


class InlineRunner:
    """Runs one ToolSet's tools and prompts inside the request that called them."""

    def __init__(
        self,
        toolset: ToolSet,
        *,
        state_codec: RequestStateCodec,
        list_changed: Callable[[str], None] | None = None,
        handles: HandleCreator | None = None,
    ) -> None:
        self.toolset = toolset
        self.state_codec = state_codec
        self.list_changed = list_changed
        self.handles = handles

    def _binding(self, call: Call, name: str, arguments: Any) -> dict[str, Any]:
        return round_binding(call, name, arguments)

    def replay_journal(
        self, call: Call, params: m.InputResponseParams, name: str, arguments: Any
    ) -> dict[str, Any]:
        """The journal a request replays with: what earlier rounds sealed, plus this round's
        answers.

        Client input never reaches step results: `step:` keys in `inputResponses` are always
        dropped. With a state, only the keys it sealed as outstanding (the questions of the
        round that issued it) are taken: sealed answers cannot be rewritten. Without one, the
        client answers up front (nothing was asked yet, so any question may be): that gains it
        nothing it could not get by answering round by round, and each answer is still checked
        against the question it answers.
        """
        responses = {
            key: value
            for key, value in (params.input_responses or {}).items()
            if not key.startswith(STEP_PREFIX)
        }
        if params.request_state is None:
            return responses
        sealed = self.state_codec.open(params.request_state, self._binding(call, name, arguments))
        journal = {**sealed.answers, **sealed.steps}
        for key in sealed.outstanding:
            if key in responses:
                journal[key] = responses[key]
        return journal

    def input_required(
        self, call: Call, name: str, arguments: Any, ctx: ToolContext, need: InputNeeded
    ) -> dict[str, Any]:
        # Only answers the tool consumed travel on; step results travel encrypted.
        consumed = ctx.consumed_answers
        sealed = SealedRound(
            answers={k: v for k, v in consumed.items() if not k.startswith(STEP_PREFIX)},
            steps={k: v for k, v in consumed.items() if k.startswith(STEP_PREFIX)},
            outstanding=frozenset(need.requests),
        )
        state = self.state_codec.seal(self._binding(call, name, arguments), sealed)
        return {
            "resultType": "input_required",
            "inputRequests": need.requests,
            "requestState": state,
        }

    def context(
        self, call: Call, journal: dict[str, Any], *, stop_at_task_boundary: bool = False
    ) -> ToolContext:
        return ToolContext(
            capabilities=call.capabilities,
            principal=call.principal,
            journal=journal,
            log=call.log,
            stop_at_task_boundary=stop_at_task_boundary,
            list_changed=self.list_changed,
            progress=call.progress_sender(),
        )

    def run_call(
        self,
        call: Call,
        params: m.CallToolParams,
        *,
        opted_in: bool,
        creator: TaskCreator | None,
    ) -> dict[str, Any]:
        """A tools/call, inline or as a task, as the tool's policy and the request decide.

        `opted_in` says whether the request accepts a task, and `creator` makes one (None:
        tasks are not configured). The 2026-07-28 entry passes the Tasks extension's opt-in
        and backend; the 2025-11-25 one, `params.task` and a creator of that era's shape.
        """
        spec = self.toolset.tools.get(params.name)
        if spec is None:
            raise InvalidParams(f"Unknown tool: {params.name}")
        # Every era's tools/call passes here once, with the body's name: the tool that runs.
        granted = call.granted_scopes
        if granted is not None and not spec.scopes <= granted:
            raise InsufficientScope(spec.name, spec.scopes, spec.scopes - granted)
        # Before anything runs or a task exists: a misspelt argument would otherwise be dropped.
        check_argument_names(spec, params.arguments)
        handles = self.handles
        # A client that did not opt in gets a handle where the server would run a task.
        handle = handles if handles is not None and not opted_in else None
        if handle is not None and not handle.offered_to(call, spec):
            handle = None
        if spec.task is TaskPolicy.REQUIRED and not opted_in and handle is None:
            raise MissingClientCapability(
                {"extensions": {m.TASKS_EXTENSION: {}}},
                f"Tool {spec.name} runs only as a task: declare the {m.TASKS_EXTENSION} extension",
            )
        # A declared tool's arguments are checked before anything runs or a task exists: a
        # workflow's task has no leg here that could still refuse them.
        check_declared_arguments(spec, params.arguments)
        tasks: TaskCreator | None = handle
        if spec.task is not TaskPolicy.INLINE and opted_in:
            tasks = creator
        if tasks is not None and not spec.prelude:
            return tasks.create(call, spec, params)
        if spec.task is TaskPolicy.REQUIRED and creator is None:
            raise McpError("Tasks are not configured on this server")
        journal = self.replay_journal(call, params, spec.name, params.arguments)
        # With a prelude, the tool runs inline until `ctx.run_as_task()`; its questions are
        # asked through MRTR before the task exists, and their answers go with the task.
        ctx = self.context(call, journal, stop_at_task_boundary=tasks is not None)
        try:
            result = run_within(call.deadline, lambda: run_tool(spec, params.arguments, ctx))
        except DeadlineExceeded:
            return {"resultType": "complete", **_out_of_time(spec, opted_in)}
        except InputNeeded as need:
            return self.input_required(call, spec.name, params.arguments, ctx, need)
        except BecomeTask:
            if tasks is None:  # only raised when stop_at_task_boundary was set
                raise
            return tasks.create(call, spec, params, ctx.consumed_answers)
        # Every era's inline answer, a retried round's included, passes here once.
        return {"resultType": "complete", **capped(spec.name, result, answered="it returned")}

    def get_prompt(self, call: Call, params: m.GetPromptParams) -> dict[str, Any]:
        spec = self.toolset.prompts.get(params.name)
        if spec is None:
            raise InvalidParams(f"Unknown prompt: {params.name}")
        journal = self.replay_journal(call, params, spec.name, params.arguments)
        ctx = self.context(call, journal)
        try:
            result = run_within(call.deadline, lambda: run_prompt(spec, params.arguments, ctx))
        except DeadlineExceeded as exc:
            logger.warning("prompt %s ran out of time inline", spec.name)
            raise McpError(f"Prompt {spec.name} did not finish in time") from exc
        except InputNeeded as need:
            return self.input_required(call, spec.name, params.arguments, ctx, need)
        return {"resultType": "complete", **refuse_large_prompt(spec.name, result)}


def round_binding(call: Call, name: str, arguments: Any) -> dict[str, Any]:
    """What a sealed `requestState` is bound to: the method, the name and arguments it was
    issued for, and the caller (a state replayed elsewhere does not open)."""
    return {
        "m": call.request.method,
        "n": name,
        "a": digest(arguments or {}),
        "p": digest(call.principal),
    }


def _out_of_time(spec: ToolSpec, opted_in: bool) -> dict[str, Any]:
    """The isError result of an inline run stopped at its deadline, saying what to do."""
    logger.warning("tool %s ran out of time inline", spec.name)
    message = f"Tool {spec.name} did not finish in time: an inline call must answer first."
    if spec.task is not TaskPolicy.INLINE and not opted_in:
        message += f" Declare the {m.TASKS_EXTENSION} extension to run it as a task."
    return text_result(message, is_error=True)
