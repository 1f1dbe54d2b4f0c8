"""The house's shape, read from the imports of `src/`: who may import whom, and no cycle.

Who may import whom is data: `boundaries.toml` beside this file, the design's boundary table
(docs/architecture.md), one entry per package. Every import counts, wherever it stands (module
level, inside a function, under `TYPE_CHECKING`): a lazy import is still an arrow a reader must
follow. A package is a folder (`server`, `server.legacy`, `client.cli`, …); a module at the top
(`app`, `config`) is its own node, and so is the package root (`mcp_tasks_aws/__init__.py`,
which re-exports the tool API).
"""

from __future__ import annotations

import ast
import tomllib
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
ROOT = "mcp_tasks_aws"
BOUNDARIES = Path(__file__).with_name("boundaries.toml")

DOMAIN = ("tasks", "tasks.runs")
DOMAIN_NEVER = ("server", "aws", "edge", "local", "client", "app", "config")
WIRE_MODELS = ("protocol.models", "protocol.transport", "protocol.legacy")
"""The domain (`tasks/`, its runs included) owns its ports; it never reaches the server, wire
models or adapters, whatever else the table says."""


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


def table() -> dict[str, dict[str, Any]]:
    """The boundary table, keyed by dotted package name under the root ("" is the root)."""
    packages: dict[str, dict[str, Any]] = tomllib.loads(BOUNDARIES.read_text())["packages"]
    return packages


def dotted(name: str) -> str:
    """The full module name of a table name ("" is the root package)."""
    return f"{ROOT}.{name}" if name else ROOT


def within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def forbidden_arrows(arrows: dict[str, set[str]], packages: dict[str, dict[str, Any]]) -> list[str]:
    """Every arrow of `arrows` (module -> modules) the table does not allow."""
    offending = []
    for source, targets in arrows.items():
        here = node_of(source).removeprefix(ROOT).removeprefix(".")
        rules = packages[here]
        allowed = {dotted(here), *map(dotted, rules["may_import"])}
        never = [dotted(prefix) for prefix in rules.get("never", [])]
        for target in sorted(targets):
            permitted = node_of(target) in allowed or any(within(target, a) for a in allowed)
            if not permitted or any(within(target, bad) for bad in never):
                offending.append(f"{source} -> {target}")
    return sorted(offending)


def test_every_package_has_a_row_in_the_table() -> None:
    packages = {node_of(module).removeprefix(ROOT).removeprefix(".") for module in MODULES}
    assert set(table()) == packages


def test_every_import_is_one_the_table_allows() -> None:
    assert forbidden_arrows(graph(), table()) == []


def test_the_table_keeps_the_domain_off_the_server_adapters_and_wire_models() -> None:
    packages = table()
    for name in DOMAIN:
        rules = packages[name]
        reached = [p for p in rules["may_import"] if any(within(p, bad) for bad in DOMAIN_NEVER)]
        assert reached == [], name
        assert set(WIRE_MODELS) <= set(rules.get("never", [])), name


def test_the_table_is_enforced() -> None:
    """An arrow the table does not allow is found, and so is one to a module it forbids."""
    packages = table()
    sneaky = {
        f"{ROOT}.tasks.runs.legs": {f"{ROOT}.aws.stepfunctions"},
        f"{ROOT}.tasks.service": {f"{ROOT}.protocol.models", f"{ROOT}.protocol.errors"},
        f"{ROOT}.aws.dynamodb": {f"{ROOT}.tasks.model"},
        f"{ROOT}.edge.streaming": {f"{ROOT}.server.live", f"{ROOT}.server.methods"},
    }
    assert forbidden_arrows(sneaky, packages) == [
        f"{ROOT}.edge.streaming -> {ROOT}.server.methods",
        f"{ROOT}.tasks.runs.legs -> {ROOT}.aws.stepfunctions",
        f"{ROOT}.tasks.service -> {ROOT}.protocol.models",
    ]


def rooms_merged(packages: dict[str, set[str]]) -> dict[str, set[str]]:
    """The package graph with each room (`room_of` in the table) one node with its house."""
    house = {
        dotted(name): dotted(rules["room_of"])
        for name, rules in table().items()
        if "room_of" in rules
    }
    merged: dict[str, set[str]] = defaultdict(set)
    for source, targets in packages.items():
        merged[house.get(source, source)] |= {house.get(t, t) for t in targets}
    for node, targets in merged.items():
        targets.discard(node)
    return merged


def test_no_cycle_between_packages() -> None:
    assert cycles(rooms_merged(package_graph())) == []


def test_a_room_counts_with_its_house_and_nothing_else_does() -> None:
    arrows = {f"{ROOT}.tasks": {f"{ROOT}.tasks.runs"}, f"{ROOT}.tasks.runs": {f"{ROOT}.tasks"}}
    assert cycles(rooms_merged(arrows)) == []
    arrows = {
        f"{ROOT}.server": {f"{ROOT}.server.legacy"},
        f"{ROOT}.server.legacy": {f"{ROOT}.server"},
    }
    assert cycles(rooms_merged(arrows)) == [[f"{ROOT}.server", f"{ROOT}.server.legacy"]]


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
