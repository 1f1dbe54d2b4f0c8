"""What `mcp-tasks` commands print on stdout: listings, results, messages, resource contents.

`Output` renders human text (listings as `rich` tables, text results exactly as the server sent
them) or, with `--json`, one JSON document per command. An error goes to stderr as
`error: …`, or with `--json` to stdout as an `{"error": …}` document, so a script always reads
JSON from stdout. An empty listing prints nothing on stdout and says so on stderr.

Binary content (images, audio, blobs of embedded or read resources) is never written to the
terminal: `MediaSaver` saves each to a file (in `--save-dir`, else a new temporary directory)
and the file's path is printed in its place. Files are never overwritten.
"""

from __future__ import annotations

import base64
import binascii
import json
import mimetypes
import re
import tempfile
from collections.abc import Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from mcp_types import (
    CallToolResult,
    GetPromptResult,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    Tool,
)
from pydantic import BaseModel
from rich.console import Console as RichConsole
from rich.table import Table
from rich.text import Text

from mcp_tasks_aws.client.cli.forms import choices_of
from mcp_tasks_aws.client.cli.terminal import Console
from mcp_tasks_aws.client.handle import TaskHandle
from mcp_tasks_aws.client.wire import TaskSnapshot
from mcp_tasks_aws.protocol.names import TASK_POLICY_META

__all__ = ["MediaSaver", "Output", "TaskRow", "describe_policy", "signature"]

_POLICY_TEXT = {
    "inline": "inline",
    "optional": "task when allowed",
    "required": "task only",
    # The 2025-11-25 `execution.taskSupport` values, which other servers may send.
    "forbidden": "inline",
}
_EXTENSIONS = {
    "audio/wav": ".wav",
    "audio/x-wav": ".wav",
    "audio/mpeg": ".mp3",
    "image/jpeg": ".jpg",
}


def _dump(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


# -- saving binary content -----------------------------------------------------------------------


@dataclass
class MediaSaver:
    """Saves binary content to files, named after what produced it; never overwrites."""

    directory: Path | None = None
    saved: list[Path] = field(default_factory=list)

    def _folder(self) -> Path:
        if self.directory is None:
            self.directory = Path(tempfile.mkdtemp(prefix="mcp-tasks-"))
        self.directory.mkdir(parents=True, exist_ok=True)
        return self.directory

    def save(self, stem: str, mime_type: str | None, data_b64: str) -> Path:
        try:
            data = base64.b64decode(data_b64, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ValueError(f"the server sent {stem} as invalid Base64") from exc
        mime = (mime_type or "").split(";")[0].strip().lower()
        suffix = _EXTENSIONS.get(mime) or mimetypes.guess_extension(mime or "") or ".bin"
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", stem).strip("-.") or "content"
        folder = self._folder()
        path = folder / f"{safe}{suffix}"
        counter = 1
        while path.exists():
            counter += 1
            path = folder / f"{safe}-{counter}{suffix}"
        path.write_bytes(data)
        self.saved.append(path)
        return path


# -- describing tools ----------------------------------------------------------------------------


def _type_of(prop: dict[str, Any]) -> str:
    kind = prop.get("type")
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind)
    if isinstance(kind, str):
        if kind == "array" and isinstance(prop.get("items"), dict):
            return f"{_type_of(prop['items'])}[]"
        return kind
    branches = prop.get("anyOf") or prop.get("oneOf")
    if isinstance(branches, list):
        kinds = [_type_of(b) for b in branches if isinstance(b, dict)]
        return "|".join(k for k in kinds if k != "any") or "any"
    if "$ref" in prop:
        return "object"
    return "any"


def signature(tool: Tool) -> str:
    """`name: type` for each argument (`?` marks an optional one)."""
    schema = tool.input_schema or {}
    properties: dict[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    parts = []
    for name, prop in properties.items():
        kind = _type_of(prop) if isinstance(prop, dict) else "any"
        parts.append(f"{name}: {kind}" + ("" if name in required else "?"))
    return ", ".join(parts)


def describe_policy(tool: Tool) -> str | None:
    """How the server runs the tool, when it says (its `_meta`, or 2025-11-25 `execution`)."""
    policy = (tool.meta or {}).get(TASK_POLICY_META)
    if policy is None and tool.execution is not None:
        policy = getattr(tool.execution, "task_support", None)
    return _POLICY_TEXT.get(str(policy)) if policy is not None else None


def _choices(prop: dict[str, Any]) -> list[str] | None:
    """The allowed values of a property (or of its items), read as the forms read them."""
    choices = choices_of(prop)
    if choices is not None:
        return [c.value for c in choices]
    items = prop.get("items")
    return _choices(items) if isinstance(items, dict) else None


def _argument_notes(prop: dict[str, Any], required: bool) -> str:
    notes = ["required"] if required else []
    if "default" in prop:
        notes.append(f"default {json.dumps(prop['default'], ensure_ascii=False)}")
    choices = _choices(prop)
    if choices is not None:
        notes.append("one of " + ", ".join(choices))
    if "x-mcp-header" in prop:
        notes.append(f"header Mcp-Param-{prop['x-mcp-header']}")
    return "; ".join(notes)


def _print_table(console: RichConsole, table: Table) -> None:
    """A table laid out to the terminal's width, without the padding at the end of lines."""
    with console.capture() as captured:
        console.print(table, soft_wrap=False)
    lines = captured.get().splitlines()
    console.file.write("".join(line.rstrip() + "\n" for line in lines))


def _first_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0] if lines else ""


@dataclass(frozen=True)
class TaskRow:
    """One line of `mcp-tasks tasks`."""

    task_id: str
    status: str
    tool: str | None
    created_at: str | None
    status_message: str | None


def _ended(status: str) -> str:
    return "been cancelled" if status == "cancelled" else status


# -- the output ----------------------------------------------------------------------------------


@dataclass
class Output:
    """A command's output: human text, or with `json` one JSON document, on `out` (stdout)."""

    out: TextIO
    console: Console
    json: bool
    media: MediaSaver = field(default_factory=MediaSaver)

    @property
    def rich(self) -> RichConsole:
        # Lines are soft-wrapped (the terminal wraps them; a pipe gets them whole); tables are
        # laid out to the terminal's width.
        width = None if self.out.isatty() else 160  # a pipe gets lines a terminal would wrap
        return RichConsole(file=self.out, highlight=False, soft_wrap=True, width=width)

    def emit(self, document: dict[str, Any]) -> None:
        self.out.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
        self.out.flush()

    def write(self, text: str) -> None:
        self.out.write(text if text.endswith("\n") else text + "\n")
        self.out.flush()

    def error(self, kind: str, message: str, exit_code: int, **extra: Any) -> int:
        """Report an error (JSON on stdout with --json, text on stderr); return `exit_code`."""
        if self.json:
            self.emit({"error": {"kind": kind, "message": message, **extra}})
        else:
            self.console.say(f"error: {message}")
        return exit_code

    # listings

    def _none(self, what: str) -> None:
        """An empty listing: nothing on stdout (a script reads no rows), a line for a person."""
        self.console.say(f"the server lists no {what}")

    def tools(self, tools: list[Tool]) -> None:
        if self.json:
            self.emit({"tools": [_dump(t) for t in tools]})
            return
        if not tools:
            self._none("tools")
            return
        console = self.rich
        for tool in tools:
            head = Text(f"{tool.name}({signature(tool)})", style="bold")
            policy = describe_policy(tool)
            if policy:
                head.append(f"  [{policy}]", style="cyan")
            console.print(head)
            summary = _first_line(tool.description)
            if summary:
                console.print(Text(f"    {summary}"))
            schema = tool.input_schema or {}
            required = set(schema.get("required") or [])
            rows = Table.grid(padding=(0, 2))
            for _ in range(4):
                rows.add_column()
            for name, prop in (schema.get("properties") or {}).items():
                prop = prop if isinstance(prop, dict) else {}
                rows.add_row(
                    Text(f"      {name}"),
                    Text(_type_of(prop), style="green"),
                    Text(_argument_notes(prop, name in required), style="dim"),
                    Text(str(prop.get("description") or "")),
                )
            if rows.row_count:
                _print_table(console, rows)
        self.out.flush()

    def prompts(self, prompts: list[Prompt]) -> None:
        if self.json:
            self.emit({"prompts": [_dump(p) for p in prompts]})
            return
        if not prompts:
            self._none("prompts")
            return
        console = self.rich
        for prompt in prompts:
            arguments = [f"{a.name}{'' if a.required else '?'}" for a in (prompt.arguments or [])]
            console.print(Text(f"{prompt.name}({', '.join(arguments)})", style="bold"))
            summary = _first_line(prompt.description)
            if summary:
                console.print(Text(f"    {summary}"))
            for argument in prompt.arguments or []:
                if argument.description:
                    console.print(
                        Text(f"      {argument.name}: {argument.description}", style="dim")
                    )
        self.out.flush()

    def _table(self, headers: Sequence[str], rows: Iterable[Sequence[str | None]]) -> None:
        table = Table(box=None, pad_edge=False, header_style="bold")
        for index, header in enumerate(headers):
            table.add_column(header, no_wrap=index < len(headers) - 1)
        for row in rows:
            table.add_row(*(Text(cell or "") for cell in row))
        _print_table(self.rich, table)
        self.out.flush()

    def resources(self, resources: list[Resource]) -> None:
        if self.json:
            self.emit({"resources": [_dump(r) for r in resources]})
            return
        if not resources:
            self._none("resources (it may have resource templates: mcp-tasks templates)")
            return
        self._table(
            ("URI", "name", "type", "description"),
            ((str(r.uri), r.name, r.mime_type, _first_line(r.description)) for r in resources),
        )

    def templates(self, templates: list[ResourceTemplate]) -> None:
        if self.json:
            self.emit({"resourceTemplates": [_dump(t) for t in templates]})
            return
        if not templates:
            self._none("resource templates")
            return
        self._table(
            ("URI template", "name", "type", "description"),
            ((t.uri_template, t.name, t.mime_type, _first_line(t.description)) for t in templates),
        )

    # results

    def _block(self, block: Any, stem: str) -> str:
        """One content block as a line of text; binary content is saved to a file."""
        kind = getattr(block, "type", None)
        if kind == "text":
            return str(block.text)
        if kind in ("image", "audio"):
            try:
                path = self.media.save(stem, block.mime_type, block.data)
            except (ValueError, OSError) as exc:
                return f"[{kind} {block.mime_type} not saved: {exc}]"
            return f"[{kind} {block.mime_type} saved to {path}]"
        if kind == "resource_link":
            return f"[link {block.name}: {block.uri}]"
        if kind == "resource":
            return self._contents(block.resource, stem, header=True)
        return f"[{kind}]"

    def _contents(self, contents: Any, stem: str, *, header: bool = False) -> str:
        text = getattr(contents, "text", None)
        if isinstance(text, str):
            return f"[resource {contents.uri}]\n{text}" if header else text
        kind = contents.mime_type or "binary"
        try:
            path = self.media.save(stem, contents.mime_type, contents.blob)
        except (ValueError, OSError) as exc:
            return f"[{contents.uri} ({kind}) not saved: {exc}]"
        return f"[{contents.uri} ({kind}) saved to {path}]"

    def result(self, task_id: str | None, result: CallToolResult, stem: str = "result") -> None:
        """A tool's result: text as sent, binary content saved to files, else its JSON."""
        if self.json:
            self.emit({"taskId": task_id, "result": _dump(result)})
            return
        texts = [self._block(block, stem) for block in result.content]
        if not texts and result.structured_content is not None:
            texts.append(json.dumps(result.structured_content, indent=2, ensure_ascii=False))
        if texts:
            self.write("\n".join(texts))
        if result.is_error:
            self.console.say("error: the tool reported an error")

    def prompt(self, name: str, result: GetPromptResult) -> None:
        if self.json:
            self.emit(_dump(result))
            return
        lines = []
        for message in result.messages:
            lines.append(f"{message.role}: {self._block(message.content, name)}")
        self.write("\n".join(lines))

    def read(self, uri: str, result: ReadResourceResult) -> None:
        if self.json:
            self.emit(_dump(result))
            return
        stem = uri.rstrip("/").rsplit("/", 1)[-1] or "resource"
        self.write("\n".join(self._contents(c, stem) for c in result.contents))

    # tasks

    def detached(self, handle: TaskHandle) -> None:
        """A task started with `--detach`: its id (with --json, the whole `CreateTaskResult`)."""
        if self.json:
            created = _dump(handle.created) if handle.created is not None else {}
            self.emit({"taskId": handle.task_id, **created})
        else:
            self.write(handle.task_id)

    def cancel_requested(self, snapshot: TaskSnapshot, *, requested: bool = True) -> None:
        """After `cancel`: the task as read after the request, or (`requested` False) before
        it, when it had ended already and nothing was sent."""
        task_id, status = snapshot.task_id, snapshot.status
        if self.json:
            self.emit({"taskId": task_id, "cancelRequested": requested, "status": status})
        elif not requested:
            self.write(f"task {task_id} had already {_ended(status)}: nothing to cancel")
        elif status in ("completed", "failed"):  # it ended before the cancellation reached it
            self.write(f"cancellation requested, but task {task_id} had already {_ended(status)}")
        else:
            self.write(f"cancellation requested; task {task_id} is {status}")

    def tasks(self, rows: list[TaskRow], *, source: str, where: str) -> None:
        """`mcp-tasks tasks`: from the server's `tasks/list`, or from this CLI's history
        (`where` names the server, or the history file)."""
        if self.json:
            self.emit(
                {
                    "source": source,
                    "tasks": [
                        {
                            "taskId": r.task_id,
                            "status": r.status,
                            "tool": r.tool,
                            "createdAt": r.created_at,
                            "statusMessage": r.status_message,
                        }
                        for r in rows
                    ],
                }
            )
            return
        if not rows:
            if source == "history":
                self.console.say(
                    f"no tasks started from this CLI on this server (history: {where})"
                )
            else:
                self._none("tasks")
            return
        self._table(
            ("task", "status", "tool", "created", "message"),
            ((r.task_id, r.status, r.tool, r.created_at, r.status_message) for r in rows),
        )

    def snapshot(self, snapshot: TaskSnapshot, resume_hint: str) -> None:
        """A task's state; `resume_hint` is the command that answers its input requests."""
        if self.json:
            self.emit(_dump(snapshot))
            return
        lines = [f"task {snapshot.task_id}", f"status: {snapshot.status}"]
        if snapshot.status_message:
            lines.append(f"message: {snapshot.status_message}")
        lines.append(f"created: {snapshot.created_at}  updated: {snapshot.last_updated_at}")
        if snapshot.status == "input_required":
            for key, request in (snapshot.input_requests or {}).items():
                params = request.get("params") or {}
                lines.append(f"needs: {key}: {request.get('method')}: {params.get('message', '')}")
            lines.append(f"answer with: {resume_hint}")
        if snapshot.status == "failed":
            error = snapshot.error_data()
            lines.append(f"error: {error.message} (code {error.code})")
        self.write("\n".join(lines))
        if snapshot.status == "completed" and snapshot.result is not None:
            self.write("result:")
            with suppress(ValueError):
                self.result(snapshot.task_id, snapshot.call_tool_result(), stem=snapshot.task_id)
