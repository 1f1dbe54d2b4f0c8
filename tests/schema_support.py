"""The published 2026-07-28 schema, and validation of one wire shape against one of its
definitions. A plain module (like mcp_support), shared by the contract tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

SCHEMA_PATH = Path(__file__).resolve().parent / "schemas" / "mcp-2026-07-28.schema.json"
SCHEMA_URI = "urn:mcp:schema:2026-07-28"
SCHEMA: dict[str, Any] = json.loads(SCHEMA_PATH.read_text())
REGISTRY: Registry = Registry().with_resource(
    SCHEMA_URI, Resource.from_contents(SCHEMA, default_specification=DRAFT202012)
)


def validator(definition: str) -> Draft202012Validator:
    """A validator for one `$defs` entry; its inner `#/$defs/...` refs resolve in the document."""
    assert definition in SCHEMA["$defs"], definition
    return Draft202012Validator({"$ref": f"{SCHEMA_URI}#/$defs/{definition}"}, registry=REGISTRY)


def assert_valid(instance: Any, definition: str) -> None:
    errors = sorted(validator(definition).iter_errors(instance), key=lambda e: list(e.path))
    assert not errors, f"not a valid {definition}: " + "; ".join(
        f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]
    )
