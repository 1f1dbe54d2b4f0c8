"""Text typed by a person, turned into JSON values by a JSON Schema; and terminal forms.

This module owns two things the CLI needs and nothing else:

- `parse_arguments`: `key=value` command-line words to a tool's arguments, each value
  coerced by its property's schema in the tool's `inputSchema` (`seconds=2` becomes the number
  2, `force=yes` the boolean true, `tags=a,b` a list), with `key:=JSON` for literal JSON; and
  `unknown_argument_warning`, the one line warning of names the schema does not list (the call
  is still sent: the server decides, and most refuse them);
- `fill_form`: an elicitation's `requestedSchema` (the flat subset the spec allows: strings
  with formats and lengths, numbers and integers with bounds, booleans, single- and
  multi-select enums in all their spellings, defaults, required fields) asked field by field
  through a small `FormIO` (the CLI's terminal; a script in tests), ending in an `ElicitResult`
  whose action is accept, decline or cancel. A form of one boolean field (a confirmation) is
  one question: `y` or `n` answers it, `d` declines, `c` cancels.

Parsing is pure (`coerce`, `parse_arguments`); only `fill_form` / `confirm_url` do I/O, through
the `FormIO` they are given.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeAlias

from mcp_types import ElicitRequestFormParams, ElicitRequestURLParams, ElicitResult

from mcp_tasks_aws.protocol.argument_names import (
    closes,
    closest_name,
    unknown_argument_message,
    unknown_names,
)

__all__ = [
    "ArgumentError",
    "Choice",
    "FormIO",
    "choices_of",
    "coerce",
    "confirm_url",
    "describe_type",
    "fill_form",
    "parse_arguments",
    "unknown_argument_warning",
]

_TRUE = frozenset({"y", "yes", "true", "t", "1", "on"})
_FALSE = frozenset({"n", "no", "false", "f", "0", "off"})
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


Action: TypeAlias = Literal["accept", "decline", "cancel"]


class ArgumentError(ValueError):
    """A value or an argument list that does not fit the schema; the message says why."""


@dataclass(frozen=True)
class Choice:
    value: str
    title: str


def choices_of(schema: dict[str, Any]) -> list[Choice] | None:
    """The options of a single-select enum (`enum`/`enumNames`, or `oneOf`/`anyOf` of consts)."""
    if isinstance(schema.get("enum"), list):
        names = schema.get("enumNames")
        values = [str(v) for v in schema["enum"]]
        titles = [str(n) for n in names] if isinstance(names, list) else values
        if len(titles) != len(values):
            titles = values
        return [Choice(v, t) for v, t in zip(values, titles, strict=True)]
    for key in ("oneOf", "anyOf"):
        options = schema.get(key)
        if (
            isinstance(options, list)
            and options
            and all(isinstance(o, dict) and "const" in o for o in options)
        ):
            return [Choice(str(o["const"]), str(o.get("title", o["const"]))) for o in options]
    return None


def _item_choices(schema: dict[str, Any]) -> list[Choice] | None:
    """The options of a multi-select (`type: array` whose items are an enum)."""
    items = schema.get("items")
    return choices_of(items) if isinstance(items, dict) else None


def _types(schema: dict[str, Any]) -> list[str]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list):
        return [k for k in kind if isinstance(k, str)]
    return []


def describe_type(schema: dict[str, Any]) -> str:
    """A short human label for a property's type."""
    if choices_of(schema) is not None:
        return "choice"
    if _item_choices(schema) is not None:
        return "choices"
    kinds = _types(schema)
    if not kinds:
        branches = [b for b in schema.get("anyOf", []) or [] if isinstance(b, dict)]
        kinds = [k for b in branches for k in _types(b)]
    return "|".join(kinds) or "any"


def _pick(raw: str, choices: Sequence[Choice]) -> str:
    text = raw.strip()
    if text.isdigit() and 1 <= int(text) <= len(choices):
        return choices[int(text) - 1].value
    for choice in choices:
        if text == choice.value:
            return choice.value
    for choice in choices:
        if text.casefold() in (choice.value.casefold(), choice.title.casefold()):
            return choice.value
    listed = ", ".join(c.value for c in choices)
    raise ArgumentError(f"{raw!r} is not one of: {listed}")


def _number(raw: str, schema: dict[str, Any], integer: bool) -> int | float:
    text = raw.strip()
    try:
        value: int | float = int(text)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            raise ArgumentError(f"{raw!r} is not a number") from None
        if not math.isfinite(value):
            raise ArgumentError(f"{raw!r} is not a finite number") from None
        if integer:
            if not value.is_integer():
                raise ArgumentError(f"{raw!r} is not a whole number") from None
            value = int(value)
    minimum, maximum = schema.get("minimum"), schema.get("maximum")
    if isinstance(minimum, int | float) and value < minimum:
        raise ArgumentError(f"{value} is below the minimum {minimum}")
    if isinstance(maximum, int | float) and value > maximum:
        raise ArgumentError(f"{value} is above the maximum {maximum}")
    return value


def _boolean(raw: str) -> bool:
    text = raw.strip().casefold()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ArgumentError(f"{raw!r} is not yes/no (or true/false)")


def _string(raw: str, schema: dict[str, Any]) -> str:
    min_length, max_length = schema.get("minLength"), schema.get("maxLength")
    if isinstance(min_length, int) and len(raw) < min_length:
        raise ArgumentError(f"needs at least {min_length} characters")
    if isinstance(max_length, int) and len(raw) > max_length:
        raise ArgumentError(f"allows at most {max_length} characters")
    if schema.get("format") == "email" and not _EMAIL.match(raw):
        raise ArgumentError(f"{raw!r} is not an email address")
    return raw


def _array(raw: str, schema: dict[str, Any]) -> list[Any]:
    text = raw.strip()
    if text.startswith("["):
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ArgumentError(f"not a JSON array: {exc.msg}") from None
        if not isinstance(loaded, list):
            raise ArgumentError("not a JSON array")
        return loaded
    items = schema.get("items") if isinstance(schema.get("items"), dict) else {}
    assert isinstance(items, dict)
    parts = [p.strip() for p in text.split(",") if p.strip()]
    values = [coerce(p, items) for p in parts]
    min_items, max_items = schema.get("minItems"), schema.get("maxItems")
    if isinstance(min_items, int) and len(values) < min_items:
        raise ArgumentError(f"needs at least {min_items} item(s)")
    if isinstance(max_items, int) and len(values) > max_items:
        raise ArgumentError(f"allows at most {max_items} item(s)")
    return values


def _json(raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ArgumentError(f"not valid JSON: {exc.msg}") from None


def coerce(raw: str, schema: dict[str, Any]) -> Any:
    """`raw` as the JSON value `schema` describes; `ArgumentError` says why it cannot be."""
    choices = choices_of(schema)
    if choices is not None:
        return _pick(raw, choices)
    kinds = _types(schema)
    if not kinds:
        branches = [
            b for b in (schema.get("anyOf") or schema.get("oneOf") or []) if isinstance(b, dict)
        ]
        if branches:
            return _first_fit(raw, branches)
        try:
            return json.loads(raw)  # no type: a JSON literal if it is one, else the text
        except json.JSONDecodeError:
            return raw
    if len(kinds) > 1:
        return _first_fit(raw, [{**schema, "type": k} for k in kinds])
    kind = kinds[0]
    if kind == "string":
        return _string(raw, schema)
    if kind in ("number", "integer"):
        return _number(raw, schema, integer=kind == "integer")
    if kind == "boolean":
        return _boolean(raw)
    if kind == "null":
        if raw.strip().casefold() in ("null", "none", ""):
            return None
        raise ArgumentError(f"{raw!r} is not null")
    if kind == "array":
        return _array(raw, schema)
    if kind == "object":
        value = _json(raw)
        if not isinstance(value, dict):
            raise ArgumentError("not a JSON object")
        return value
    return raw


def _first_fit(raw: str, branches: Iterable[dict[str, Any]]) -> Any:
    """The first branch that accepts `raw`, trying null and non-strings before strings."""
    ordered = sorted(branches, key=lambda b: "string" in _types(b))
    errors = []
    for branch in ordered:
        try:
            return coerce(raw, branch)
        except ArgumentError as exc:
            errors.append(str(exc))
    raise ArgumentError("; ".join(errors) or f"{raw!r} fits no allowed type")


def parse_arguments(words: Sequence[str], input_schema: dict[str, Any] | None) -> dict[str, Any]:
    """`key=value` / `key:=JSON` words as tool arguments, checked against `input_schema`."""
    schema = input_schema or {}
    properties: dict[str, Any] = schema.get("properties") or {}
    arguments: dict[str, Any] = {}
    for word in words:
        key, sep, raw = word.partition("=")
        if not sep or not key:
            raise ArgumentError(f"expected key=value (or key:=JSON), got {word!r}")
        literal = key.endswith(":")
        key = key.removesuffix(":")
        if closes(schema) and unknown_names(schema, [key]):
            guess = closest_name(key, properties)
            if guess is not None:
                raise ArgumentError(f"unknown argument {key!r}: did you mean {guess!r}?")
            known = ", ".join(properties) or "none"
            raise ArgumentError(f"unknown argument {key!r} (the tool takes: {known})")
        prop = properties.get(key)
        try:
            if literal:
                arguments[key] = _json(raw)
            else:
                arguments[key] = coerce(raw, prop if isinstance(prop, dict) else {})
        except ArgumentError as exc:
            raise ArgumentError(f"{key}: {exc}") from None
    missing = [k for k in schema.get("required") or [] if k not in arguments]
    if missing:
        problem = "missing required argument(s): " + ", ".join(missing)
        # A required argument is most often missing because it was misspelt: name the typo.
        unknown = unknown_names(schema, arguments)
        if unknown:
            guess = closest_name(unknown[0], missing) or closest_name(unknown[0], properties)
            if guess is not None:
                problem += f"; unknown argument {unknown[0]!r}: did you mean {guess!r}?"
            else:
                known = ", ".join(properties) or "none"
                problem += f"; unknown argument {unknown[0]!r} (the tool takes: {known})"
        raise ArgumentError(problem)
    return arguments


def unknown_argument_warning(
    tool: str, arguments: dict[str, Any], input_schema: dict[str, Any] | None
) -> str | None:
    """One line warning of arguments the tool's schema does not list (None: all listed).

    Nothing is said when the schema allows other names (`additionalProperties` true or a
    schema); a closed one was refused by `parse_arguments` already.
    """
    schema = input_schema or {}
    extra = schema.get("additionalProperties")
    if extra is True or isinstance(extra, dict):
        return None
    unknown = unknown_names(schema, arguments)
    if not unknown:
        return None
    return f"warning: {unknown_argument_message(tool, schema, unknown)} (sending it anyway)"


# -- terminal forms ------------------------------------------------------------------------------


class FormIO(Protocol):
    """Where a form is shown and answered."""

    async def ask(self, prompt: str) -> str | None:
        """Show `prompt`, return the line typed (without newline), or None at end of input."""
        ...

    def say(self, text: str) -> None:
        """Show a line of text."""
        ...


class _Cancelled(Exception):
    pass


END_OF_INPUT = "no answer (stdin is closed): answered cancel"
"""Said when a form or a question meets the end of input, so the cancel is not silent."""


async def _ask_action(io: FormIO, what: str) -> Action:
    """accept / decline / cancel; end of input means cancel (and says so)."""
    while True:
        answer = await io.ask(f"{what} [a]ccept, [d]ecline, [c]ancel (default: accept): ")
        if answer is None:
            io.say(END_OF_INPUT)
            return "cancel"
        text = answer.strip().casefold()
        if text in ("", "a", "accept", "y", "yes"):
            return "accept"
        if text in ("d", "decline", "n", "no"):
            return "decline"
        if text in ("c", "cancel"):
            return "cancel"
        io.say("  please answer a, d or c")


def _label(name: str, prop: dict[str, Any], required: bool) -> str:
    title = prop.get("title") if isinstance(prop.get("title"), str) else name
    details = [describe_type(prop)]
    if required:
        details.append("required")
    text = f"{title} ({', '.join(details)})"
    description = prop.get("description")
    if isinstance(description, str) and description and description != title:
        text += f": {description}"
    return text


def _default_text(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


async def _ask_field(io: FormIO, name: str, prop: dict[str, Any], required: bool) -> Any:
    """One field's value; `_MISSING` when left empty and optional. Raises `_Cancelled` at EOF."""
    io.say("  " + _label(name, prop, required))
    choices = choices_of(prop) or _item_choices(prop)
    if choices is not None:
        for index, choice in enumerate(choices, 1):
            suffix = f" ({choice.value})" if choice.title != choice.value else ""
            io.say(f"    {index}) {choice.title}{suffix}")
    hint = ""
    if _types(prop) == ["boolean"]:
        hint = " [y/n]"
    elif _item_choices(prop) is not None:
        hint = " (numbers or values, comma-separated)"
    has_default = "default" in prop
    if has_default:
        hint += f" [default: {_default_text(prop['default'])}]"
    while True:
        answer = await io.ask(f"  {name}{hint}: ")
        if answer is None:
            raise _Cancelled
        if answer.strip() == "":
            if has_default:
                return prop["default"]
            if not required:
                return _MISSING
            io.say("    a value is required")
            continue
        try:
            return coerce(answer, prop)
        except ArgumentError as exc:
            io.say(f"    {exc}")


_MISSING: Any = object()


def _yes_no(properties: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The one boolean field of a form that is a yes/no question, if it is one."""
    if len(properties) != 1:
        return None
    name, prop = next(iter(properties.items()))
    return (name, prop) if isinstance(prop, dict) and _types(prop) == ["boolean"] else None


async def _ask_yes_no(io: FormIO, name: str, prop: dict[str, Any]) -> ElicitResult:
    """A yes/no form as one question: y or n accepts with that value, d declines, c (or the
    end of input) cancels, Enter takes the default if there is one."""
    io.say("  " + _label(name, prop, required=False).replace("(boolean)", "(yes/no)"))
    default = prop.get("default")
    hint = f"; Enter: {_default_text(default)}" if isinstance(default, bool) else ""
    while True:
        answer = await io.ask(f"  {name} [y/n; d declines, c cancels{hint}]: ")
        if answer is None:
            io.say(END_OF_INPUT)
            return ElicitResult(action="cancel")
        text = answer.strip().casefold()
        if text == "" and isinstance(default, bool):
            return ElicitResult(action="accept", content={name: default})
        if text in _TRUE or text in _FALSE:
            return ElicitResult(action="accept", content={name: text in _TRUE})
        if text in ("d", "decline"):
            return ElicitResult(action="decline")
        if text in ("c", "cancel"):
            return ElicitResult(action="cancel")
        io.say("    please answer y or n (d declines, c cancels)")


async def fill_form(params: ElicitRequestFormParams, io: FormIO) -> ElicitResult:
    """Ask the form's fields in order and return the person's answer; a form of one boolean
    field is one yes/no question (`_ask_yes_no`)."""
    io.say(f"The server asks: {params.message}")
    schema = params.requested_schema or {}
    properties: dict[str, Any] = schema.get("properties") or {}
    required = {k for k in schema.get("required") or [] if isinstance(k, str)}
    yes_no = _yes_no(properties)
    if yes_no is not None:
        return await _ask_yes_no(io, *yes_no)
    action = await _ask_action(io, "Respond?")
    if action != "accept":
        return ElicitResult(action=action)
    content: dict[str, Any] = {}
    try:
        for name, prop in properties.items():
            value = await _ask_field(
                io, name, prop if isinstance(prop, dict) else {}, name in required
            )
            if value is not _MISSING:
                content[name] = value
    except _Cancelled:
        io.say(END_OF_INPUT)
        return ElicitResult(action="cancel")
    return ElicitResult(action="accept", content=content)


async def confirm_url(params: ElicitRequestURLParams, io: FormIO) -> ElicitResult:
    """A URL elicitation: show the URL; accepting means the person will open it."""
    io.say(f"The server asks: {params.message}")
    io.say(f"  Open this URL to continue: {params.url}")
    action = await _ask_action(io, "Open it?")
    return ElicitResult(action=action)
