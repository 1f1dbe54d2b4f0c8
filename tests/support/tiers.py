"""Test tiers, read from what each test uses, never from a list kept by hand.

A test's tiers are found by following what its code refers to: the test function, the
fixtures it requests (their whole closure, conftest ones included), its parametrized values,
and from each of those, every function or class of the test tree (or of `scripts/`, `bench/`,
`examples/`) they name, transitively. A reference that reaches one of the markers below puts
the test in that tier:

- `stack`: the embedded stack (`mcp_tasks_aws.local.stack`: moto, the handlers, a loopback
  server and the worker's threads);
- `subprocess`: a new process (`subprocess`, `multiprocessing`, `os.fork`, asyncio's
  subprocesses): the CLI, `make run`, the examples, a forked copy;
- `template`: the SAM transform or cfn-lint (`samtranslator`, `cfnlint`);
- `moto`: AWS resources in moto, in this process (`moto`, `mcp_tasks_aws.local.aws`).

A test in none of them is in-process. The reading is by name, so it errs on the heavy side (an
attribute that shares a name with a global counts as that global): a test may land in a slower
tier than it needs, never in a faster one. `make check` runs the in-process and moto tiers;
`make unit` runs them all. The npm tier (Node clients) is `make conformance` and `make interop`.
"""

from __future__ import annotations

import ast
import asyncio
import builtins
import contextlib
import dis
import functools
import inspect
import os
import subprocess
import sys
from collections.abc import Callable, Hashable, Iterable, Iterator
from pathlib import Path
from types import CodeType, FunctionType, MethodType, ModuleType
from typing import Any

import pytest

TIERS: dict[str, str] = {
    "stack": "starts the embedded stack (moto, the handlers, a loopback server)",
    "subprocess": "starts another process (the CLI, make run, an example, a fork)",
    "template": "transforms or lints the SAM template (aws-sam-translator, cfn-lint)",
    "moto": "AWS resources in moto, in this process",
}

# Module name prefixes: anything defined there (or the module itself) puts a test in the tier.
_MODULES: dict[str, str] = {
    "mcp_tasks_aws.local.stack": "stack",
    "subprocess": "subprocess",
    "multiprocessing": "subprocess",
    "asyncio.subprocess": "subprocess",
    "samtranslator": "template",
    "cfnlint": "template",
    "moto": "moto",
    "mcp_tasks_aws.local.aws": "moto",
    "mcp_tasks_aws.local.lambdas": "moto",
}
# Single callables whose module says nothing (`os.fork` lives in `posix`).
_CALLABLES: dict[int, str] = {
    id(os.fork): "subprocess",
    id(os.system): "subprocess",
    id(os.posix_spawn): "subprocess",
    id(asyncio.create_subprocess_exec): "subprocess",
    id(asyncio.create_subprocess_shell): "subprocess",
}
_CONTAINERS = (dict, list, tuple, set, frozenset)
_LOADS = {"LOAD_GLOBAL", "LOAD_NAME"}
_LOADERS = {"importlib", "runpy"}
_ATTRIBUTES = {"LOAD_ATTR", "LOAD_METHOD"}
_NAMING = _LOADS | _ATTRIBUTES | {"IMPORT_NAME", "IMPORT_FROM"}

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"
SCRIPT_NAMES = frozenset(path.stem for path in SCRIPTS.glob("*.py"))
_FOLLOWED = tuple(
    str(ROOT / folder) + os.sep for folder in ("tests", "scripts", "bench", "examples")
)


def _sentinel(module_name: str) -> str | None:
    for prefix, tier in _MODULES.items():
        if module_name == prefix or module_name.startswith(prefix + "."):
            return tier
    return None


def _followed(thing: Any) -> bool:
    """Whether `thing` is defined in this project outside the package (its own code is read)."""
    try:
        source = inspect.getsourcefile(thing)
    except (TypeError, OSError):
        return False
    return source is not None and source.startswith(_FOLLOWED)


def _codes(code: CodeType) -> Iterator[CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from _codes(const)


class FixtureName(str):
    """A fixture a function asks for by name (`request.getfixturevalue`)."""


class Script(str):
    """A module of `scripts/` a test loads from its file, named by a string."""

    def imports(self) -> set[str]:
        """The modules the script imports (at any depth of its code)."""
        tree = ast.parse((SCRIPTS / f"{self}.py").read_text())
        found: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module)
        return found


class _Imported(ModuleType):
    """A module imported inside a function that is not loaded yet: known by its name."""


def _loads_files(scope: dict[str, Any]) -> bool:
    """Whether a module loads code from files (importlib, runpy): the names it passes may be
    scripts'."""
    return any(
        isinstance(value, ModuleType) and value.__name__.partition(".")[0] in _LOADERS
        for value in scope.values()
    )


def _instructions_by_dis(code: CodeType) -> list[tuple[str, object]]:
    """Each instruction of `code` as (opname, the name it takes or None)."""
    return [
        (i.opname, i.argval if i.opname in _NAMING else None) for i in dis.get_instructions(code)
    ]


# The same, read from the bytecode directly: `dis.get_instructions` builds a full Instruction
# (positions, a repr of its argument) for each of the ~500,000 instructions the test tree's
# functions hold, most of the 3 s of CPU each pytest worker spent marking tiers; this is 6 times
# quicker. The argument encoding is CPython 3.11's (a global's name index shifted by one bit;
# in 3.12 an attribute's is too): any other version reads through `dis`, and
# tests/architecture/test_tiers.py holds the two equal on every function of the test tree.
_OPS = {dis.opmap[name]: name for name in _NAMING if name in dis.opmap}
_CACHE = dis.opmap.get("CACHE")
_SHIFTED = {dis.opmap["LOAD_GLOBAL"]}


def _instructions_by_bytes(code: CodeType) -> list[tuple[str, object]]:
    names = code.co_names
    found: list[tuple[str, object]] = []
    for _, op, arg in dis._unpack_opargs(code.co_code):  # type: ignore[attr-defined]
        if op == _CACHE:  # inline caches: dis.get_instructions hides them too
            continue
        name = _OPS.get(op)
        if name is None:
            found.append((dis.opname[op], None))
        else:
            found.append((name, names[arg >> 1 if op in _SHIFTED else arg]))
    return found


instructions = _instructions_by_bytes if sys.version_info[:2] == (3, 11) else _instructions_by_dis


def _named(function: FunctionType) -> Iterator[Any]:
    """Every global `function` names (and attribute chains from modules and classes)."""
    scope = function.__globals__
    for code in _codes(function.__code__):
        names = [c for c in code.co_consts if isinstance(c, str) and c.isidentifier()]
        if "getfixturevalue" in code.co_names:  # fixtures asked for by name at run time
            yield from (FixtureName(name) for name in names)
        if _loads_files(scope):  # a script loaded from its file by name: read its imports
            yield from (Script(name) for name in names if name in SCRIPT_NAMES)
        current: Any = None
        imported: Any = None
        for opname, name in instructions(code):
            if opname == "IMPORT_NAME" and isinstance(name, str):
                # An import inside the function: the module, then what is taken from it.
                imported = current = sys.modules.get(name) or _Imported(name)
            elif opname == "IMPORT_FROM" and isinstance(name, str):
                current = getattr(imported, name, None)
            elif opname in _LOADS and isinstance(name, str):
                current = scope.get(name, getattr(builtins, name, None))
            elif opname in _ATTRIBUTES and isinstance(name, str) and current:
                if not isinstance(current, (ModuleType, type)):
                    current = None
                    continue
                current = getattr(current, name, None)
            else:
                current = None
                continue
            if current is not None:
                yield current


def _key(thing: Any) -> Hashable:
    """Names (fixtures, scripts) by value, everything else by identity."""
    if isinstance(thing, (FixtureName, Script)):
        return (type(thing).__name__, str(thing))
    return id(thing)


class Reader:
    """Finds the tiers of what a test uses; what each function names is read once."""

    def __init__(self) -> None:
        # Keyed by `_key`; each entry keeps its object alive, so no id is reused meanwhile.
        self._edges: dict[Hashable, tuple[Any, set[str], list[Any]]] = {}

    def tiers(
        self, roots: Iterable[Any], fixtures: Callable[[str], list[Any]] = lambda _: []
    ) -> set[str]:
        """The tiers reached from `roots`; `fixtures` finds a fixture's functions by name."""
        found: set[str] = set()
        seen: dict[Hashable, Any] = {}
        pending = list(roots)
        while pending:
            thing = pending.pop()
            key = _key(thing)
            if key in seen:
                continue
            seen[key] = thing
            if isinstance(thing, FixtureName):
                pending.extend(fixtures(thing))
                continue
            direct, further = self._read(thing)
            found |= direct
            pending.extend(further)
        return found

    def _read(self, thing: Any) -> tuple[set[str], list[Any]]:
        key = _key(thing)
        if key not in self._edges:
            self._edges[key] = (thing, *self._look(thing))
        _, direct, further = self._edges[key]
        return direct, further

    def _look(self, thing: Any) -> tuple[set[str], list[Any]]:
        """The tiers `thing` is itself, and the things to read next."""
        if isinstance(thing, Script):
            imported = thing.imports()
            tiers = {tier for name in imported if (tier := _sentinel(name))}
            siblings = [Script(name) for name in imported if name in SCRIPT_NAMES]
            return tiers, siblings
        if id(thing) in _CALLABLES:
            return {_CALLABLES[id(thing)]}, []
        if isinstance(thing, ModuleType):
            tier = _sentinel(thing.__name__)
            return ({tier} if tier else set()), []
        if isinstance(thing, _CONTAINERS):  # a table of functions (scenarios, cases)
            values = thing.values() if isinstance(thing, dict) else thing
            return set(), [value for value in values if callable(value)]
        if not callable(thing) or not isinstance(thing, (type, FunctionType, MethodType)):
            # An instance (a registry, a helper object, a builtin): what its class is.
            kind = type(thing)
            tier = _sentinel(kind.__module__)
            return ({tier} if tier else set()), ([kind] if _followed(kind) else [])
        tier = _sentinel(getattr(thing, "__module__", None) or "")
        if tier:
            return {tier}, []
        if isinstance(thing, MethodType):
            return set(), [thing.__func__]
        if hasattr(thing, "_get_wrapped_function"):  # a fixture function named directly
            return set(), [thing._get_wrapped_function()]
        unwrapped = inspect.unwrap(thing) if isinstance(thing, FunctionType) else thing
        if unwrapped is not thing:
            return set(), [unwrapped]
        if isinstance(thing, FunctionType):
            return set(), list(_named(thing)) if _followed(thing) else []
        if isinstance(thing, type) and _followed(thing):
            return set(), _members(thing)
        return set(), []


def _members(cls: type) -> list[Any]:
    """A class's own functions (methods, properties, static and class methods) and bases."""
    members: list[Any] = [base for base in cls.__bases__ if base is not object]
    for value in vars(cls).values():
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if isinstance(value, property):
            members.extend(f for f in (value.fget, value.fset) if f is not None)
        elif isinstance(value, FunctionType):
            members.append(value)
    return members


def item_roots(item: pytest.Item) -> list[Any]:
    """What a collected test uses: its function, its fixtures' functions, its parameters."""
    roots: list[Any] = []
    function = getattr(item, "function", None)
    if function is not None:
        roots.append(function)
    info = getattr(item, "_fixtureinfo", None)
    if info is not None:
        for name in item.fixturenames:  # type: ignore[attr-defined]
            roots.extend(definition.func for definition in info.name2fixturedefs.get(name, ()))
    callspec = getattr(item, "callspec", None)
    if callspec is not None:
        roots.extend(value for value in callspec.params.values() if callable(value))
    return roots


def _fixture_functions(item: pytest.Item) -> Callable[[str], list[Any]]:
    manager = item.session._fixturemanager

    def functions(name: str) -> list[Any]:
        """The fixture's functions, and the fixtures they request in turn."""
        definitions = manager.getfixturedefs(name, item) or ()
        found: list[Any] = [definition.func for definition in definitions]
        found += [FixtureName(arg) for definition in definitions for arg in definition.argnames]
        return found

    return functions


def tiers_of(item: pytest.Item, reader: Reader | None = None) -> set[str]:
    """The tiers of a collected test."""
    return (reader or Reader()).tiers(item_roots(item), _fixture_functions(item))


def mark(items: list[pytest.Item]) -> None:
    """Add each item's tier markers (`pytest.mark.stack`, ...)."""
    reader = Reader()
    for item in items:
        for tier in sorted(tiers_of(item, reader)):
            item.add_marker(getattr(pytest.mark, tier))


WAITING_TIERS = ("stack", "subprocess")
"""Tiers whose tests mostly wait (a server, a process, a listen window, a poll)."""


def waiting_modules_first(items: list[pytest.Item]) -> None:
    """Reorder `items` (in place, stably) so the modules that hold waiting tests come first,
    then those with moto or the template, then the rest: pytest-xdist hands modules out in
    this order (`--dist loadscope`), and the long ones started first leave the short
    in-process ones to fill the cores at the end, instead of two workers waiting out a long
    module while the machine idles (longest first, the usual rule for packing jobs)."""

    def rank(item: pytest.Item) -> int:
        names = {mark.name for mark in item.iter_markers()}
        if names.intersection(WAITING_TIERS):
            return 0
        return 1 if names.intersection(("moto", "template")) else 2

    module_rank: dict[str, int] = {}
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        module_rank[module] = min(module_rank.get(module, 2), rank(item))
    items.sort(key=lambda item: module_rank[item.nodeid.split("::", 1)[0]])


class TierMissed(AssertionError):
    """A test started what its tiers do not say: the reading above missed a way in."""


class Guard:
    """Holds the reading to what tests do: while a test runs (setup to teardown), starting the
    embedded stack or a process fails it unless it is marked `stack` / `subprocess`, so a test
    cannot sit in `make check`'s tiers while it starts either."""

    def __init__(self) -> None:
        self.running: tuple[str, set[str]] | None = None
        """The running test's id and tiers; None between tests."""

    def check(self, tier: str, what: str) -> None:
        if self.running is not None and tier not in self.running[1]:
            raise TierMissed(
                f"{self.running[0]} {what} but is not marked `{tier}`: teach "
                "tests/support/tiers.py how the test reaches it"
            )

    def install(self) -> None:
        from mcp_tasks_aws.local.stack import EmbeddedStack

        self.watch(EmbeddedStack, "__init__", "stack", "starts the embedded stack")
        self.watch(subprocess.Popen, "__init__", "subprocess", "starts a process")
        self.watch(os, "fork", "subprocess", "forks")

    def watch(self, owner: Any, name: str, tier: str, what: str) -> None:
        """Check the running test's tiers before each call of `owner.name`."""
        original = getattr(owner, name)

        @functools.wraps(original)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            self.check(tier, what)
            return original(*args, **kwargs)

        setattr(owner, name, guarded)

    @contextlib.contextmanager
    def running_test(self, item: pytest.Item) -> Iterator[None]:
        tiers = {marker.name for marker in item.iter_markers() if marker.name in TIERS}
        self.running = (item.nodeid, tiers)
        try:
            yield
        finally:
            self.running = None
