"""The house's shape, read from the imports of `src/`: what the domain may not reach, and no cycle.

Every import counts, wherever it stands (module level, inside a function, under
`TYPE_CHECKING`): a lazy import is still an arrow a reader must follow. A package is a folder
(`server`, `server.legacy`, `client.cli`, …); a module at the top (`app`, `config`) is its own
node, and so is the package root (`mcp_tasks_aws/__init__.py`, which re-exports the tool API).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
ROOT = "mcp_tasks_aws"

DOMAIN_MAY_NOT_IMPORT = (
    "mcp_tasks_aws.server",
    "mcp_tasks_aws.aws",
    "mcp_tasks_aws.protocol.models",
    "mcp_tasks_aws.protocol.transport",
    "mcp_tasks_aws.protocol.legacy",
    "mcp_tasks_aws.edge",
    "mcp_tasks_aws.local",
    "mcp_tasks_aws.client",
    "mcp_tasks_aws.app",
)
"""The domain (`tasks/`) owns its ports; it never reaches the server, wire models or adapters."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p) for p in SRC.rglob("*.py")}


def imports_of(path: Path) -> set[str]:
    """The `mcp_tasks_aws` modules `path` imports, as dotted names (relative imports resolved)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            found.add(target)
            # `from pkg import module` names a module too.
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return {imported for imported in found if imported in MODULES and imported != name}


def node_of(module: str) -> str:
    """The package a module belongs to (its folder), or the module itself at the top."""
    path = SRC / Path(*module.split("."))
    if path.is_dir():
        return module
    return module.rpartition(".")[0] if module.count(".") > 1 else module


def graph() -> dict[str, set[str]]:
    arrows: dict[str, set[str]] = defaultdict(set)
    for path in SRC.rglob("*.py"):
        here = module_name(path)
        for target in imports_of(path):
            arrows[here].add(target)
    return arrows


def package_graph() -> dict[str, set[str]]:
    packages: dict[str, set[str]] = defaultdict(set)
    for source, targets in graph().items():
        for target in targets:
            if node_of(source) != node_of(target):
                packages[node_of(source)].add(node_of(target))
    return packages


def cycles(arrows: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected set of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in arrows.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            members = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                members.append(top)
                if top == node:
                    break
            if len(members) > 1:
                found.append(sorted(members))

    for node in sorted(arrows):
        if node not in index:
            visit(node)
    return found


def test_the_domain_imports_no_server_wire_model_or_adapter() -> None:
    arrows = graph()
    offending = sorted(
        f"{source} -> {target}"
        for source, targets in arrows.items()
        if source == f"{ROOT}.tasks" or source.startswith(f"{ROOT}.tasks.")
        for target in targets
        if any(target == bad or target.startswith(bad + ".") for bad in DOMAIN_MAY_NOT_IMPORT)
    )
    assert offending == []


def test_no_cycle_between_packages() -> None:
    assert cycles(package_graph()) == []


def test_no_cycle_between_modules() -> None:
    assert cycles(graph()) == []


@pytest.mark.parametrize(
    ("arrows", "expected"),
    [
        ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
        ({"a": {"b"}, "b": {"c"}}, []),
    ],
)
def test_the_cycle_finder_finds_cycles(
    arrows: dict[str, set[str]], expected: list[list[str]]
) -> None:
    assert cycles(arrows) == expected


def test_the_graph_sees_lazy_and_type_checking_imports() -> None:
    """The server's task endpoint imports its result models lazily; the graph still sees it."""
    arrows = graph()
    assert f"{ROOT}.server.task_results" in arrows[f"{ROOT}.server.tasks"]
    assert f"{ROOT}.tasks.service" in arrows[f"{ROOT}.server.tasks"]
