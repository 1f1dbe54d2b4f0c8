"""The published schemas the wire is checked against (the copies in tests/schemas): MCP
2026-07-28, MCP 2025-11-25 and the Tasks extension draft, in one registry, and validation of one
wire shape against one definition of one of them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

SCHEMA_DIR = Path(__file__).resolve().parents[1] / "schemas"


class Schema:
    """One published schema document, known to `REGISTRY` by its `uri`."""

    def __init__(self, uri: str, filename: str) -> None:
        self.uri = uri
        self.path = SCHEMA_DIR / filename
        self.document: dict[str, Any] = json.loads(self.path.read_text())

    def validator(self, definition: str) -> Draft202012Validator:
        """A validator for one `$defs` entry; its inner `#/$defs/...` refs resolve in the
        document."""
        assert definition in self.document["$defs"], definition
        return Draft202012Validator({"$ref": f"{self.uri}#/$defs/{definition}"}, registry=REGISTRY)

    def assert_valid(self, instance: Any, definition: str) -> None:
        errors = sorted(
            self.validator(definition).iter_errors(instance), key=lambda e: list(e.path)
        )
        assert not errors, f"not a valid {definition}: " + "; ".join(
            f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]
        )


MCP = Schema("urn:mcp:schema:2026-07-28", "mcp-2026-07-28.schema.json")
LEGACY_MCP = Schema("urn:mcp:schema:2025-11-25", "mcp-2025-11-25.schema.json")
TASKS = Schema("urn:mcp:ext-tasks:draft", "ext-tasks-draft.schema.json")
"""The Tasks extension's schema: every $ref in it is local."""

REGISTRY: Registry = Registry().with_resources(
    (schema.uri, Resource.from_contents(schema.document, default_specification=DRAFT202012))
    for schema in (MCP, LEGACY_MCP, TASKS)
)
