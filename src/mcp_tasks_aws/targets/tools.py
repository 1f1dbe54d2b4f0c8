"""Declared tools: a checked declaration becomes a ToolSet whose tools call their targets.

Every declared tool is a `ToolSpec` with `raw_arguments` (the arguments, checked against the
declared `inputSchema`, reach the target as one dict; a mismatch is -32602 naming the
argument; the schema is closed to arguments it does not name unless it says otherwise:
`targets.declaration.served_input_schema`) and the declared `outputSchema`. What each
target kind does:

- `lambda` sync: inline, Invoke (RequestResponse); the payload is the result, and a
  `FunctionError` an isError result with the function's error type and message.
- `lambda` task: the same call, made by the task's leg (a worker leg).
- `stateMachine` STANDARD: the task *is* its execution (`StateMachineWorkflow`,
  `tasks.workflow`): its output when it SUCCEEDED; else the task fails (or completes with
  isError, for an error the declaration names in `toolErrors`).
- `stateMachine` EXPRESS: inline, StartSyncExecution; answered as Standard, inline.
- `http`: inline, the declared request (`targets.http`) with its auth; a 2xx body is the
  result, any other status an isError result with the status and a cut body.

A target that is missing, throttled or denied answers a JSON-RPC error naming it and the AWS
error code (`TargetCallFailed`; in a task: the task fails with it), never a 500.

The calls go through a `TargetBinding`, which the composition root (`app.App`) binds to the
AWS adapter (`aws.targets.AwsTargets`) and the embedded stack to its local one: the target
logic here never imports boto3.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, Literal

import mcp_tasks_aws.targets.results as results
from mcp_tasks_aws.protocol.errors import INTERNAL_ERROR, McpError
from mcp_tasks_aws.targets.declaration import load_declaration, served_input_schema
from mcp_tasks_aws.targets.models import (
    Declaration,
    HttpTarget,
    LambdaTarget,
    StateMachineTarget,
    ToolDeclaration,
)
from mcp_tasks_aws.targets.ports import TargetCalls
from mcp_tasks_aws.targets.templates import render
from mcp_tasks_aws.tasks.exceptions import TargetUnavailable
from mcp_tasks_aws.tools.context import ToolContext
from mcp_tasks_aws.tools.registry import ToolSet
from mcp_tasks_aws.tools.result_cap import capped
from mcp_tasks_aws.tools.specs import TaskPolicy, ToolResult, ToolSpec

LOGGED_CAUSE_CHARS: Final = 32 * 1024
logger = logging.getLogger(__name__)
_WORKFLOW_ENDS: Final = {"FAILED": "failed", "TIMED_OUT": "timed out", "ABORTED": "was aborted"}


class TargetCallFailed(McpError):
    """A declared target could not be called (missing, throttled, denied, unreachable): a
    JSON-RPC error naming the target and the AWS error code (HTTP 200, never a 5xx)."""

    code = INTERNAL_ERROR


class TargetBinding:
    """Where a declaration's tools send their calls; bound once, before the first call."""

    def __init__(self, declaration: Declaration) -> None:
        self.declaration = declaration
        self._calls: TargetCalls | None = None
        self._lock = threading.Lock()

    @property
    def bound(self) -> bool:
        return self._calls is not None

    def bind(self, calls: TargetCalls) -> None:
        with self._lock:
            self._calls = calls

    def bind_if_unbound(self, make: Callable[[], TargetCalls]) -> None:
        with self._lock:
            if self._calls is None:
                self._calls = make()

    @property
    def calls(self) -> TargetCalls:
        if self._calls is None:
            raise RuntimeError("declared tools are not bound to AWS (App binds them)")
        return self._calls


class DeclaredCall:
    """A declared tool's function: `fn(arguments, ctx)` -> ToolResult (see `ToolSpec`)."""

    def __init__(
        self, tool: ToolDeclaration, binding: TargetBinding, run: Callable[..., dict[str, Any]]
    ) -> None:
        self.tool = tool
        self.binding = binding
        self._run = run
        self.__name__ = tool.name
        self.__doc__ = tool.description

    def __call__(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            wire = capped(self.tool.name, self._run(self.binding.calls, arguments, ctx))
        except TargetUnavailable as exc:
            raise TargetCallFailed(f"Tool {self.tool.name}: {exc.message}") from exc
        return ToolResult(
            content=wire.get("content", []),
            structured_content=wire.get("structuredContent"),
            is_error=wire.get("isError") is True,
        )


def declared_tools(path: str | Path, *, base: Path | None = None) -> ToolSet:
    """The ToolSet of the declaration at `path` (DeclarationError if it cannot be served).

    Mix it into a code tool set with `tools.include(declared_tools("managed.yaml"))`.
    """
    return toolset_of(load_declaration(path, base))


def toolset_of(declaration: Declaration) -> ToolSet:
    toolset = ToolSet(name=declaration.name or "mcp-tasks-aws")
    binding = TargetBinding(declaration)
    for tool in declaration.tools:
        toolset.tools[tool.name] = _spec(tool, binding)
    return toolset


def bindings_of(toolset: ToolSet) -> list[TargetBinding]:
    """The target bindings of a tool set's declared tools (one per declaration included)."""
    found: dict[int, TargetBinding] = {}
    for spec in toolset.tools.values():
        if isinstance(spec.fn, DeclaredCall):
            found.setdefault(id(spec.fn.binding), spec.fn.binding)
    return list(found.values())


def _spec(tool: ToolDeclaration, binding: TargetBinding) -> ToolSpec:
    target = tool.target
    workflow = None
    if isinstance(target, LambdaTarget):
        run = _lambda_runner(tool, target)
    elif isinstance(target, StateMachineTarget):
        if target.type == "STANDARD":
            workflow = StateMachineWorkflow(tool, target)
            run = _no_leg(tool)
        else:
            run = _express_runner(tool, target)
    else:
        run = _http_runner(tool, target)
    return ToolSpec(
        fn=DeclaredCall(tool, binding, run),
        name=tool.name,
        description=tool.description,
        title=tool.title,
        param_docs={},
        task=TaskPolicy(tool.task_policy),
        ttl_ms=tool.ttl_ms,
        poll_interval_ms=tool.poll_interval_ms,
        annotations=tool.annotations,
        handwritten_schema=served_input_schema(tool.input_schema),
        scopes=frozenset(tool.scopes),
        max_poll_interval_ms=tool.max_poll_interval_ms,
        raw_arguments=True,
        declared_output_schema=tool.output_schema,
        workflow=workflow,
    )


def _values(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """What a template may use: the arguments, all of them as `arguments`, the task id."""
    values: dict[str, Any] = {**arguments, "arguments": arguments}
    if ctx.task_id is not None:
        values["taskId"] = ctx.task_id
    return values


# -- lambda ------------------------------------------------------------------------------------


def _lambda_runner(tool: ToolDeclaration, target: LambdaTarget) -> Callable[..., dict[str, Any]]:
    def run(calls: TargetCalls, arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        values = _values(arguments, ctx)
        event = arguments if target.payload is None else render(target.payload, values)
        invoked = calls.invoke(
            target.unqualified, target.effective_qualifier, json.dumps(event).encode()
        )
        if invoked.function_error is not None:
            return results.function_error_result(target.function_name, invoked.payload)
        return results.value_result(tool.name, results.parsed(invoked.payload), tool.output_schema)

    return run


# -- state machines ----------------------------------------------------------------------------


class StateMachineWorkflow:
    """A Standard machine whose execution is a task's work (`tools.specs.Workflow`)."""

    def __init__(self, tool: ToolDeclaration, target: StateMachineTarget) -> None:
        self.tool = tool
        self.target = target

    @property
    def machine_arn(self) -> str:
        return self.target.arn

    def execution_input(self, task_id: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return execution_input(self.target, task_id, arguments)

    def result_of(self, output: Any) -> dict[str, Any]:
        return results.value_result(self.tool.name, output, self.tool.output_schema)

    def failure_of(
        self, status: str, error: str | None, cause: str | None
    ) -> tuple[Literal["result", "error"], dict[str, Any]]:
        return workflow_failure(self.tool, self.target, status, error, cause)


def execution_input(
    target: StateMachineTarget, task_id: str | None, arguments: dict[str, Any]
) -> dict[str, Any]:
    """The execution's input: the template filled, or `{"taskId", "arguments"}`."""
    if target.input is None:
        payload: dict[str, Any] = {"arguments": arguments}
        if task_id is not None:
            payload["taskId"] = task_id
        return payload
    values: dict[str, Any] = {**arguments, "arguments": arguments}
    if task_id is not None:
        values["taskId"] = task_id
    rendered = render(target.input, values)
    return rendered if isinstance(rendered, dict) else {"input": rendered}


def workflow_failure(
    tool: ToolDeclaration,
    target: StateMachineTarget,
    status: str,
    error: str | None,
    cause: str | None,
) -> tuple[Literal["result", "error"], dict[str, Any]]:
    """An execution that did not succeed: a tool error when its error is one the declaration
    names (`toolErrors`), else the task's JSON-RPC error carrying the error and the cause.

    The client reads the error name and one cut line of the cause (`results.cause_message`:
    a Lambda state's stack trace never reaches it); the whole cause goes to the log."""
    cut = results.cause_message(cause) or ""
    if cause and cause.strip() != cut:
        # Step Functions' own errors (`States.*`: a path not found, a bad parameter) quote the
        # state's input, which may hold users' answers: only a workflow's own errors are logged
        # whole (a Lambda state's stack trace, say), bounded.
        own = error is not None and error.startswith("States.")
        logger.info(
            "tool %s: its workflow ended %s (%s); the client reads a cut cause, %s",
            tool.name,
            status,
            error,
            f"not logged: Step Functions' own ({len(cause)} characters) quotes the state's input"
            if own
            else f"whole here: {cause[:LOGGED_CAUSE_CHARS]}",
        )
    if status == "FAILED" and error is not None and error in target.tool_errors:
        text = f"{error}: {cut}" if cut else error
        return "result", {"content": [{"type": "text", "text": text}], "isError": True}
    how = _WORKFLOW_ENDS.get(status, status.lower())
    message = f"Tool {tool.name}: the workflow {how}" + (f" ({error})" if error else "")
    data = {"status": status, "error": error, "cause": cut or None}
    return "error", {"code": INTERNAL_ERROR, "message": message, "data": data}


def _no_leg(tool: ToolDeclaration) -> Callable[..., dict[str, Any]]:
    def run(calls: TargetCalls, arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        raise McpError(f"Tool {tool.name} runs only as a task (a Standard state machine)")

    return run


def _express_runner(
    tool: ToolDeclaration, target: StateMachineTarget
) -> Callable[..., dict[str, Any]]:
    def run(calls: TargetCalls, arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        payload = execution_input(target, ctx.task_id, arguments)
        ran = calls.run_express(target.arn, json.dumps(payload))
        if ran.status == "SUCCEEDED":
            value = results.parsed((ran.output or "").encode())
            return results.value_result(tool.name, value, tool.output_schema)
        how, outcome = workflow_failure(tool, target, ran.status, ran.error, ran.cause)
        if how == "result":
            return outcome
        raise McpError(outcome["message"], outcome["data"])

    return run


# -- http --------------------------------------------------------------------------------------


def _http_runner(tool: ToolDeclaration, target: HttpTarget) -> Callable[..., dict[str, Any]]:
    def run(calls: TargetCalls, arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        # urllib: on the first HTTP call
        from mcp_tasks_aws.targets.http import MAX_BODY_BYTES, authorise, build_request, redact

        extra = {"taskId": ctx.task_id} if ctx.task_id is not None else {}
        request = build_request(tool.name, target, arguments, extra)  # checked, not yet signed
        request, credentials = authorise(calls, target, request)
        answer = redact(calls.fetch(request), credentials)
        if not 200 <= answer.status < 300:
            return results.http_error_result(
                request.method, request.url, answer.status, answer.body
            )
        if answer.truncated:
            return results.body_too_large_result(
                tool.name, request.method, request.url, answer.status, MAX_BODY_BYTES
            )
        content_type = {k.lower(): v for k, v in answer.headers.items()}.get("content-type")
        value = results.parsed(answer.body, content_type)
        return results.value_result(tool.name, value, tool.output_schema)

    return run
