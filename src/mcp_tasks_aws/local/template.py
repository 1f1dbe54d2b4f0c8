"""Reading `template.yaml`: CloudFormation's YAML tags, and resolving the few intrinsics the
embedded stack needs (Ref, GetAtt, Sub, If, Join, Select, Split) against local names.

This is what lets the embedded stack and the tests build the table, bucket, state machine and
function environments from the template itself: nothing is defined twice.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

_SHORT_TAGS = {
    "Ref": "Ref",
    "Condition": "Condition",
}


# libyaml's parser when PyYAML has it (the same safe constructors, about 13 times less CPU for
# template.yaml, which every local stack and many tests read); the pure-Python one otherwise.
_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _CfnLoader(_SafeLoader):  # type: ignore[misc,valid-type]
    """A YAML loader that turns `!Tag value` into the long form `{"Fn::Tag": value}`."""


def _construct(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
        if suffix == "GetAtt" and isinstance(value, str):
            value = value.split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    elif isinstance(node, yaml.MappingNode):
        value = loader.construct_mapping(node, deep=True)
    else:
        raise yaml.constructor.ConstructorError(None, None, f"unexpected node for !{suffix}")
    key = _SHORT_TAGS.get(suffix, f"Fn::{suffix}")
    return {key: value}


_CfnLoader.add_multi_constructor("!", _construct)


def load_template(path: Path) -> dict[str, Any]:
    with path.open() as handle:
        data: dict[str, Any] = yaml.load(handle, Loader=_CfnLoader)  # noqa: S506 - SafeLoader subclass
    return data


class Resolver:
    """Evaluates intrinsics with a table of names for Refs and attributes."""

    def __init__(
        self,
        refs: dict[str, str],
        attributes: Callable[[str, str], str],
        conditions: dict[str, bool] | None = None,
    ) -> None:
        self.refs = refs
        self.attributes = attributes
        self.conditions = conditions or {}

    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) != 1:
            return {k: self.resolve(v) for k, v in value.items()}
        ((key, arg),) = value.items()
        if key == "Ref":
            return self.refs[arg]
        if key == "Fn::GetAtt":
            return self.attributes(arg[0], arg[1])
        if key == "Fn::Sub":
            template, variables = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1])
            local = {k: str(self.resolve(v)) for k, v in variables.items()}

            def substitute(match: re.Match[str]) -> str:
                name = match.group(1)
                if name in local:
                    return local[name]
                if "." in name:
                    logical, attribute = name.split(".", 1)
                    return self.attributes(logical, attribute)
                return self.refs[name]

            return re.sub(r"\$\{([^}!]+)\}", substitute, template)
        if key == "Fn::If":
            condition, when_true, when_false = arg
            return self.resolve(when_true if self.conditions.get(condition) else when_false)
        if key == "Fn::Join":
            separator, parts = arg
            return separator.join(str(p) for p in self.resolve(parts))
        if key == "Fn::Select":
            index, items = arg
            return self.resolve(items)[int(self.resolve(index))]
        if key == "Fn::Split":
            separator, text = arg
            return str(self.resolve(text)).split(separator)
        return {key: self.resolve(arg)}
