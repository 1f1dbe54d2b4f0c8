"""What `make build` packages of the tools it builds: exactly what they reference, from inside
the checkout, placed where the deployed function looks for it.

The ToolsModule is what `make run TOOLS=...` takes (see `mcp_tasks_aws.config.load_toolset`):
a module name, a `.py` file, or a declaration, each relative to the checkout's root, which is
the function's code root once deployed. `plan(spec, root)` finds what that needs, checks it and
refuses at once, in one line saying what to do (`ToolsError`); `Plan.stage(code)` copies it.

- **A declaration** (`*.yaml`, `*.yml`, `*.json`): the file itself, the OpenAPI documents
  (`openapi[].document`) and ASL files (`target.definition`) it names, each at its path in the
  checkout. Each must be inside the declaration's folder; its `local` modules stand in for AWS
  on `make run` and are never deployed, so never staged. Nothing else in that folder is
  copied: with the declaration at the checkout's root, `.env`, `.git`, `.venv` and the build's
  own output stay out.
- **Tool code** (a module, or a `.py` file): the tools are loaded in a child Python, as the
  function loads them, and every module it imported from the checkout is staged, a package
  with its whole folder (a submodule imported later is there too); plus any declaration the
  tool set includes (`declared_tools`), as above. Each lands where the deployed function
  imports it the same way: a `.py` file's folder keeps its place (the function puts it on
  `sys.path`), a module found from the checkout's root or another import root (`src/`) goes
  to the code root. Modules of the project itself (`mcp_tasks_aws`, `handlers`) and installed
  packages (the runtime dependencies come from `requirements.txt`) are not copied.

Refused: a path outside the checkout, a module from a hidden folder (`.venv`, `.git`, ...) or
from outside the checkout, a file that would land on the project's own code, and whatever the
loader itself refuses (a typo in a module name, a tool definition the server would refuse).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DECLARATION_SUFFIXES = (".yaml", ".yml", ".json")
PROJECT_PACKAGES = ("handlers", "mcp_tasks_aws")
OWN_CODE = (*PROJECT_PACKAGES, "requirements.txt")
"""What the build itself puts at the code root: staged tools must not land on it."""


class ToolsError(Exception):
    """The ToolsModule cannot be packaged; the message is the one line that says why."""


def is_declaration(spec: str) -> bool:
    return spec.lower().endswith(DECLARATION_SUFFIXES)


@dataclass
class Plan:
    """The files to stage: code-root-relative destination -> source (a file or a folder)."""

    spec: str
    files: dict[Path, Path] = field(default_factory=dict)
    declarations: list[Path] = field(default_factory=list)

    def add(self, destination: Path, source: Path) -> None:
        if destination.parts[0] in OWN_CODE:
            raise ToolsError(
                f"{source} would be packaged as {destination}, which is the project's own code: "
                "rename it"
            )
        previous = self.files.get(destination)
        if previous is not None and previous != source:
            raise ToolsError(
                f"{previous} and {source} would both be packaged as {destination}: rename one"
            )
        self.files[destination] = source

    def stage(self, code: Path) -> list[Path]:
        """Copy the plan into the function code folder `code`; the destinations copied."""
        for destination, source in sorted(self.files.items()):
            target = code / destination
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, target, ignore=_package_ignore(source))
            else:
                shutil.copy2(source, target)
        return sorted(self.files)


def _package_ignore(package: Path) -> Callable[[str, list[str]], set[str]]:
    """What a package folder's copy leaves out: hidden entries, bytecode, and links that lead
    out of the package (a link to `/` would copy the machine)."""

    def ignore(folder: str, names: list[str]) -> set[str]:
        return {name for name in names if _left_out(Path(folder) / name, package)}

    return ignore


def _left_out(entry: Path, package: Path) -> bool:
    name = entry.name
    if name.startswith(".") or name == "__pycache__" or name.endswith((".pyc", ".pyo")):
        return True
    return entry.is_symlink() and not entry.resolve().is_relative_to(package.resolve())


def relative_spec(spec: str, root: Path) -> str:
    """The spec with a path inside the checkout written relative to it (what the deployed
    function resolves from its code root); ToolsError for a path outside it."""
    location, colon, attribute = spec.partition(":")
    if not _is_path(location):
        return spec
    path = Path(location)
    resolved = (path if path.is_absolute() else root / path).resolve()
    if not resolved.is_relative_to(root.resolve()):
        raise ToolsError(f"{location} is outside the checkout ({root}): move it inside")
    return resolved.relative_to(root.resolve()).as_posix() + colon + attribute


def _is_path(location: str) -> bool:
    return "/" in location or "\\" in location or location.endswith((".py", *DECLARATION_SUFFIXES))


def plan(spec: str, root: Path) -> Plan:
    """What `spec` needs in the function package (see the module docstring)."""
    spec = relative_spec(spec, root)
    found = Plan(spec)
    if is_declaration(spec):
        add_declaration(found, root / spec, root)
        return found
    loaded = load_in_child(spec, root)
    spec_folder = _import_folder(spec, root)
    packages: list[Path] = []
    for module in sorted(loaded["modules"], key=lambda m: (not m["package"], m["name"])):
        file = Path(module["file"]).resolve()
        if any(file.is_relative_to(p) for p in packages):
            continue  # inside a package staged whole
        depth = len(module["name"].split("."))
        import_root = file.parents[depth] if module["package"] else file.parents[depth - 1]
        source = file.parent if module["package"] else file
        where = source.relative_to(import_root)
        if spec_folder is not None and import_root == spec_folder:
            where = spec_folder.relative_to(root.resolve()) / where
        found.add(where, source)
        if module["package"]:
            packages.append(file.parent)
    for declaration in loaded["declarations"]:
        add_declaration(found, Path(declaration), root)
    return found


def _import_folder(spec: str, root: Path) -> Path | None:
    """The folder a `.py` spec's module is imported from (on `sys.path` when deployed too)."""
    location = spec.partition(":")[0]
    if not _is_path(location):
        return None
    sys.path.insert(0, str(root / "src"))
    from mcp_tasks_aws.config import file_module

    return file_module((root / location).resolve())[1]


def add_declaration(found: Plan, declaration: Path, root: Path) -> None:
    """The declaration and the files it references, each inside its folder."""
    sys.path.insert(0, str(root / "src"))
    from mcp_tasks_aws.targets.models import read_document

    declaration = declaration.resolve()
    if not declaration.is_relative_to(root.resolve()):
        raise ToolsError(f"{declaration} is outside the checkout ({root}): move it inside")
    folder = declaration.parent
    name = declaration.relative_to(root.resolve())
    found.add(name, declaration)
    found.declarations.append(declaration)
    data = read_document(declaration)
    references: list[tuple[str, Any]] = [
        (f"openapi #{index + 1}: document", source.get("document"))
        for index, source in enumerate(data.get("openapi") or [])
        if isinstance(source, dict)
    ]
    references += [
        (
            f"tool {tool.get('name')!r}: target.definition",
            (tool.get("target") or {}).get("definition"),
        )
        for tool in data.get("tools") or []
        if isinstance(tool, dict) and isinstance(tool.get("target"), dict)
    ]
    for where, value in references:
        if not isinstance(value, str):
            continue
        file = (folder / value).resolve()
        if not file.is_relative_to(folder):
            raise ToolsError(
                f"{name}: {where}: {value} is outside the declaration's folder ({folder}): "
                "keep what a declaration references beside it"
            )
        if not file.is_file():
            raise ToolsError(f"{name}: {where}: no such file {value} (beside the declaration)")
        found.add(file.relative_to(root.resolve()), file)


# The child loads the tools as the function will (the checkout's root as the current
# directory and first on sys.path), then says which modules came from where.
CHILD = """
import json, sys
from pathlib import Path
root = Path.cwd().resolve()
sys.path[:0] = [str(root)]
from mcp_tasks_aws.config import ToolsModuleError, load_toolset
from mcp_tasks_aws.tools.signature import ToolDefinitionError
try:
    toolset = load_toolset(sys.argv[1])
except (ToolsModuleError, ToolDefinitionError) as exc:
    name = "" if isinstance(exc, ToolsModuleError) else type(exc).__name__ + ": "
    print(json.dumps({"error": name + str(exc)}))
    raise SystemExit(0)
modules = []
for name, module in list(sys.modules.items()):
    file = getattr(module, "__file__", None)
    if file:
        package = getattr(module, "__path__", None) is not None
        modules.append({"name": name, "file": str(Path(file).resolve()), "package": package})
declarations = []
if "mcp_tasks_aws.targets.tools" in sys.modules:
    from mcp_tasks_aws.targets.tools import bindings_of
    declarations = [str(b.declaration.path.resolve()) for b in bindings_of(toolset)]
print(json.dumps({"modules": modules, "declarations": declarations}))
"""


def load_in_child(spec: str, root: Path) -> dict[str, Any]:
    """The checkout's modules the tools import when loaded, and the declarations they
    include; ToolsError with the loader's one line if they cannot be loaded."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_TASKS_")}
    child = subprocess.run(
        [sys.executable, "-c", CHILD, spec],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if child.returncode != 0:
        last = (child.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise ToolsError(
            f"the tools do not load: {last} (make run TOOLS={spec} shows the traceback)"
        )
    answer: dict[str, Any] = json.loads(child.stdout.strip().splitlines()[-1])
    if "error" in answer:
        raise ToolsError(answer["error"])
    answer["modules"] = [m for m in answer["modules"] if _is_local(m, root)]
    return answer


def _installed() -> list[Path]:
    """Where installed packages and the standard library live (never staged)."""
    places = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix)}
    places |= {Path(p) for p in sysconfig.get_paths().values()}
    return [p.resolve() for p in places]


def _is_local(module: dict[str, Any], root: Path) -> bool:
    """Whether a loaded module is the user's, in the checkout (ToolsError where it must not be)."""
    file = Path(module["file"])
    if module["name"].split(".")[0] in PROJECT_PACKAGES:
        return False  # the project's own code, packaged by the build itself
    if any(file.is_relative_to(place) for place in _installed()):
        return False
    root = root.resolve()
    if not file.is_relative_to(root):
        raise ToolsError(
            f"the tools import {module['name']} from outside the checkout ({file}): move it "
            "into the checkout, or install it as a dependency"
        )
    inside = file.relative_to(root)
    hidden = [part for part in inside.parts[:-1] if part.startswith(".")]
    if hidden:
        raise ToolsError(
            f"the tools import {module['name']} from the hidden folder {hidden[0]} ({file}): "
            "move it out of there"
        )
    return True
