"""Every relative link of the README and docs/*.md leads somewhere (issue 29, item 7): the file
exists, and a `#fragment` into a Markdown page names one of its headings (as GitHub makes
anchors of them). Links to other sites are not followed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"```.*?```", re.DOTALL)
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*$", re.MULTILINE)


def anchors(page: Path) -> set[str]:
    """GitHub's anchors for a page's headings (lower case, punctuation dropped, spaces as -)."""
    found: set[str] = set()
    for heading in HEADING.findall(FENCE.sub("", page.read_text())):
        text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
        slug = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
        candidate, n = slug, 1
        while candidate in found:
            candidate, n = f"{slug}-{n}", n + 1
        found.add(candidate)
    return found


def relative_links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text())
    return [t for t in LINK.findall(text) if not re.match(r"^[a-z][a-z0-9+.-]*:", t)]


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in relative_links(page):
        path, _, fragment = target.partition("#")
        destination = (page.parent / path).resolve() if path else page
        if not destination.exists():
            broken.append(f"{target}: no such file")
        elif fragment and destination.suffix == ".md" and fragment not in anchors(destination):
            broken.append(f"{target}: no heading #{fragment} in {destination.name}")
    assert broken == []


def test_the_anchor_reader_follows_github() -> None:
    sample = ROOT / "README.md"
    assert "quick-start" in anchors(sample)
    assert "cli-and-client-api" in anchors(sample)


REPO_PATH = re.compile(r"`((?:src|tests|scripts|handlers|bench|examples|infra|docs)/[\w./-]+)`")


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_path_named_in_backticks_exists(page: Path) -> None:
    """`tests/server/legacy/test_costs.py` was once named by its old path."""
    named = REPO_PATH.findall(page.read_text())
    missing = [path for path in named if not (ROOT / path.rstrip("/")).exists()]
    assert missing == []
