"""Task handles: long tools for clients that do not speak tasks.

Most hosts negotiate neither the 2026-07-28 Tasks extension nor 2025-11-25 tasks. For them, a
tool the server would run as a task (a task-only tool, or an `optional` one expected to take
longer than the inline budget, `ToolSet.tool(expected_seconds=...)`) answers at once with an
ordinary `CallToolResult`, a *handle*: text a model can follow (started, the task id, which
tool to call next and when), `structuredContent` `{taskId, status, pollIntervalMs}` and the
related-task `_meta`. The task underneath is the same durable task a task-aware client gets
(`server.tasks.create_task`: same record, same caller binding, same runner).

Three *handle tools* follow it, served here (not as user tools) with the caller's principal:

- `task_status(taskId, waitSeconds?)`: the status and `statusMessage`, waiting up to the inline
  budget for a change (a projected read of the task's head per poll); once the task completed,
  the tool's own result, as if the original call had answered; a failed task is an `isError`
  result with the JSON-RPC error's code and message; a cancelled one says so. A task waiting
  for input: the questions the client can answer through its own channel (it declared
  elicitation, sampling or roots for them) are asked as a multi round-trip round on this call
  (`input_required` with a sealed `requestState`; a 2025-11-25 session turns that into
  `elicitation/create` on the POST's stream, `legacy.questions`), and the answers go to the
  task as `tasks/update` would send them; any other question comes back as text with its
  requested schema;
- `task_answer(taskId, answers)`: answers those questions; accepted forms are checked against
  their schema (-32602 naming the field, nothing stored);
- `task_cancel(taskId)`: cancels; cancel wins, as for any task.

Who gets what: a request is *task-aware* when it declared the Tasks extension (2026-07-28, per
request) or carries `params.task` (2025-11-25: a request with it is a task request whatever
its session declared). A plain 2025-11-25 call gets a handle only in a session that did not
declare `tasks` (one that did is shown a task-only tool as `required` and gets -32601 for a
plain call of it, as 2025-11-25 says; an `optional` one runs inline). The handle tools are listed to
requests that did not declare task support (2025-11-25: sessions that did not declare
`tasks`), after the server's own tools, and a tool that answers such clients with a handle is
listed to them without its `outputSchema` (they validate `structuredContent` against it, and a
handle is not that tool's output; the tool's own result comes back through `task_status`,
which declares none).

Answers a task's questions may need from a client that declared nothing: a handle task is
created able to elicit (the model answers through `task_answer`), whatever the call declared.
Nothing of a task's input, answers or result is logged here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from mcp_tasks_aws.protocol import models as m
from mcp_tasks_aws.protocol.era import Era
from mcp_tasks_aws.protocol.errors import INTERNAL_ERROR, InvalidParams
from mcp_tasks_aws.protocol.names import RELATED_TASK_KEY, TASK_POLICY_META
from mcp_tasks_aws.protocol.request_state import RequestStateCodec, SealedRound
from mcp_tasks_aws.server.call import Call
from mcp_tasks_aws.server.inline import round_binding
from mcp_tasks_aws.server.tasks import (
    MAX_RESPONSE_KEYS,
    MAX_RESPONSES_BYTES,
    answered_as_errors,
    create_task,
)
from mcp_tasks_aws.tasks.service import TaskService, TaskView
from mcp_tasks_aws.tasks.watch import PollWindow
from mcp_tasks_aws.tools.journal import ELICIT, LIST_ROOTS, SAMPLE
from mcp_tasks_aws.tools.registry import TaskPolicy, ToolDefinitionError, ToolSet, ToolSpec
from mcp_tasks_aws.tools.signature import check_name

if TYPE_CHECKING:
    from mcp_tasks_aws.tasks.model import TaskRecord

STATUS: Final = "task_status"
ANSWER: Final = "task_answer"
CANCEL: Final = "task_cancel"
HANDLE_TOOLS: Final = (STATUS, ANSWER, CANCEL)
"""The handle tools' names, before the deployment's prefix (`MCP_TASKS_HANDLE_PREFIX`)."""
_FINAL_READ_MARGIN_S: Final = 0.5
"""Time kept, before the request's deadline, for the read that follows a wait."""
_CHANNEL: Final = {ELICIT: "elicitation", SAMPLE: "sampling", LIST_ROOTS: "roots"}
_ANSWER_ACTIONS: Final = ("accept", "decline", "cancel")
_MAX_WAIT_S: Final = 10**9
"""Larger `waitSeconds` are refused (the wait is capped at the inline budget anyway)."""


def declares_tasks(call: Call) -> bool:
    """Whether the request declared task support: the Tasks extension in its `_meta`
    (2026-07-28), or `tasks` among its session's capabilities (2025-11-25)."""
    if call.era is Era.LEGACY:
        return isinstance((call.capabilities.model_extra or {}).get("tasks"), dict)
    return call.capabilities.tasks


class TaskHandles:
    """Handles for one server's tools (`server.call.HandleCreator`), and the handle tools.

    `enabled` is the deployment's setting (a tool's `handles=` overrides it); `budget_ms` is
    the inline budget: how long one answer may take (an `optional` tool expected to run
    longer gets a handle; `task_status` waits at most this long, and never past the
    request's deadline). The handle tools' names are `prefix` + `task_status`, ...; a name
    that is one of the server's tools stops the server at startup.
    """

    def __init__(
        self,
        toolset: ToolSet,
        service: TaskService,
        *,
        state_codec: RequestStateCodec,
        enabled: bool = True,
        prefix: str = "",
        budget_ms: int = 20_000,
        poll_ms: int = 500,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if budget_ms < 0 or poll_ms <= 0:
            raise ValueError("the inline budget must be >= 0 ms and the poll step > 0 ms")
        self.toolset = toolset
        self.service = service
        self.state_codec = state_codec
        self.enabled = enabled
        self.budget_ms = budget_ms
        self.poll_ms = poll_ms
        self.clock = clock
        self.sleep = sleep
        self.status_tool, self.answer_tool, self.cancel_tool = (
            f"{prefix}{name}" for name in HANDLE_TOOLS
        )
        self._serve: dict[str, Callable[[Call, m.CallToolParams], dict[str, Any]]] = {
            self.status_tool: self.status,
            self.answer_tool: self.answer,
            self.cancel_tool: self.cancel,
        }
        self.active = any(self.eligible(spec) for spec in toolset.tools.values())
        """Whether any tool can answer with a handle (else the handle tools are not served)."""
        if self.active:
            self._check_names()

    def _check_names(self) -> None:
        for name in self._serve:
            try:
                check_name("tool", name)
            except ToolDefinitionError as exc:
                raise ToolDefinitionError(
                    f"handle tool {name!r}: {exc} (check MCP_TASKS_HANDLE_PREFIX)"
                ) from exc
            if name in self.toolset.tools:
                raise ToolDefinitionError(
                    f"the handle tool {name!r} has the name of one of the server's tools: "
                    "rename that tool or set MCP_TASKS_HANDLE_PREFIX (such as 'jobs_')"
                )

    # -- who gets a handle ---------------------------------------------------------------------

    def eligible(self, spec: ToolSpec) -> bool:
        """Whether `spec` answers a client without tasks with a handle (its override, else the
        deployment's setting; a task-only tool, or an optional one that is long)."""
        on = spec.handles if spec.handles is not None else self.enabled
        if not on or spec.task is TaskPolicy.INLINE:
            return False
        if spec.task is TaskPolicy.REQUIRED or spec.handles:
            return True
        expected = spec.expected_seconds
        return expected is not None and expected * 1000 > self.budget_ms

    def offered_to(self, call: Call, spec: ToolSpec) -> bool:
        """Whether this call (which did not opt in to a task) gets a handle.

        A 2025-11-25 session that declared `tasks` is shown the tools as they are (a
        task-only tool `required`, no handle tools): what it gets agrees. A plain call of an
        optional tool chose to run it inline, and does; of a task-only tool, it gets the
        -32601 2025-11-25 prescribes for a `required` tool, never a handle naming a tool it
        was not shown.
        """
        if not self.eligible(spec):
            return False
        if call.era is Era.LEGACY:
            return not declares_tasks(call)
        return True

    def listed_to(self, call: Call) -> bool:
        """Whether `tools/list` shows this request the handle tools (and handle listings)."""
        return self.active and not declares_tasks(call)

    # -- tools/list ----------------------------------------------------------------------------

    def listed(self, spec: ToolSpec) -> dict[str, Any]:
        """A server tool as a client that gets handles sees it: a tool that answers it with a
        handle has no `outputSchema` (a handle is not that tool's output)."""
        tool = spec.to_wire()
        if self.eligible(spec):
            tool.pop("outputSchema", None)
        return tool

    def tools(self) -> list[dict[str, Any]]:
        """The handle tools, as `tools/list` shows them."""
        wait = _seconds(self.budget_ms)
        task_id = {
            "type": "string",
            "description": "The task id, as the tool that started the task gave it",
        }
        return [
            _tool(
                self.status_tool,
                "Task status",
                "Follow a background task that another tool started (its result said "
                "'Started task ...'). Answers with the task's status; once the task has "
                "finished, answers with that tool's own result. Pass waitSeconds (at most "
                f"{wait}) to wait for the task to change instead of calling again and again. "
                f"If the task asks a question, the answer says how to reply ({self.answer_tool}).",
                {
                    "taskId": task_id,
                    "waitSeconds": {
                        "type": "number",
                        "minimum": 0,
                        "description": f"Wait up to this many seconds (at most {wait}) for the "
                        "task to change before answering; 0 or absent answers at once",
                    },
                },
                ["taskId"],
                {"readOnlyHint": True, "openWorldHint": False},
            ),
            _tool(
                self.answer_tool,
                "Answer a task's questions",
                f"Answer the questions a background task waits on ({self.status_tool} lists "
                "them, each with its key and the JSON Schema of its form). `answers` maps each "
                'question\'s key to an object whose fields fit its form; {"action": "decline"} '
                "declines a question. A question for a model's reply takes the reply as text. "
                f"Then follow the task with {self.status_tool}.",
                {
                    "taskId": task_id,
                    "answers": {
                        "type": "object",
                        "description": "Question key -> the answer (the form's fields)",
                        "additionalProperties": True,
                    },
                },
                ["taskId", "answers"],
                {"readOnlyHint": False, "destructiveHint": False, "openWorldHint": False},
            ),
            _tool(
                self.cancel_tool,
                "Cancel a task",
                "Stop a background task that another tool started. A cancelled task never "
                "gives its result.",
                {"taskId": task_id},
                ["taskId"],
                {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": False},
            ),
        ]

    # -- the handle ----------------------------------------------------------------------------

    def create(
        self,
        call: Call,
        spec: ToolSpec,
        params: m.CallToolParams,
        journal: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Create the call's task exactly as for a task-aware client; answer its handle."""
        capabilities = call.capabilities.model_dump(mode="json", exclude_none=True)
        # The model answers through task_answer what the client has no channel for.
        capabilities.setdefault("elicitation", {})
        record = create_task(self.service, call, spec, params, journal, capabilities=capabilities)
        task_id = record.task_id
        text = (
            f"Started task {task_id}: the tool {spec.name} runs in the background, so its "
            "result is not ready yet.\n"
            f"{self._follow(task_id)}. Call it again while the task is working. To stop the "
            f"task instead, call `{self.cancel_tool}` with {_json({'taskId': task_id})}."
        )
        return _complete(
            [text],
            {"taskId": task_id, "status": record.status, "pollIntervalMs": record.poll_interval_ms},
            task_id,
        )

    def _follow(self, task_id: str) -> str:
        wait = _seconds(self.budget_ms)
        arguments = {"taskId": task_id, "waitSeconds": wait}
        return (
            f"Next: call `{self.status_tool}` with {_json(arguments)}: it waits up to {wait} s "
            "and answers as soon as the task ends or asks something"
        )

    # -- the handle tools ----------------------------------------------------------------------

    def knows(self, name: str) -> bool:
        return self.active and name in self._serve

    def call_tool(self, call: Call, params: m.CallToolParams) -> dict[str, Any]:
        return self._serve[params.name](call, params)

    def status(self, call: Call, params: m.CallToolParams) -> dict[str, Any]:
        arguments = params.arguments or {}
        task_id = _task_id(arguments)
        wait_s = _wait_seconds(arguments, self.budget_ms)
        owner = call.principal
        with answered_as_errors(call.era):
            if params.request_state is not None:
                # A retried round: the client's answers to the questions it was asked.
                answers = self._sealed_answers(call, params)
                if answers:
                    # First answer wins: a racing status call's answers to the same keys
                    # change nothing.
                    self.service.update(owner, task_id, answers, validate_content=True)
            view = self.service.get(owner, task_id)
            if view.record.visible_status == "working" and wait_s > 0:
                view = self._wait(call, view, wait_s)
        return self._shown(call, params, view, ask=True)

    def answer(self, call: Call, params: m.CallToolParams) -> dict[str, Any]:
        arguments = params.arguments or {}
        task_id = _task_id(arguments)
        given = arguments.get("answers")
        if not isinstance(given, dict) or not given:
            raise InvalidParams("answers: give an object mapping each question's key to its answer")
        if len(given) > MAX_RESPONSE_KEYS:
            raise InvalidParams(f"answers: at most {MAX_RESPONSE_KEYS} at a time")
        if len(json.dumps(given)) > MAX_RESPONSES_BYTES:
            raise InvalidParams("answers: too large; send shorter answers")
        owner = call.principal
        with answered_as_errors(call.era):
            record = self.service.load(owner, task_id)
            if record.status == "input_required" and not record.input_requests:
                # Every question is answered, maybe by this call's first try, whose resume of
                # the execution failed (the client calls again after a 502 or a 503): resume,
                # as a retried tasks/update does. A used token is only reported stale.
                self.service.update(owner, task_id, {}, validate_content=True, loaded=record)
            if record.visible_status != "input_required":
                view = self.service.view(record)
                return self._shown(call, params, view, ask=False, note="It asks nothing now. ")
            open_requests = record.input_requests
            answers = {
                key: _as_answer(key, open_requests[key], value)
                for key, value in given.items()
                if key in open_requests
            }
            ignored = sorted(key for key in given if key not in open_requests)
            if answers:
                self.service.update(owner, task_id, answers, validate_content=True, loaded=record)
            view = self.service.get(owner, task_id)
        note = f"Recorded {len(answers)} answer(s). " if answers else ""
        if ignored:
            note += f"No open question has the key(s) {', '.join(map(repr, ignored))}. "
        return self._shown(call, params, view, ask=False, note=note)

    def cancel(self, call: Call, params: m.CallToolParams) -> dict[str, Any]:
        task_id = _task_id(params.arguments or {})
        with answered_as_errors(call.era):
            record, changed = self.service.cancel(call.principal, task_id)
        status = record.visible_status
        if changed or status == "cancelled":
            text = f"Task {task_id} is cancelled: it stops, and it will give no result."
        else:
            text = (
                f"Task {task_id} had already ended ({status}): there was nothing to cancel. "
                f"Call `{self.status_tool}` with {_json({'taskId': task_id})} for its outcome."
            )
        return _complete([text], self._structured(record, record.poll_interval_ms), task_id)

    # -- waiting and answering -------------------------------------------------------------------

    def _sealed_answers(self, call: Call, params: m.CallToolParams) -> dict[str, Any]:
        """The retried round's answers: only to the keys its sealed state asked."""
        assert params.request_state is not None
        binding = round_binding(call, params.name, params.arguments)
        sealed = self.state_codec.open(params.request_state, binding)
        responses = params.input_responses or {}
        return {key: responses[key] for key in sorted(sealed.outstanding) if key in responses}

    def _wait(self, call: Call, view: TaskView, wait_s: float) -> TaskView:
        """The task once its status changed, or as it is when the wait ends (one projected read
        per poll step; the full record only when it changed)."""
        window_s = min(wait_s, self.budget_ms / 1000)
        if call.deadline is not None:
            window_s = min(window_s, call.deadline - self.clock() - _FINAL_READ_MARGIN_S)
        if window_s <= 0:
            return view
        record = view.record
        window = PollWindow(int(window_s * 1000), self.poll_ms, clock=self.clock, sleep=self.sleep)
        moved = False
        for _ in window.polls():
            head = self.service.peek(call.principal, [record.task_id]).get(record.task_id)
            if head is None:  # expired meanwhile: the read below says so
                moved = True
                break
            moved = moved or head.version != record.version
            if head.status != record.visible_status:
                break
        # A statusMessage written meanwhile is shown; a task unchanged is not read again.
        return self.service.get(call.principal, record.task_id) if moved else view

    def _shown(
        self, call: Call, params: m.CallToolParams, view: TaskView, *, ask: bool, note: str = ""
    ) -> dict[str, Any]:
        """What the handle tools answer for a task as `view` shows it."""
        record = view.record
        task_id, status = record.task_id, record.visible_status
        if status == "completed":
            return _tool_result(view)
        if status == "failed":
            error = record.error or {"code": INTERNAL_ERROR, "message": "Task failed"}
            text = (
                f"{note}Task {task_id} failed: {error.get('message')} "
                f"(JSON-RPC error {error.get('code')})."
            )
            structured = {**self._structured(record, view.poll_interval_ms), "error": error}
            return _complete([text], structured, task_id, is_error=True)
        if status == "cancelled":
            text = f"{note}Task {task_id} was cancelled before it finished: it has no result."
            structured = self._structured(record, view.poll_interval_ms)
            return _complete([text], structured, task_id, is_error=True)
        if status == "input_required":
            requests = record.input_requests
            askable = {k: r for k, r in requests.items() if ask and _can_ask(call, r)}
            if askable:
                return self._ask(call, params, askable)
            return self._questions(record, view.poll_interval_ms, note)
        progress = f" ({record.status_message})" if record.status_message else ""
        every = _seconds(view.poll_interval_ms)
        text = (
            f"{note}Task {task_id} is still working{progress}.\n{self._follow(task_id)} (or call "
            f"it without waitSeconds about every {every} s)."
        )
        return _complete([text], self._structured(record, view.poll_interval_ms), task_id)

    def _ask(
        self, call: Call, params: m.CallToolParams, requests: dict[str, dict[str, Any]]
    ) -> dict[str, Any]:
        """A multi round-trip round on this call, asking the task's questions through the
        client's own channel; the retried call carries the answers (`status`)."""
        binding = round_binding(call, params.name, params.arguments)
        sealed = SealedRound(answers={}, steps={}, outstanding=frozenset(requests))
        return {
            "resultType": "input_required",
            "inputRequests": requests,
            "requestState": self.state_codec.seal(binding, sealed),
        }

    def _questions(self, record: TaskRecord, poll_interval_ms: int, note: str) -> dict[str, Any]:
        """The task's open questions as text a model can answer through `task_answer`."""
        task_id = record.task_id
        lines = [f"{note}Task {task_id} is waiting for answers to {len(record.input_requests)} "]
        lines[0] += "question(s):"
        template: dict[str, Any] = {}
        for key, request in record.input_requests.items():
            line, example = _describe_question(key, request)
            lines.append(line)
            template[key] = example
        lines.append(
            f"Next: call `{self.answer_tool}` with "
            f"{_json({'taskId': task_id, 'answers': template})}, each <...> replaced by your "
            'answer (answer {"action": "decline"} to decline a question).'
        )
        structured = {
            **self._structured(record, poll_interval_ms),
            "inputRequests": record.input_requests,
        }
        return _complete(["\n".join(lines)], structured, task_id)

    @staticmethod
    def _structured(record: TaskRecord, poll_interval_ms: int) -> dict[str, Any]:
        structured: dict[str, Any] = {
            "taskId": record.task_id,
            "status": record.visible_status,
            "pollIntervalMs": poll_interval_ms,
        }
        if record.status_message:
            structured["statusMessage"] = record.status_message
        return structured


# -- pieces ------------------------------------------------------------------------------------


def _tool(
    name: str,
    title: str,
    description: str,
    properties: dict[str, Any],
    required: list[str],
    annotations: dict[str, Any],
) -> dict[str, Any]:
    return {
        "name": name,
        "title": title,
        "description": description,
        "inputSchema": {"type": "object", "properties": properties, "required": required},
        "annotations": annotations,
        "_meta": {TASK_POLICY_META: TaskPolicy.INLINE.value},
    }


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _seconds(ms: float) -> float | int:
    """Milliseconds as seconds, whole when they are (20000 -> 20, 500 -> 0.5)."""
    seconds = round(ms / 1000, 1)
    return int(seconds) if seconds == int(seconds) else seconds


def _complete(
    texts: list[str],
    structured: dict[str, Any],
    task_id: str,
    *,
    is_error: bool = False,
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "resultType": "complete",
        "content": [{"type": "text", "text": text} for text in texts],
        "structuredContent": structured,
        "_meta": {RELATED_TASK_KEY: {"taskId": task_id}},
    }
    if is_error:
        result["isError"] = True
    return result


def _tool_result(view: TaskView) -> dict[str, Any]:
    """The completed task's result, as the original call would have answered."""
    result = dict(view.result or {"content": []})
    meta = {**(result.get("_meta") or {}), RELATED_TASK_KEY: {"taskId": view.record.task_id}}
    return {"resultType": "complete", **result, "_meta": meta}


def _task_id(arguments: dict[str, Any]) -> str:
    task_id = arguments.get("taskId")
    if not isinstance(task_id, str) or not task_id:
        raise InvalidParams("taskId: give the task id (a string) that started the task")
    return task_id


def _wait_seconds(arguments: dict[str, Any], budget_ms: int) -> float:
    raw = arguments.get("waitSeconds", 0)
    if raw is None:
        return 0.0
    # JSON numbers have no bound: an integer past a float's range (or 1e400, parsed as
    # infinity) is refused like any other bad number, compared before any conversion.
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not 0 <= raw < _MAX_WAIT_S:
        raise InvalidParams("waitSeconds: give a number of seconds >= 0")
    return min(float(raw), budget_ms / 1000)


def _can_ask(call: Call, request: dict[str, Any]) -> bool:
    """Whether the client declared the channel this question needs."""
    capability = _CHANNEL.get(str(request.get("method")))
    return capability is not None and getattr(call.capabilities, capability) is not None


def _describe_question(key: str, request: dict[str, Any]) -> tuple[str, Any]:
    """One question as a line of text, and the shape of its answer for `task_answer`."""
    method, params = request.get("method"), request.get("params") or {}
    if method == ELICIT:
        schema = params.get("requestedSchema") or {}
        fields = (schema.get("properties") or {}) if isinstance(schema, dict) else {}
        example = {
            name: f"<{(spec or {}).get('type', 'value')}>" if isinstance(spec, dict) else "<value>"
            for name, spec in fields.items()
        }
        line = f"- `{key}`: {params.get('message', '')}\n  form (JSON Schema): {_json(schema)}"
        return line, example
    if method == SAMPLE:
        asked = " ".join(_texts(params.get("messages")))
        line = f"- `{key}`: the task asks for a model's reply to: {asked}"
        return line, "<your reply, as text>"
    if method == LIST_ROOTS:
        return f"- `{key}`: the task asks for the client's roots (file:// URIs)", ["<file:// URI>"]
    return f"- `{key}`: a {method} request", "<answer>"


def _texts(messages: Any) -> list[str]:
    texts = []
    for message in messages if isinstance(messages, list) else []:
        content = message.get("content") if isinstance(message, dict) else None
        blocks = content if isinstance(content, list) else [content]
        texts += [
            str(b.get("text")) for b in blocks if isinstance(b, dict) and b.get("type") == "text"
        ]
    return texts


def _as_answer(key: str, request: dict[str, Any], value: Any) -> Any:
    """A `task_answer` value as the result of the request it answers (its shape is checked by
    the domain, an accepted form's content against its schema)."""
    method = request.get("method")
    if method == ELICIT:
        whole = isinstance(value, dict) and set(value) <= {"action", "content"}
        if whole and value.get("action") in _ANSWER_ACTIONS:
            return value  # a whole elicitation result
        if not isinstance(value, dict):
            raise InvalidParams(f"answers.{key}: give an object with the form's fields")
        return {"action": "accept", "content": value}
    if method == SAMPLE and isinstance(value, str):
        text = {"type": "text", "text": value}
        return {"role": "assistant", "content": text, "model": "task_answer"}
    if method == LIST_ROOTS and isinstance(value, list) and all(isinstance(u, str) for u in value):
        return {"roots": [{"uri": uri} for uri in value]}
    return value
