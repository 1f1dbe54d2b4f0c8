"""Payload templates: JSON with `${name}` placeholders for a call's arguments.

A template is any JSON value. A string that is exactly `${name}` becomes the argument's value,
whatever its type (an object member whose argument is absent is left out); `${a.b}` reads into
an object argument; a placeholder inside a longer string is replaced by the value's text
(JSON for objects and lists). `$${` writes a literal `${`. Besides the arguments, a template
may use `${taskId}` (the MCP task id, in a task) and `${arguments}` (all of them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

_WHOLE: Final = re.compile(r"\$\{([A-Za-z0-9_.\-]+)\}")
_ANY: Final = re.compile(r"\$\$\{|\$\{([A-Za-z0-9_.\-]+)\}")
_ABSENT: Final = object()


def _lookup(values: Mapping[str, Any], path: str) -> Any:
    node: Any = values
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return _ABSENT
        node = node[part]
    return node


def _text(value: Any) -> str:
    if value is _ABSENT or value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def render(template: Any, values: Mapping[str, Any]) -> Any:
    """`template` with its placeholders filled from `values`."""
    if isinstance(template, str):
        whole = _WHOLE.fullmatch(template)
        if whole is not None:
            value = _lookup(values, whole.group(1))
            return None if value is _ABSENT else value

        def fill(match: re.Match[str]) -> str:
            if match.group(0) == "$${":
                return "${"
            return _text(_lookup(values, match.group(1)))

        return _ANY.sub(fill, template)
    if isinstance(template, list):
        return [render(item, values) for item in template]
    if isinstance(template, dict):
        rendered = {}
        for key, item in template.items():
            whole = _WHOLE.fullmatch(item) if isinstance(item, str) else None
            if whole is not None and _lookup(values, whole.group(1)) is _ABSENT:
                continue  # an absent optional argument leaves its member out
            rendered[key] = render(item, values)
        return rendered
    return template
