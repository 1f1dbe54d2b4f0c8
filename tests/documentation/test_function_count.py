"""How many Lambda functions the docs say there are, and which, comes from template.yaml
(issue 29, item 7): "four Lambda functions" stayed in three places after a fifth was added,
and the build's import smoke test missed its handler.

Every "N Lambda functions", "N Lambda entry points" or "N handlers" of the README and
docs/*.md must say the template's number; a list in brackets right after it must name as
many; and `handlers/` holds exactly the modules the template's functions run.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mcp_tasks_aws.local.template import load_template

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}
CLAIM = re.compile(
    r"\b(one|two|three|four|five|six|seven|\d+) (?:Lambda functions|Lambda entry points|handlers)"
    r"\b(?: \(([^)]*)\))?",
    re.IGNORECASE,
)


def functions() -> dict[str, str]:
    """The template's functions and the handler each runs."""
    resources = load_template(ROOT / "template.yaml")["Resources"]
    return {
        logical: spec["Properties"]["Handler"]
        for logical, spec in resources.items()
        if spec["Type"] == "AWS::Serverless::Function"
    }


def claims(page: Path) -> list[tuple[int, int | None, str]]:
    """(line, number said, the bracketed list after it) for each count of functions."""
    found = []
    text = page.read_text()
    for match in CLAIM.finditer(text):
        word = match.group(1).lower()
        number = NUMBERS.get(word, int(word) if word.isdigit() else None)
        found.append((text[: match.start()].count("\n") + 1, number, match.group(2) or ""))
    return found


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_count_of_the_functions_is_the_templates(page: Path) -> None:
    expected = len(functions())
    wrong = []
    for line, number, listed in claims(page):
        named = [part for part in re.split(r",\s*", listed.split(":")[0]) if part.strip()]
        if number != expected or (listed and len(named) != expected):
            wrong.append(f"{page.name}:{line}: says {number} ({listed}), template has {expected}")
    assert wrong == []


def test_the_docs_count_the_functions_somewhere() -> None:
    said = [claim for page in PAGES for claim in claims(page)]
    assert len(said) >= 2


def test_handlers_are_the_templates() -> None:
    from infra.test_sam_build import sam_build

    template = load_template(ROOT / "template.yaml")
    run = {
        handler.rsplit(".", 1)[0]
        for handlers in sam_build.function_handlers(template, ROOT).values()
        for handler in handlers
    }
    present = {
        f"handlers.{p.stem}" for p in (ROOT / "handlers").glob("*.py") if p.stem != "__init__"
    }
    assert run == present
    assert "handlers.sweep" in run
