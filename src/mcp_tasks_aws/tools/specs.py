"""What one registered tool or prompt is: its schemas, its task policy, how its answer is shaped.

`ToolSpec` and `PromptSpec` read their function lazily (see `signature`): nothing is built at
import, and `check()` builds everything a call needs (the server runs it at startup through
`ToolSet.check()`). `structure()` turns what a function returned into the wire result: text,
structured content with an `outputSchema`, content blocks (see `content`), or prompt messages.
"""

from __future__ import annotations

import inspect
import sys
import typing
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import Any, Literal, Protocol, Union

from pydantic import BaseModel, TypeAdapter
from pydantic.fields import FieldInfo

from mcp_tasks_aws.protocol.headers import ParamHeader
from mcp_tasks_aws.protocol.names import TASK_POLICY_META
from mcp_tasks_aws.tools.signature import (
    ToolDefinitionError,
    arguments_model,
    check_handwritten_schema,
    header_params,
    output_adapter,
    signature_fields,
)


class TaskPolicy(StrEnum):
    """How a tool runs when called."""

    INLINE = "inline"
    """Always answers within the call (multi round-trip input allowed)."""
    OPTIONAL = "optional"
    """Becomes a task when the request opts in to the Tasks extension; inline otherwise."""
    REQUIRED = "required"
    """Only runs as a task. A request without the opt-in gets a task handle (an ordinary result
    naming the task, `server.handles`), or -32021 where handles are off."""


class Workflow(Protocol):
    """A tool whose task *is* a declared workflow's execution (a Standard state machine), not
    a leg this server runs: the task service starts it, and the execution's end settles the
    task (see `targets`, which implements it, and `tasks.workflow`)."""

    @property
    def machine_arn(self) -> str:
        """The state machine whose execution, named after the task, does the work."""
        ...

    def execution_input(self, task_id: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The execution's input for a task and its (validated) arguments."""
        ...

    def result_of(self, output: Any) -> dict[str, Any]:
        """The CallToolResult of an execution that SUCCEEDED with `output` (parsed JSON)."""
        ...

    def failure_of(
        self, status: str, error: str | None, cause: str | None
    ) -> tuple[Literal["result", "error"], dict[str, Any]]:
        """An execution that FAILED, TIMED_OUT or was ABORTED: a tool-level error result
        (`"result"`, a CallToolResult with isError) or the task's JSON-RPC error (`"error"`)."""
        ...


@dataclass(frozen=True)
class ToolResult:
    """Full control over a tool's answer: content blocks, structured content, error flag.

    `content` holds helpers (`Text`, `Image`, ...), plain strings or wire-shaped dicts.
    """

    content: list[Any] = field(default_factory=list)
    structured_content: Any = None
    is_error: bool = False

    def to_wire(self) -> dict[str, Any]:
        from mcp_tasks_aws.tools.content import block_of

        result: dict[str, Any] = {"content": [block_of(block) for block in self.content]}
        if self.structured_content is not None:
            result["structuredContent"] = self.structured_content
        if self.is_error:
            result["isError"] = True
        return result


class ToolError(Exception):
    """Raise from a tool to answer with `isError: true` and exactly this message."""


def text_result(text: str, *, is_error: bool = False) -> dict[str, Any]:
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if is_error:
        result["isError"] = True
    return result


_CONTENT_MODULE = "mcp_tasks_aws.tools.content"
# Content helpers are imported only where they are used: a tool set that never touches them (and
# a request that returns none) does not pay for the module at cold start. A value or annotation
# can only be a helper once its module is loaded, so `sys.modules` answers "is it content?".


def loaded_content_module() -> Any:
    """`tools.content` if something loaded it already, else None (never imports it)."""
    return sys.modules.get(_CONTENT_MODULE)


def _is_content_annotation(annotation: Any) -> bool:
    """Whether a return annotation promises content (`Image`, `list[Image | str]`, ...)."""
    content = loaded_content_module()
    if content is None:
        return False
    if isinstance(annotation, type) and issubclass(annotation, content.Content):
        return True
    origin = typing.get_origin(annotation)
    if origin in (list, tuple, Union, typing.get_origin(int | str)):
        args = [a for a in typing.get_args(annotation) if a is not Ellipsis]
        return any(_is_content_annotation(a) for a in args) and all(
            a in (str, type(None)) or _is_content_annotation(a) for a in args
        )
    return False


@dataclass
class _FunctionSpec:
    """What tools and prompts share: a described function whose signature is read lazily."""

    fn: Any
    name: str
    description: str
    title: str | None
    param_docs: dict[str, str]

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.fn)


@dataclass
class ToolSpec(_FunctionSpec):
    """One registered tool."""

    task: TaskPolicy
    ttl_ms: int | None
    poll_interval_ms: int | None
    annotations: dict[str, Any] | None
    prelude: bool = False
    handwritten_schema: dict[str, Any] | None = None
    """An `inputSchema` given as is (`input_schema=`), instead of one derived from type hints."""
    scopes: frozenset[str] = frozenset()
    """OAuth scopes a caller's token must grant to call the tool (checked at the HTTP edge)."""
    max_poll_interval_ms: int | None = None
    direct: bool = True
    """Run a task's first leg directly (no state machine) when the server can; False: always
    on Step Functions."""
    expected_seconds: float | None = None
    """How long a call usually takes (an `optional` tool longer than the inline budget answers
    a client without tasks with a handle, `server.handles`)."""
    handles: bool | None = None
    """Whether a client without tasks gets a task handle from this tool (None: the
    deployment's setting)."""
    raw_arguments: bool = False
    """A declared tool (`targets`): `fn(arguments, ctx)` takes the arguments as one dict, checked
    against the hand-written `inputSchema` only, and arguments that fail it are a protocol
    error (-32602) rather than a tool error."""
    declared_output_schema: dict[str, Any] | None = None
    """The `outputSchema` as declared (a declared tool's function returns a ToolResult)."""
    workflow: Workflow | None = None
    """Set when the tool's task is a declared workflow's execution (it then has no legs)."""
    runner: str | None = None
    """What runs the tool's tasks when the tool chose (`durable`: a Lambda durable execution,
    `tasks.runs.durable`); None: the server's legs (direct, then Step Functions)."""

    @property
    def label(self) -> str:
        return f"tool {self.name!r}"

    @cached_property
    def _signature(self) -> tuple[type[BaseModel], dict[str, Any], str | None]:
        if self.raw_arguments:
            model, _ = arguments_model(self.label, f"{self.name}_arguments", {})
            schema = check_handwritten_schema(self.label, self.handwritten_schema, {})
            return model, schema, "ctx"
        fields, context_param = signature_fields(self.fn, self.param_docs, name=self.name)
        model, derived = arguments_model(self.label, f"{self.name}_arguments", fields)
        if self.handwritten_schema is not None:
            return (
                model,
                check_handwritten_schema(self.label, self.handwritten_schema, fields),
                context_param,
            )
        return model, derived, context_param

    @property
    def arguments_model(self) -> type[BaseModel]:
        return self._signature[0]

    @property
    def input_schema(self) -> dict[str, Any]:
        return self._signature[1]

    @property
    def context_param(self) -> str | None:
        return self._signature[2]

    @cached_property
    def param_headers(self) -> list[ParamHeader]:
        """The parameters clients mirror into `Mcp-Param-*` headers (SEP-2243)."""
        return header_params(self.label, self.input_schema)

    @cached_property
    def schema_validator(self) -> Any:
        """A JSON Schema 2020-12 validator of a hand-written `inputSchema` (None otherwise)."""
        if self.handwritten_schema is None:
            return None
        from jsonschema import Draft202012Validator  # only hand-written schemas need it
        from jsonschema.exceptions import SchemaError

        try:
            Draft202012Validator.check_schema(self.input_schema)
        except SchemaError as exc:
            where = "/".join(str(p) for p in exc.path) or "the root"
            raise ToolDefinitionError(
                f"{self.label}: input_schema is not a valid JSON Schema 2020-12 (at {where}: "
                f"{exc.validator} {exc.validator_value!r})"
            ) from exc
        return Draft202012Validator(self.input_schema)

    @cached_property
    def _return(self) -> tuple[TypeAdapter[Any] | None, dict[str, Any] | None, bool]:
        """(adapter, outputSchema, wrapped) for a structured return; (None, None, False) if not."""
        if self.raw_arguments:  # a declared tool returns a ToolResult; its schema is declared
            return None, None, False
        annotation = typing.get_type_hints(self.fn).get("return", inspect.Signature.empty)
        if annotation in (inspect.Signature.empty, str, type(None), ToolResult, Any):
            return None, None, False
        if _is_content_annotation(annotation):
            return None, None, False
        return output_adapter(self.label, annotation)

    @property
    def output_schema(self) -> dict[str, Any] | None:
        if self.declared_output_schema is not None:
            return self.declared_output_schema
        return self._return[1]

    def check(self) -> None:
        """Build everything a call needs; ToolDefinitionError says what cannot be built."""
        _ = self.input_schema, self.output_schema, self.param_headers, self.schema_validator

    def to_wire(self) -> dict[str, Any]:
        tool: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
        }
        if self.title:
            tool["title"] = self.title
        if self.output_schema is not None:
            tool["outputSchema"] = self.output_schema
        if self.annotations:
            tool["annotations"] = self.annotations
        tool["_meta"] = {TASK_POLICY_META: self.task.value}
        return tool

    def structure(self, value: Any) -> dict[str, Any]:
        """Turn what the function returned into a CallToolResult (without `resultType`).

        Raises ContentError when the result's binary content is over the budget.
        """
        content = loaded_content_module()
        if isinstance(value, ToolResult):
            result = value.to_wire()
        elif content is not None and content.is_content(value):
            result = {"content": content.content_blocks(value)}
        else:
            result = self._structured(value)
        _check_budget(result["content"], f"tool {self.name}'s result")
        return result

    def _structured(self, value: Any) -> dict[str, Any]:
        adapter, _, wrapped = self._return
        if adapter is None:
            if value is None:
                return {"content": []}
            if isinstance(value, str):
                return text_result(value)
            adapter = TypeAdapter(type(value))
        data = adapter.dump_python(value, mode="json", by_alias=True)
        text = adapter.dump_json(value, by_alias=True).decode()
        structured = {"result": data} if wrapped else data
        result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
        if isinstance(structured, dict):
            result["structuredContent"] = structured
        return result


_BINARY_TYPES = frozenset({"image", "audio", "resource"})


def _check_budget(blocks: list[dict[str, Any]], what: str) -> None:
    """ContentError when the blocks carry too much binary data (text-only answers skip it)."""
    if any(isinstance(b, dict) and b.get("type") in _BINARY_TYPES for b in blocks):
        from mcp_tasks_aws.tools.content import check_binary_budget

        check_binary_budget(blocks, what)


def _prompt_message(item: Any) -> dict[str, Any]:
    from mcp_tasks_aws.tools.content import Content, Message, block_of

    if isinstance(item, Message):
        return item.to_wire()
    if isinstance(item, str | Content):
        return Message(item).to_wire()
    if isinstance(item, dict) and "role" in item and "content" in item:
        return {**item, "content": block_of(item["content"])}
    raise TypeError(f"{type(item).__name__} is not a prompt message (use str, Message, Image...)")


def _is_content_value(value: Any) -> bool:
    content = loaded_content_module()
    return content is not None and isinstance(value, content.Content | content.Message)


@dataclass
class PromptSpec(_FunctionSpec):
    """One registered prompt: a function of string arguments returning messages."""

    @cached_property
    def _signature(self) -> tuple[list[dict[str, Any]], str | None]:
        fields, context_param = signature_fields(
            self.fn, self.param_docs, kind="prompt", name=self.name
        )
        arguments = []
        for name, (_, default) in fields.items():
            required = default is ... or (isinstance(default, FieldInfo) and default.is_required())
            argument: dict[str, Any] = {"name": name, "required": required}
            if name in self.param_docs:
                argument["description"] = self.param_docs[name]
            arguments.append(argument)
        return arguments, context_param

    @property
    def arguments(self) -> list[dict[str, Any]]:
        return self._signature[0]

    @property
    def context_param(self) -> str | None:
        return self._signature[1]

    def check(self) -> None:
        _ = self.arguments

    def to_wire(self) -> dict[str, Any]:
        prompt: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "arguments": self.arguments,
        }
        if self.title:
            prompt["title"] = self.title
        return prompt

    def structure(self, value: Any) -> dict[str, Any]:
        """Turn what the function returned into a GetPromptResult (without `resultType`).

        A prompt returns a string or a content block (one user message), a `Message`, or a
        list of these and of `{"role", "content"}` dicts; or a whole `{"messages": ...}`.
        """
        if isinstance(value, dict) and "messages" in value:
            result = dict(value)
            result["messages"] = [_prompt_message(m) for m in value["messages"]]
        elif isinstance(value, list | tuple):
            result = {"messages": [_prompt_message(m) for m in value]}
        elif isinstance(value, str) or _is_content_value(value):
            result = {"messages": [_prompt_message(value)]}
        else:
            raise TypeError(f"prompt {self.name!r} returned {type(value).__name__}")
        _check_budget([m["content"] for m in result["messages"]], f"prompt {self.name}'s messages")
        return result
