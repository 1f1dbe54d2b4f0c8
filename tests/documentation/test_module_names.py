"""Docstrings and comments name modules that exist (issue 29, item 7): a move of modules left
14 old names behind (`tasks.wire`, `client.auth`, `legacy.state`, ...).

Every backticked dotted name in the comments and strings of `src/`, `handlers/` and
`scripts/` whose first part is one of the project's packages (`tasks`, `server.legacy`,
`client`, ...) must resolve: each part a module of that package, or a name defined in the
module reached so far. Dotted names that are not code (a declaration's fields) are listed.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "mcp_tasks_aws"
SOURCES = [
    *sorted(PACKAGE.rglob("*.py")),
    *sorted((ROOT / "handlers").glob("*.py")),
    *sorted((ROOT / "scripts").glob("*.py")),
]
NOT_CODE = {
    # A declaration's fields (targets.models), written as the YAML path a user reads.
    "local.module",
    "local.httpStub",
    "aws.region",
    "aws.account",
    "aws.partition",
    # The official SDK's client API.
    "client.experimental.tasks",
    # A logger's name.
    "mcp_tasks_aws.local.access",
}
DOTTED = re.compile(r"`([a-z_]\w*(?:\.[A-Za-z_]\w*)+)`")


def packages() -> dict[str, list[Path]]:
    """Every package of the project by its last name (`legacy` -> server/legacy)."""
    found: dict[str, list[Path]] = {"mcp_tasks_aws": [PACKAGE]}
    for init in PACKAGE.rglob("__init__.py"):
        if init.parent != PACKAGE:
            found.setdefault(init.parent.name, []).append(init.parent)
    return found


def resolves(base: Path, parts: list[str]) -> bool:
    """Whether `parts` name a module under `base` or a name defined in one."""
    here = base
    for index, part in enumerate(parts):
        if (here / part / "__init__.py").is_file():
            here = here / part
            continue
        if (here / f"{part}.py").is_file():
            here = here / f"{part}.py"
            continue
        module = here if here.suffix == ".py" else here / "__init__.py"
        # A name defined (or imported) in the module reached so far; deeper parts are its own.
        return index > 0 and re.search(rf"\b{re.escape(part)}\b", module.read_text()) is not None
    return True


def named(path: Path) -> list[tuple[int, str]]:
    found = []
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    for token in tokens:
        if token.type in (tokenize.STRING, tokenize.COMMENT):
            for match in DOTTED.finditer(token.string):
                line = token.start[0] + token.string[: match.start()].count("\n")
                found.append((line, match.group(1)))
    return found


def test_docstrings_name_modules_that_exist() -> None:
    by_name = packages()
    stale = []
    for path in SOURCES:
        for line, name in named(path):
            first, *rest = name.split(".")
            if name in NOT_CODE or first not in by_name:
                continue
            if not any(resolves(base, rest) for base in by_name[first]):
                stale.append(f"{path.relative_to(ROOT)}:{line}: `{name}`")
    assert stale == []


def test_the_reader_resolves_modules_and_names() -> None:
    tasks = PACKAGE / "tasks"
    assert resolves(tasks, ["transitions"])
    assert resolves(tasks, ["transitions", "allows"])
    assert not resolves(tasks, ["wire"])
    assert not resolves(PACKAGE / "client", ["auth", "oauth_provider"])
