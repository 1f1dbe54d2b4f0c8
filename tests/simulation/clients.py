"""Clients of both protocol eras, as well-behaved clients are: each does one operation at a
time, retries a request the gateway or the server could not serve (502: the function crashed;
503 with Retry-After: busy) after a pause, as often as it takes, and records what it learnt.

- `modern` (2026-07-28 with the Tasks extension): `tools/call` (a task), `tasks/get`,
  `tasks/update` (fresh answers, a duplicate of its last update, or a stale key),
  `tasks/cancel`, `subscriptions/listen`;
- `legacy` (2025-11-25): `initialize`, `tools/call` with `params.task`, `tasks/get` on SSE
  (which carries a task's open questions), its answers as JSON-RPC responses, `tasks/cancel`,
  `tasks/result`;
- `handles` (2026-07-28 without tasks): the handle a task tool answers, then `task_status`,
  `task_answer`, `task_cancel`.

Every answer a client sends carries a value no one else sends (`<client>.<n>`), so the
checker can tell which answer a task used. Nothing here looks at the store.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcp_tasks_aws.protocol.transport import HttpRequest
from simulation.history import Answered, Cancelled, Created, Missing, Probe, Seen
from support.legacy import LEGACY_VERSION, messages
from support.mcp import CAPABILITIES_KEY, PROTOCOL_VERSION, TASKS_EXTENSION, VERSION_KEY

if TYPE_CHECKING:
    from simulation.world import World

PRINCIPALS = ("jwt:|alice|", "jwt:|bob|")
MODERN_CAPABILITIES: dict[str, Any] = {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}
RETRYABLE = frozenset({502, 503, 504})
BACKOFF_S = (0.5, 1.0, 2.0, 4.0, 8.0)
STALE_KEY = "never-asked"
UNKNOWN_TASK = "0" * 31 + "1"
"""An id no task has: what a foreign task must answer exactly like."""


@dataclass
class Knowledge:
    """What a client knows of a task from what it was shown."""

    open_keys: frozenset[str] = frozenset()
    asked: set[str] = field(default_factory=set)
    last_answers: dict[str, Any] | None = None
    questions: list[tuple[Any, str]] = field(default_factory=list)
    """2025-11-25: questions sent to this client (request id, message), newest last."""
    answered_questions: list[tuple[Any, str]] = field(default_factory=list)


class Client:
    def __init__(self, world: World, name: str, principal: str, era: str) -> None:
        self.world = world
        self.name = name
        self.principal = principal
        self.era = era
        self.busy = False
        self.known: dict[str, Knowledge] = {}
        self.session: str | None = None
        self._values = 0
        self._rids = 0

    def __repr__(self) -> str:
        return f"{self.name}({self.era}, {self.principal})"

    # -- what the run asks a client to do ------------------------------------------------------

    def operations(self) -> tuple[str, ...]:
        if self.era == "modern":
            return ("create", "get", "answer", "duplicate", "stale", "cancel", "listen")
        if self.era == "legacy":
            return ("create", "get", "answer", "duplicate", "cancel", "result")
        return ("create", "get", "answer", "duplicate", "cancel")

    def body(self, operation: str, task_id: str | None, tool: str) -> Any:
        """What doing `operation` (on `task_id`, or creating a task of `tool`) runs."""
        if operation == "create":
            run = lambda: self.create(tool)  # noqa: E731
        else:
            assert task_id is not None
            run = _bind(self, operation, task_id)
        if self.era == "legacy" and self.session is None:
            return lambda: (self._initialize(), run())
        return run

    # -- sending -------------------------------------------------------------------------------

    def _rid(self) -> int:
        self._rids += 1
        return self._rids

    def value(self) -> str:
        self._values += 1
        return f"{self.name}.{self._values}"

    def _request(
        self, method: str, params: dict[str, Any], *, name: str | None = None
    ) -> HttpRequest:
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
        }
        if self.era == "legacy":
            headers["mcp-protocol-version"] = LEGACY_VERSION
            if self.session is not None:
                headers["mcp-session-id"] = self.session
            message = {"jsonrpc": "2.0", "id": self._rid(), "method": method, "params": params}
        else:
            capabilities = MODERN_CAPABILITIES if self.era == "modern" else {}
            meta = {VERSION_KEY: PROTOCOL_VERSION, CAPABILITIES_KEY: capabilities}
            headers["mcp-protocol-version"] = PROTOCOL_VERSION
            headers["mcp-method"] = method
            if name is not None:
                headers["mcp-name"] = name
            message = {
                "jsonrpc": "2.0",
                "id": self._rid(),
                "method": method,
                "params": {**params, "_meta": meta},
            }
        return HttpRequest("POST", headers, json.dumps(message).encode(), self.principal)

    def send(
        self, method: str, request: HttpRequest, task_id: str | None
    ) -> tuple[Any, list[dict[str, Any]], Any]:
        """Send until answered (retrying what a good client retries); the exchange, the
        messages of the answer, and the answer."""
        attempt = 0
        while True:
            exchange, response = self.world.http(self, method, request, task_id)
            if response is None or response.status in RETRYABLE:
                wait = BACKOFF_S[min(attempt, len(BACKOFF_S) - 1)]
                if response is not None and "retry-after" in response.headers:
                    wait = max(wait, float(response.headers["retry-after"]))
                attempt += 1
                self.world.clock.sleep(wait)
                continue
            if response.status == 202 or not response.body:
                return exchange, [], response
            found = messages(response)
            last = found[-1] if found else {}
            if "error" in last:
                error = last["error"]
                exchange.outcome = f"error {error.get('code')}"
                exchange.note = str(error.get("message", ""))[:80]
                busy = (error.get("data") or {}).get("retryAfterSeconds")
                if isinstance(busy, int | float):
                    # Busy, said inside a stream (its HTTP status was sent already): retry.
                    exchange.outcome = "busy"
                    attempt += 1
                    self.world.clock.sleep(max(float(busy), BACKOFF_S[0]))
                    continue
                if error.get("code") == -32603 and method == "tools/call":
                    # Not started (failed, or it runs after all): a good client calls again.
                    attempt += 1
                    self.world.clock.sleep(BACKOFF_S[min(attempt, len(BACKOFF_S) - 1)])
                    continue
            return exchange, found, response

    # -- operations ----------------------------------------------------------------------------

    def _initialize(self) -> None:
        params = {
            "protocolVersion": LEGACY_VERSION,
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": self.name, "version": "1"},
        }
        _, _, response = self.send("initialize", self._request("initialize", params), None)
        self.session = response.headers.get("mcp-session-id")
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        self.send("notifications/initialized", self._session_post(note), None)

    def _session_post(self, message: dict[str, Any]) -> HttpRequest:
        """A 2025-11-25 message that is no request (a notification, a response), in the
        client's session."""
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": LEGACY_VERSION,
            "mcp-session-id": str(self.session),
        }
        return HttpRequest("POST", headers, json.dumps(message).encode(), self.principal)

    def create(self, tool: str) -> None:
        arguments = {"label": self.name}
        params: dict[str, Any] = {"name": tool, "arguments": arguments}
        if self.era == "legacy":
            params["task"] = {}
        exchange, found, _ = self.send(
            "tools/call", self._request("tools/call", params, name=tool), None
        )
        result = (found[-1] if found else {}).get("result")
        if not isinstance(result, dict):
            return
        if self.era == "modern":
            task_id = result.get("taskId") if result.get("resultType") == "task" else None
        elif self.era == "legacy":
            task_id = (result.get("task") or {}).get("taskId")
        else:
            task_id = (result.get("structuredContent") or {}).get("taskId")
        if not isinstance(task_id, str):
            exchange.note = "no task"
            return
        exchange.task_id = task_id
        exchange.note = tool
        self.world.acknowledged(
            Created(task_id, self.principal, tool, self.name, exchange.answered)
        )
        self.known.setdefault(task_id, Knowledge())

    def get(self, task_id: str) -> None:
        if self.era == "handles":
            self._handle_call("task_status", {"taskId": task_id, "waitSeconds": 1}, task_id)
            return
        exchange, found, _ = self.send(
            "tasks/get", self._request("tasks/get", {"taskId": task_id}, name=task_id), task_id
        )
        final = found[-1] if found else {}
        if self._missing_or_probe(exchange, final, "tasks/get", task_id):
            return
        result = final.get("result") or {}
        if self.era == "legacy":
            for message in found[:-1]:
                if "method" in message and "id" in message:
                    params = message.get("params") or {}
                    self._knowledge(task_id).questions.append(
                        (message["id"], str(params.get("message")))
                    )
        self._seen(exchange, task_id, result, "tasks/get")

    def answer(self, task_id: str, mode: str) -> None:
        knowledge = self._knowledge(task_id)
        if self.era == "legacy":
            self._legacy_answer(task_id, knowledge, mode)
            return
        if mode == "duplicate" and knowledge.last_answers:
            answers = knowledge.last_answers
        elif mode == "stale" or not knowledge.open_keys:
            old = sorted(knowledge.asked - knowledge.open_keys)
            key = old[-1] if old and mode == "stale" else STALE_KEY
            answers = {key: {"v": self.value()}}
        else:
            answers = {key: {"v": self.value()} for key in sorted(knowledge.open_keys)}
        knowledge.last_answers = answers
        sent = {key: str(value["v"]) for key, value in answers.items()}
        if self.era == "handles":
            exchange, final = self._handle_call(
                "task_answer", {"taskId": task_id, "answers": answers}, task_id
            )
            acknowledged = "error" not in final and not exchange.outcome.startswith("error")
        else:
            responses = {
                key: {"action": "accept", "content": value} for key, value in answers.items()
            }
            params = {"taskId": task_id, "inputResponses": responses}
            exchange, found, _ = self.send(
                "tasks/update", self._request("tasks/update", params, name=task_id), task_id
            )
            final = found[-1] if found else {}
            if self._missing_or_probe(exchange, final, "tasks/update", task_id):
                return
            acknowledged = "result" in final
        self.world.history.answered.append(
            Answered(
                task_id,
                self.principal,
                sent,
                exchange.sent,
                exchange.answered,
                acknowledged,
                self.era,
            )
        )

    def _legacy_answer(self, task_id: str, knowledge: Knowledge, mode: str) -> None:
        pool = knowledge.answered_questions if mode == "duplicate" else knowledge.questions
        usable = [(rid, message) for rid, message in pool if message in ("k1", "k2")]
        if not usable:
            self.get(task_id)
            return
        rid, message = usable[-1]
        if mode != "duplicate":
            knowledge.questions.remove((rid, message))
            knowledge.answered_questions.append((rid, message))
        value = self.value()
        body = {
            "jsonrpc": "2.0",
            "id": rid,
            "result": {"action": "accept", "content": {"v": value}},
        }
        exchange, _, response = self.send("answer", self._session_post(body), task_id)
        acknowledged = response.status == 202
        exchange.note = f"{message}={value}"
        self.world.history.answered.append(
            Answered(
                task_id,
                self.principal,
                {message: value},
                exchange.sent,
                exchange.answered,
                acknowledged,
                self.era,
            )
        )

    def cancel(self, task_id: str) -> None:
        if self.era == "handles":
            exchange, final = self._handle_call("task_cancel", {"taskId": task_id}, task_id)
            structured = (final.get("result") or {}).get("structuredContent") or {}
            ok = "result" in final
            self.world.history.cancelled.append(
                Cancelled(
                    task_id,
                    self.principal,
                    exchange.sent,
                    exchange.answered,
                    ok,
                    structured.get("status"),
                    self.era,
                )
            )
            return
        exchange, found, _ = self.send(
            "tasks/cancel",
            self._request("tasks/cancel", {"taskId": task_id}, name=task_id),
            task_id,
        )
        final = found[-1] if found else {}
        if self.era == "modern" and self._missing_or_probe(
            exchange, final, "tasks/cancel", task_id
        ):
            return
        result = final.get("result")
        shown = result.get("status") if isinstance(result, dict) else None
        if self.era == "legacy":
            error = final.get("error") or {}
            if (
                "not found" in str(error.get("message", "")).lower()
                or "expired" in str(error.get("message", "")).lower()
            ):
                self._missing_or_probe(exchange, final, "tasks/cancel", task_id)
                return
        self.world.history.cancelled.append(
            Cancelled(
                task_id,
                self.principal,
                exchange.sent,
                exchange.answered,
                "result" in final,
                shown,
                self.era,
            )
        )
        if isinstance(result, dict) and "status" in result:
            self._seen(exchange, task_id, result, "tasks/cancel")

    def listen(self, task_id: str) -> None:
        watched = sorted({task_id, *list(self.known)[-3:]})
        params = {"notifications": {"taskIds": watched}}
        exchange, found, _ = self.send(
            "subscriptions/listen", self._request("subscriptions/listen", params), task_id
        )
        for message in found:
            method = message.get("method")
            params = message.get("params") or {}
            if method == "notifications/subscriptions/acknowledged":
                honoured = (params.get("notifications") or {}).get("taskIds") or []
                for foreign in honoured:
                    if self.world.owner_of(foreign) not in (None, self.principal):
                        self.world.history.probes.append(
                            Probe(
                                foreign,
                                self.principal,
                                "subscriptions/listen",
                                "honoured",
                                "left out",
                            )
                        )
            elif method == "notifications/tasks":
                self._seen(exchange, str(params.get("taskId")), params, "listen")

    def result(self, task_id: str) -> None:
        exchange, found, _ = self.send(
            "tasks/result", self._request("tasks/result", {"taskId": task_id}), task_id
        )
        final = found[-1] if found else {}
        if self._missing_or_probe(exchange, final, "tasks/result", task_id):
            return
        for message in found[:-1]:
            if "method" in message and "id" in message:
                params = message.get("params") or {}
                self._knowledge(task_id).questions.append(
                    (message["id"], str(params.get("message")))
                )
        result, error = final.get("result"), final.get("error")
        if not isinstance(result, dict) and not isinstance(error, dict):
            return
        answers, status, message = None, "failed", None
        if isinstance(result, dict):
            answers = _answers_of(result)
            status = "completed" if answers is not None or not result.get("isError") else "failed"
        else:
            # 2025-11-25 answers a task that did not complete with its error; a cancelled
            # one's says so.
            message = str(error.get("message", "")) if isinstance(error, dict) else ""
            status = "cancelled" if "was cancelled" in message else "failed"
        self.world.history.seen.append(
            Seen(
                task_id,
                self.principal,
                status,
                exchange.sent,
                exchange.answered,
                "legacy-result",
                answers_used=answers,
                tool_error=bool(isinstance(result, dict) and result.get("isError")),
                error_message=message,
            )
        )

    # -- handles -------------------------------------------------------------------------------

    def _handle_call(
        self, tool: str, arguments: dict[str, Any], task_id: str
    ) -> tuple[Any, dict[str, Any]]:
        params = {"name": tool, "arguments": arguments}
        exchange, found, _ = self.send(
            "tools/call", self._request("tools/call", params, name=tool), task_id
        )
        exchange.method = tool
        final = found[-1] if found else {}
        if self._missing_or_probe(exchange, final, tool, task_id):
            return exchange, final
        result = final.get("result") or {}
        structured = result.get("structuredContent") or {}
        if structured.get("taskId") == task_id and "status" in structured:
            shown = dict(structured)
            if "error" in structured:
                shown["error"] = structured["error"]
            self._seen(exchange, task_id, shown, tool)
        elif "content" in result:
            answers = _answers_of(result)
            self.world.history.seen.append(
                Seen(
                    task_id,
                    self.principal,
                    "completed",
                    exchange.sent,
                    exchange.answered,
                    tool,
                    answers_used=answers,
                    tool_error=bool(result.get("isError")),
                )
            )
        return exchange, final

    # -- what was learnt -----------------------------------------------------------------------

    def _knowledge(self, task_id: str) -> Knowledge:
        return self.known.setdefault(task_id, Knowledge())

    def _missing_or_probe(
        self, exchange: Any, final: dict[str, Any], method: str, task_id: str
    ) -> bool:
        error = final.get("error")
        owner = self.world.owner_of(task_id)
        if owner is not None and owner != self.principal:
            self.world.history.probes.append(
                Probe(
                    task_id,
                    self.principal,
                    f"{self.era} {method}",
                    error,
                    self.world.unknown_answer(self, method),
                )
            )
            return True
        if not isinstance(error, dict):
            return False
        message = str(error.get("message", "")).lower()
        if "not found" in message or "expired" in message:
            self.world.history.missing.append(
                Missing(
                    task_id,
                    self.principal,
                    exchange.sent,
                    exchange.answered,
                    "expired" in message,
                    f"{self.era} {method}",
                )
            )
            return True
        return False

    def _seen(self, exchange: Any, task_id: str, shown: dict[str, Any], via: str) -> None:
        status = str(shown.get("status"))
        requests = shown.get("inputRequests") or {}
        keys = frozenset(requests) if status == "input_required" else frozenset()
        knowledge = self._knowledge(task_id)
        knowledge.open_keys = keys
        knowledge.asked |= keys
        result = shown.get("result")
        answers = _answers_of(result) if isinstance(result, dict) else None
        error = shown.get("error")
        self.world.history.seen.append(
            Seen(
                task_id,
                self.principal,
                status,
                exchange.sent,
                exchange.answered,
                f"{self.era} {via}",
                open_keys=keys,
                answers_used=answers,
                tool_error=bool(isinstance(result, dict) and result.get("isError")),
                error_message=str(error.get("message")) if isinstance(error, dict) else None,
            )
        )
        exchange.note = status


def _bind(client: Client, operation: str, task_id: str) -> Any:
    modes = {"answer": "fresh", "duplicate": "duplicate", "stale": "stale"}
    if operation in modes:
        return lambda: client.answer(task_id, modes[operation])
    return lambda: getattr(client, operation)(task_id)


def _answers_of(result: Any) -> dict[str, str] | None:
    """The answers a simulation tool's result says it used (None: not such a result)."""
    if not isinstance(result, dict):
        return None
    structured = result.get("structuredContent")
    if isinstance(structured, dict) and "approved" in structured:
        return {"approve": str(structured["approved"])}
    for block in result.get("content") or []:
        text = block.get("text") if isinstance(block, dict) else None
        if not isinstance(text, str):
            continue
        try:
            parsed = json.loads(text)
        except ValueError:
            continue
        if isinstance(parsed, dict) and "answers" in parsed:
            return {str(k): str(v) for k, v in parsed["answers"].items()}
        if isinstance(parsed, dict) and "approved" in parsed:
            return {"approve": str(parsed["approved"])}
    return None
