"""Running one leg of a tool or prompt: validate arguments, call, shape the answer.

Used by the inline path (in the API function) and by the task worker alike. What may come out:
- a CallToolResult / GetPromptResult dict (without `resultType`);
- :class:`InputNeeded` when the leg stopped on unanswered questions;
- an :class:`McpError` for protocol faults (a capability the client lacks, a bad answer).

Arguments the tool does not take are a protocol error (-32602, `check_argument_names`): the
call names the argument and the closest name the tool knows, and is refused before it runs or
becomes a task (a hand-written schema that allows other properties takes them as they are).
Other tool failures are results, not protocol errors: invalid arguments (against the derived schema
or a hand-written one), exceptions raised by the tool and results that cannot be sent (binary
content over the budget) become `isError: true` results the model can read and correct. Only
text the project or the tool author wrote for the client reaches it: a `ToolError`'s message and
our wording of a validation or content failure. Any other exception's text (a botocore message
with ARNs, a codec error quoting data) stays in the logs; the client reads that the tool failed.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from mcp_tasks_aws.protocol.argument_names import closes, unknown_argument_message, unknown_names
from mcp_tasks_aws.protocol.errors import InvalidParams, McpError
from mcp_tasks_aws.tools.context import ToolContext
from mcp_tasks_aws.tools.deadline import awaited_within
from mcp_tasks_aws.tools.journal import BecomeTask, InputNeeded
from mcp_tasks_aws.tools.specs import (
    PromptSpec,
    ToolError,
    ToolSpec,
    loaded_content_module,
    text_result,
)

logger = logging.getLogger(__name__)


def _describe_validation_error(exc: ValidationError) -> str:
    """Our own wording of a validation failure: field paths plus pydantic's short reason."""
    parts = []
    for error in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(p) for p in error["loc"]) or "arguments"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)


# Our wording for the JSON Schema keywords a call most often fails; others name the keyword.
_SCHEMA_REASONS = {
    "type": lambda v: f"must be of type {' or '.join(v) if isinstance(v, list) else v}",
    "enum": lambda v: "must be one of " + ", ".join(repr(x) for x in v),
    "const": lambda v: f"must be {v!r}",
    "minimum": lambda v: f"must be at least {v}",
    "maximum": lambda v: f"must be at most {v}",
    "minLength": lambda v: f"must have at least {v} characters",
    "maxLength": lambda v: f"must have at most {v} characters",
    "pattern": lambda v: f"must match {v}",
}


def _reason(error: Any) -> str:
    """Our wording of one JSON Schema failure (without its location)."""
    keyword, expected, instance = error.validator, error.validator_value, error.instance
    if keyword == "required" and isinstance(instance, dict):
        return "missing " + ", ".join(k for k in expected if k not in instance)
    if keyword == "additionalProperties" and isinstance(instance, dict):
        known = set(error.schema.get("properties", {}))
        return "unexpected " + ", ".join(k for k in instance if k not in known)
    if keyword in ("anyOf", "oneOf") and error.context:
        options = sorted({_reason(sub) for sub in error.context if not sub.relative_path})
        if options:
            return "needs one of: " + " | ".join(options)
    if keyword in _SCHEMA_REASONS:
        return str(_SCHEMA_REASONS[keyword](expected))
    return f"does not satisfy {keyword}"


def _schema_errors(spec: ToolSpec, arguments: dict[str, Any]) -> str | None:
    """What a hand-written inputSchema finds wrong with the arguments, in our words."""
    validator = spec.schema_validator
    if validator is None:
        return None
    parts = []
    for error in sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path)):
        where = ".".join(str(p) for p in error.absolute_path) or "arguments"
        parts.append(f"{where}: {_reason(error)}")
    return "; ".join(parts) or None


def check_argument_names(spec: ToolSpec, arguments: Mapping[str, Any] | None) -> None:
    """Refuse (-32602) a call naming arguments the tool does not take, with the likely typo.

    A schema derived from type hints takes exactly the function's parameters; a hand-written
    one decides for itself (`additionalProperties: false` closes it, anything else leaves
    other names to the tool, as JSON Schema does).
    """
    if not arguments:
        return
    schema = spec.input_schema
    if spec.handwritten_schema is not None and not closes(schema):
        return
    unknown = unknown_names(schema, arguments)
    if unknown:
        raise InvalidParams(
            unknown_argument_message(spec.name, schema, unknown), {"unknownArguments": unknown}
        )


def _is_content_error(exc: Exception) -> bool:
    # Content helpers are loaded only by tools that use them (see `specs`); so is their error.
    content = loaded_content_module()
    return content is not None and isinstance(exc, content.ContentError)


def _call(fn: Any, is_async: bool, kwargs: dict[str, Any]) -> Any:
    if is_async:
        import asyncio  # only tools that need an event loop pay for importing one

        # Under an inline deadline, an await past it is cancelled on the loop (`deadline`).
        return asyncio.run(awaited_within(fn(**kwargs)))
    return fn(**kwargs)


def check_declared_arguments(spec: ToolSpec, arguments: dict[str, Any] | None) -> None:
    """InvalidParams (-32602) naming the argument, when a declared tool's arguments fail its
    declared `inputSchema` (checked before a call runs inline or becomes a task)."""
    if not spec.raw_arguments:
        return
    problem = _schema_errors(spec, arguments or {})
    if problem is not None:
        raise InvalidParams(f"Invalid arguments for tool {spec.name}: {problem}")


def run_tool(spec: ToolSpec, arguments: dict[str, Any] | None, ctx: ToolContext) -> dict[str, Any]:
    """Run one leg of a tool; see the module docstring for what may come out."""
    if spec.raw_arguments:
        # A declared tool: its declared schema is the only check, and a protocol error.
        check_declared_arguments(spec, arguments)
        kwargs: dict[str, Any] = {"arguments": dict(arguments or {})}
    else:
        schema_problem = _schema_errors(spec, arguments or {})
        if schema_problem is not None:
            return text_result(
                f"Invalid arguments for tool {spec.name}: {schema_problem}", is_error=True
            )
        try:
            validated = spec.arguments_model.model_validate(arguments or {})
        except ValidationError as exc:
            message = f"Invalid arguments for tool {spec.name}: {_describe_validation_error(exc)}"
            return text_result(message, is_error=True)
        kwargs = {name: getattr(validated, name) for name in type(validated).model_fields}
    if spec.context_param:
        kwargs[spec.context_param] = ctx
    try:
        value = _call(spec.fn, spec.is_async, kwargs)
        ctx.ensure_questions_awaited()
    except (InputNeeded, BecomeTask, McpError):
        raise
    except ToolError as exc:
        return text_result(str(exc), is_error=True)
    except Exception as exc:
        if _is_content_error(exc):
            # A content helper refused what the tool gave it: our own wording, for the model.
            return text_result(f"Tool {spec.name} cannot build its result: {exc}", is_error=True)
        # The traceback stays in our logs (arguments and answers are never logged); a message
        # meant for the model is a ToolError's.
        logger.exception("tool %s raised %s", spec.name, type(exc).__name__)
        return text_result(
            f"Tool {spec.name} failed with an internal error (see the server logs)", is_error=True
        )
    try:
        return spec.structure(value)
    except (ValidationError, TypeError, ValueError) as exc:
        if _is_content_error(exc):
            return text_result(
                f"Tool {spec.name} returned content it cannot send: {exc}", is_error=True
            )
        if isinstance(exc, ValueError) and not isinstance(exc, ValidationError):
            raise
        logger.exception("tool %s returned a value that does not match its annotation", spec.name)
        return text_result(
            f"Tool {spec.name} returned a result that does not match its declared return type",
            is_error=True,
        )


def run_prompt(
    spec: PromptSpec, arguments: dict[str, str] | None, ctx: ToolContext
) -> dict[str, Any]:
    """Render a prompt. Unlike tools, bad arguments and failures are protocol errors."""
    arguments = dict(arguments or {})
    known = {a["name"] for a in spec.arguments}
    # A prompt's arguments are exactly its function's parameters: a misspelt one would
    # otherwise be dropped and the prompt rendered without it.
    unknown = [name for name in arguments if name not in known]
    if unknown:
        listed = {"properties": dict.fromkeys(a["name"] for a in spec.arguments)}
        raise InvalidParams(
            unknown_argument_message(spec.name, listed, unknown, kind="prompt"),
            {"unknownArguments": unknown},
        )
    missing = [a["name"] for a in spec.arguments if a["required"] and a["name"] not in arguments]
    if missing:
        raise InvalidParams(f"Missing required prompt arguments: {', '.join(missing)}")
    kwargs: dict[str, Any] = dict(arguments)
    if spec.context_param:
        kwargs[spec.context_param] = ctx
    try:
        value = _call(spec.fn, spec.is_async, kwargs)
        ctx.ensure_questions_awaited()
        return spec.structure(value)
    except (InputNeeded, BecomeTask, McpError):
        raise
    except Exception as exc:
        if _is_content_error(exc):
            raise McpError(f"Prompt {spec.name} returned content it cannot send: {exc}") from exc
        logger.exception("prompt %s raised %s", spec.name, type(exc).__name__)
        raise McpError(f"Prompt {spec.name} failed") from exc
