"""`sam build` without Docker: the deployable artifacts in `.aws-sam/build`, checked.

0. The tools first (`sam_tools`): the ToolsModule (`--tools-module`, what `make build
   TOOLS=...` passes; else `ToolsModule` in samconfig.toml's parameter_overrides, what the
   last deploy used; else $MCP_TASKS_TOOLS; else the template's default) is a module, a `.py`
   file or a declaration, as `make run TOOLS=...` takes it. It is loaded and checked, and what
   it references in the checkout is found, before anything is installed or built: a problem is
   one line and a stop. A declaration's least-privilege parameters (`targets.iam`; also those
   of declarations a tools module includes) are written to `.aws-sam/managed-parameters.json`.
1. `sam validate --lint --region us-east-1` on template.yaml (cfn-lint; offline, no
   credentials). SAM CLI lives in its own tool environment, `.tools/sam-venv` (git-ignored):
   it pins its own boto3 and pydantic, which must not meet the project's.
2. The function source is staged in `.aws-sam/stage` rather than built from the project root:
   `CodeUri: .` would copy `.tools` (node_modules, the SAM venv itself), tests and caches into
   every function. The stage holds `handlers/`, `mcp_tasks_aws/` (less the embedded stack,
   `mcp_tasks_aws.local`), the tools' files (only what they reference, `sam_tools`) and a
   `requirements.txt` generated from pyproject's `[project].dependencies` (and the `durable`
   extra, the durable function's SDK) less boto3/botocore
   (the Lambda runtime provides them). The stage template is `template.yaml` with `CodeUri`
   pointed at the staged code (and `DefinitionUri` re-based so it still names infra/).
3. `sam build` (arm64 wheels for each function's runtime, python3.12, and python3.13 for the
   durable function, each Python found on this machine; pure-Python and manylinux wheels need
   no container),
   then the AWS SDK tree is pruned if a dependency pulled it in (RUNTIME_SDK_TREE; --keep-sdk
   keeps it), and checks: every function has `handlers/` and `mcp_tasks_aws/`, and none has
   moto, the MCP SDK (`mcp`), pytest, boto3 or botocore.
4. Bytecode: every module of every function is compiled with its runtime's Python into `__pycache__`
   (`compileall`, hash-based and unchecked). Lambda's code directory is read-only, so a module
   without bytecode is compiled from source at every cold start; and a zip keeps file times to
   2 s, so timestamp-checked bytecode could be judged stale after unzipping. A deployed
   artifact never changes, so the source need not be rechecked.
5. Import smoke test (`sam_smoke`): in each function's package, a fresh Python 3.12 imports
   that function's handler (its `Handler` in template.yaml), with the environment Lambda
   gives it and the ToolsModule (the handlers import it at init), and the modules imported
   only on first use (the AEAD that seals step results).

A successful build writes what it packaged to `.aws-sam/built-tools.json` (the ToolsModule
and the Managed* parameters): `make deploy` (`scripts/sam_deploy.py`) deploys exactly that.

Usage: `python scripts/sam_build.py [--skip-smoke] [--skip-validate] [--keep-sdk]
[--tools-module MODULE]`.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

from sam_smoke import FORBIDDEN, smoke
from sam_smoke import smoke_environment as smoke_environment  # bench/cold_start.py reads it here
from sam_tools import Plan, ToolsError, is_declaration, plan, relative_spec

ROOT = Path(__file__).resolve().parents[1]
SAM_VENV = ROOT / ".tools" / "sam-venv"
SAM_CLI = "aws-sam-cli==1.170.0"
STAGE = ROOT / ".aws-sam" / "stage"
BUILD = ROOT / ".aws-sam" / "build"
SMOKE = ROOT / ".aws-sam" / "smoke"
MANAGED_PARAMETERS = ROOT / ".aws-sam" / "managed-parameters.json"
BUILT_TOOLS = ROOT / ".aws-sam" / "built-tools.json"
"""What the last successful build packaged: its ToolsModule and Managed* parameters (what
`make deploy` deploys unless told otherwise)."""
RUNTIME_PROVIDED = {"boto3", "botocore"}
# The AWS SDK and its dependencies, all in the Lambda Python runtime: when a dependency pulls
# them in anyway (aws-xray-sdk requires botocore), they are pruned from the build, so the
# package stays small and the runtime's SDK is the one used, as with boto3 itself.
RUNTIME_SDK_TREE = {"boto3", "botocore", "s3transfer", "urllib3", "python-dateutil", "six"}
REQUIRED = ("handlers", "mcp_tasks_aws")

timings: dict[str, float] = {}


def timed(phase: str, started: float) -> None:
    timings[phase] = time.monotonic() - started
    log(f"{phase}: {timings[phase]:.1f} s")


def log(message: str) -> None:
    print(f"[sam_build] {message}", flush=True)


def run(cmd: list[str], env: dict[str, str] | None = None, cwd: Path = ROOT) -> None:
    log("$ " + " ".join(str(c) for c in cmd))
    subprocess.run(cmd, check=True, env=env, cwd=cwd)


def find_python(version: str) -> Path:
    """Python `version` ("3.12"): $SAM_PYTHON (3.12 only), pyenv's, or python`version` on PATH."""
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates = [os.environ.get("SAM_PYTHON", "")] if version == "3.12" else []
    pattern = pyenv_root / "versions" / f"{version}*" / "bin" / f"python{version}"
    candidates += sorted(glob.glob(str(pattern)))
    candidates.append(shutil.which(f"python{version}") or "")
    wanted = tuple(int(part) for part in version.split("."))
    for candidate in filter(None, candidates):
        # A pyenv shim may exist and still not run that version: ask the interpreter itself.
        probe = subprocess.run(
            [candidate, "-c", f"import sys; print(sys.version_info[:2] == {wanted})"],
            capture_output=True,
            text=True,
            check=False,
        )
        if probe.stdout.strip() == "True":
            return Path(candidate)
    raise SystemExit(
        f"Python {version} not found (pyenv, PATH): sam build needs it for the functions "
        f"whose Runtime is python{version}"
    )


def python312() -> Path:
    """Python 3.12 (the template's Runtime): $SAM_PYTHON, pyenv's 3.12, or python3.12 on PATH."""
    return find_python("3.12")


def runtimes_in(template: Path) -> dict[str, str]:
    """Each function of the staged template and its Python version ("3.13" for python3.13)."""
    document = json.loads(template.read_text())
    default = document.get("Globals", {}).get("Function", {}).get("Runtime", "")
    return {
        logical: str(resource.get("Properties", {}).get("Runtime", default)).removeprefix("python")
        for logical, resource in document.get("Resources", {}).items()
        if resource.get("Type") == "AWS::Serverless::Function"
    }


def tool_env(*pythons: Path) -> dict[str, str]:
    env = dict(os.environ)
    # sam's python_pip workflow looks for `python3.12` (`python3.13`, ...) on PATH, one per
    # runtime the template names; the SAM venv comes first.
    folders = [str(SAM_VENV / "bin"), *dict.fromkeys(str(p.parent) for p in pythons)]
    env["PATH"] = os.pathsep.join([*folders, env["PATH"]])
    env["SAM_CLI_TELEMETRY"] = "0"
    env.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    env.pop("VIRTUAL_ENV", None)
    return env


def ensure_sam(py312: Path) -> Path:
    sam = SAM_VENV / "bin" / "sam"
    stamp = SAM_VENV / ".installed"
    if sam.exists() and stamp.exists() and stamp.read_text().strip() == SAM_CLI:
        return sam
    started = time.monotonic()
    shutil.rmtree(SAM_VENV, ignore_errors=True)
    run([str(py312), "-m", "venv", str(SAM_VENV)])
    pip = [str(SAM_VENV / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    run([*pip, "--upgrade", "pip"])
    run([*pip, SAM_CLI])
    stamp.write_text(SAM_CLI + "\n")
    timed("install SAM CLI", started)
    return sam


PACKAGED_EXTRAS = ("durable",)
"""Extras every function package carries: the durable execution SDK, pinned, which only the
durable function imports (the lean-import tests hold the others to that); its runtime's own
copy may be another version."""


def runtime_requirements() -> list[str]:
    """pyproject's runtime dependencies and `PACKAGED_EXTRAS`, less what the Lambda runtime
    provides."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    keep = []
    extras = [r for extra in PACKAGED_EXTRAS for r in project["optional-dependencies"][extra]]
    for requirement in [*project["dependencies"], *extras]:
        name = requirement.split(";")[0].split("[")[0]
        for separator in "<>=!~ ":
            name = name.split(separator)[0]
        if name.strip().lower() not in RUNTIME_PROVIDED:
            keep.append(requirement)
    return keep


def copy_function_code(code: Path) -> None:
    """Our part of every function package into `code`: `handlers/` and `mcp_tasks_aws/`, less
    the embedded stack (`mcp_tasks_aws.local`) and any bytecode."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "handlers", code / "handlers", ignore=ignore)
    shutil.copytree(
        ROOT / "src" / "mcp_tasks_aws",
        code / "mcp_tasks_aws",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "local"),
    )


def check_declaration(tools_module: str) -> dict[str, list[str]]:
    """A declaration's least-privilege parameters; SystemExit with its one-line error."""
    return declared_parameters([tools_module], tools_module)


def declared_parameters(declarations: list[str], tools_module: str) -> dict[str, list[str]]:
    """The Managed* parameters the declarations need together (all empty for none), written
    to MANAGED_PARAMETERS and printed; SystemExit with a declaration's one-line error."""
    sys.path.insert(0, str(ROOT / "src"))
    from mcp_tasks_aws.targets.declaration import DeclarationError, load_declaration
    from mcp_tasks_aws.targets.iam import PARAMETERS, managed_parameters, parameter_overrides

    merged: dict[str, set[str]] = {name: set() for name in PARAMETERS}
    for declaration in declarations:
        try:
            found = managed_parameters(load_declaration(declaration, ROOT))
        except DeclarationError as exc:
            raise SystemExit(f"[sam_build] ToolsModule={tools_module}: {exc}") from None
        for name, values in found.items():
            merged[name].update(values)
    parameters = {name: sorted(values) for name, values in merged.items()}
    MANAGED_PARAMETERS.parent.mkdir(parents=True, exist_ok=True)
    MANAGED_PARAMETERS.write_text(json.dumps(parameters, indent=1) + "\n")
    if declarations:
        overrides = " ".join(parameter_overrides(parameters))
        log(f"managed tools: make deploy passes ToolsModule={tools_module} {overrides}")
    return parameters


def tools_spec(tools_module: str) -> str:
    """The ToolsModule as the deployed function resolves it (a path relative to the
    checkout); SystemExit for a path outside it."""
    try:
        return relative_spec(tools_module, ROOT)
    except ToolsError as exc:
        raise SystemExit(f"[sam_build] ToolsModule={tools_module}: {exc}") from None


def tools_plan(tools_module: str) -> Plan:
    """What the ToolsModule brings into the package (`sam_tools`), checked before anything
    is built: SystemExit with the one line that says what to do."""
    try:
        return plan(tools_module, ROOT)
    except ToolsError as exc:
        raise SystemExit(f"[sam_build] ToolsModule={tools_module}: {exc}") from None


def stage(tools: Plan) -> Path:
    """The stage: the project's function code, the tools' files (`sam_tools`: only what they
    reference), requirements.txt, and the template pointed at them."""
    sys.path.insert(0, str(ROOT / "src"))
    from mcp_tasks_aws.local.template import load_template

    shutil.rmtree(STAGE, ignore_errors=True)
    code = STAGE / "function"
    copy_function_code(code)
    packaged = tools.stage(code)
    if packaged:
        log(f"packaged for ToolsModule={tools.spec}: {', '.join(map(str, packaged))}")
    header = "# Generated by scripts/sam_build.py from pyproject.toml (boto3: Lambda runtime)."
    (code / "requirements.txt").write_text("\n".join([header, *runtime_requirements()]) + "\n")

    template = load_template(ROOT / "template.yaml")
    function_globals = template["Globals"]["Function"]
    if function_globals.get("CodeUri") != ".":
        raise SystemExit(f"expected Globals.Function.CodeUri '.', got {function_globals!r}")
    for logical, spec in template["Resources"].items():
        if spec["Type"] == "AWS::Serverless::Function" and "CodeUri" in spec["Properties"]:
            raise SystemExit(f"{logical} sets its own CodeUri: stage it too")
    function_globals["CodeUri"] = "function"
    # Other local paths (state machine definitions) keep pointing at the project's files.
    for spec in template["Resources"].values():
        uri = spec.get("Properties", {}).get("DefinitionUri")
        if spec["Type"] == "AWS::Serverless::StateMachine" and isinstance(uri, str):
            spec["Properties"]["DefinitionUri"] = os.path.relpath(ROOT / uri, STAGE)
    staged = STAGE / "template.json"
    staged.write_text(json.dumps(template, indent=1))
    return staged


def functions_in(template: Path) -> dict[str, list[str]]:
    """Every function of the staged template and the handlers it may run (`handler_names`)."""
    return function_handlers(json.loads(template.read_text()), template.parent / "function")


# What a shell handler (the STREAMING door's handlers/run.sh) serves: `uvicorn MODULE:APP`.
_SERVED = re.compile(r"\buvicorn\s+(?:[^\n]*?\s)?([A-Za-z_][\w.]*):([A-Za-z_]\w*)")


def function_handlers(template: dict[str, Any], code: Path) -> dict[str, list[str]]:
    """Each function's handlers as `module.attribute`, from its `Handler`: both branches of an
    `Fn::If` (a parameter picks one at deploy time, so the build serves both), and for a shell
    script in the code (`handlers/run.sh`) the ASGI app it starts with uvicorn."""
    default = template.get("Globals", {}).get("Function", {}).get("Handler")

    def names(handler: Any) -> list[str]:
        if isinstance(handler, dict) and "Fn::If" in handler:
            return [name for branch in handler["Fn::If"][1:] for name in names(branch)]
        if isinstance(handler, str) and handler.endswith(".sh"):
            served = _SERVED.search((code / handler).read_text())
            if served is None:
                raise SystemExit(f"{handler}: no `uvicorn MODULE:APP` in it to smoke-test")
            return [f"{served.group(1)}.{served.group(2)}"]
        return [str(handler)]

    return {
        logical: names(spec["Properties"].get("Handler", default))
        for logical, spec in template["Resources"].items()
        if spec["Type"] == "AWS::Serverless::Function"
    }


def normalized(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def prune_runtime_sdk(functions: list[str]) -> None:
    """Delete RUNTIME_SDK_TREE distributions (their RECORD files) from each function."""
    for logical in functions:
        package = BUILD / logical
        pruned = []
        for record in package.glob("*.dist-info/RECORD"):
            name = record.parent.name.removesuffix(".dist-info").rsplit("-", 1)[0]
            if normalized(name) not in RUNTIME_SDK_TREE:
                continue
            for line in record.read_text().splitlines():
                path = package / line.split(",")[0]
                if path.is_file() and package in path.resolve().parents:
                    path.unlink()
            shutil.rmtree(record.parent)
            pruned.append(name)
        for directory in sorted(package.rglob("*"), reverse=True):
            if directory.is_dir() and not any(directory.iterdir()):
                directory.rmdir()
        if pruned:
            log(f"{logical}: pruned {', '.join(sorted(pruned))} (the Lambda runtime has them)")


def check_build(functions: list[str]) -> None:
    for logical in functions:
        package = BUILD / logical
        present = {p.name for p in package.iterdir()}
        missing = [name for name in REQUIRED if name not in present]
        forbidden = sorted(
            p.name
            for p in package.iterdir()
            if p.name in FORBIDDEN or normalized(p.name.split("-")[0]) in {"moto", "mcp", "pytest"}
        )
        if missing or forbidden:
            raise SystemExit(f"{logical}: missing {missing}, forbidden {forbidden}")
        size = sum(f.stat().st_size for f in package.rglob("*") if f.is_file())
        dists = sorted(p.name.removesuffix(".dist-info") for p in package.glob("*.dist-info"))
        log(f"{logical}: {size / 1e6:.1f} MB unzipped; {', '.join(dists)}")
        if (package / "mcp_tasks_aws" / "local").exists():
            raise SystemExit(f"{logical}: the embedded stack (mcp_tasks_aws.local) was packaged")


def precompile(pythons: dict[str, Path], functions: list[str]) -> None:
    """Compile every function's modules for its runtime (see the module docstring, step 4):
    `pythons` is each function's interpreter."""
    started = time.monotonic()
    for logical in functions:
        package = BUILD / logical
        python = pythons[logical]
        # -q: print only what failed to compile. A dependency may ship files no import reaches
        # (templates, Python 2 examples); those are logged, and only our code must compile.
        subprocess.run(
            [
                *(str(python), "-m", "compileall", "-q", "-j", "0"),
                *("--invalidation-mode", "unchecked-hash", str(package)),
            ],
            check=False,
        )
        missing = uncompiled(package, REQUIRED, cache_tag(python))
        if missing:
            shown = ", ".join(str(m.relative_to(package)) for m in missing[:5])
            raise SystemExit(f"{logical}: {len(missing)} modules without bytecode ({shown})")
    timed("bytecode", started)


def cache_tag(python: Path) -> str:
    """The interpreter's bytecode tag (`cpython-312`)."""
    tag = subprocess.run(
        [str(python), "-c", "import sys; print(sys.implementation.cache_tag)"],
        check=True,
        capture_output=True,
        text=True,
    )
    return tag.stdout.strip()


def uncompiled(package: Path, roots: tuple[str, ...], tag: str) -> list[Path]:
    """The modules under `package`/`roots` without unchecked hash-based bytecode for `tag`.

    A `.pyc` header is a magic number, then a 32-bit flags field: bit 0 set means hash-based,
    bit 1 set means the source is checked against the hash at import."""
    missing = []
    for root in roots:
        for source in sorted((package / root).rglob("*.py")):
            cached = source.parent / "__pycache__" / f"{source.stem}.{tag}.pyc"
            flags = int.from_bytes(cached.read_bytes()[4:8], "little") if cached.exists() else 0
            if flags != 0b01:
                missing.append(source)
    return missing


def template_default(parameter: str) -> str:
    from mcp_tasks_aws.local.template import load_template

    return str(load_template(ROOT / "template.yaml")["Parameters"][parameter]["Default"])


def parameter_overrides_of(raw: Any) -> dict[str, str]:
    """samconfig.toml's `parameter_overrides` as a dict, in any of its spellings: a table (what
    `sam deploy --save-params` writes), a list, or a string of `Name="value"` items."""
    if isinstance(raw, dict):
        return {str(name): str(value) for name, value in raw.items()}
    items = raw if isinstance(raw, list) else shlex.split(str(raw or ""))
    parsed: dict[str, str] = {}
    for item in items:
        name, separator, value = str(item).partition("=")
        if not separator or not name:
            raise ValueError(f"{item!r} is not Name=value")
        parsed[name] = value.strip('"')
    return parsed


def configured_tools_module(given: str | None, root: Path = ROOT) -> str:
    """The ToolsModule the stack will serve (see the module docstring for the order)."""
    if given:
        return given
    samconfig = root / "samconfig.toml"
    if samconfig.exists():
        config = tomllib.loads(samconfig.read_text())
        for environment in config.values():
            if not isinstance(environment, dict):
                continue
            overrides = (
                environment.get("deploy", {}).get("parameters", {}).get("parameter_overrides", "")
            )
            tools_module = parameter_overrides_of(overrides).get("ToolsModule")
            if tools_module:
                return tools_module
    return os.environ.get("MCP_TASKS_TOOLS") or template_default("ToolsModule")


def remember_built(tools_module: str, parameters: dict[str, list[str]]) -> None:
    """What this build packaged, for `make deploy` (BUILT_TOOLS)."""
    built = {"ToolsModule": tools_module, "parameters": parameters}
    BUILT_TOOLS.write_text(json.dumps(built, indent=1) + "\n")


def built_line(functions: list[str], root: Path = ROOT) -> str:
    """The build's last line, naming the next step."""
    first_time = not (root / "samconfig.toml").exists()
    step = "make deploy"
    if first_time:
        step += " (stack mcp-tasks; STACK=..., REGION=..., PARAMS=... or GUIDED=1 to choose)"
    return f"built {', '.join(functions)} into {BUILD.relative_to(ROOT)}; next: {step}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-smoke", action="store_true", help="skip the import smoke test")
    parser.add_argument("--skip-validate", action="store_true", help="skip sam validate --lint")
    parser.add_argument(
        "--keep-sdk", action="store_true", help="keep botocore & co. if a dependency pulls them in"
    )
    parser.add_argument(
        "--tools-module",
        help="the ToolsModule to smoke-test (default: samconfig.toml, $MCP_TASKS_TOOLS, demo)",
    )
    args = parser.parse_args()
    total = time.monotonic()

    # The tools are checked first: a problem is one line and a stop, before anything is built.
    tools_module = tools_spec(configured_tools_module(args.tools_module))
    if is_declaration(tools_module):
        parameters = check_declaration(tools_module)
        tools = tools_plan(tools_module)
    else:
        tools = tools_plan(tools_module)
        included = [str(path.relative_to(ROOT.resolve())) for path in tools.declarations]
        parameters = declared_parameters(included, tools_module)
    py312 = python312()
    env = tool_env(py312)
    sam = ensure_sam(py312)
    run([str(sam), "--version"], env=env)

    if not args.skip_validate:
        started = time.monotonic()
        validate = [str(sam), "validate", "--lint", "--region", "us-east-1"]
        run([*validate, "--template-file", str(ROOT / "template.yaml")], env=env)
        timed("sam validate --lint", started)

    started = time.monotonic()
    template = stage(tools)
    functions = functions_in(template)
    # A function on another runtime (the durable function: python3.13) is built, and its
    # modules compiled, by that Python; sam finds each on PATH.
    versions = runtimes_in(template)
    pythons = {
        version: py312 if version == "3.12" else find_python(version)
        for version in sorted(set(versions.values()))
    }
    env = tool_env(py312, *pythons.values())
    shutil.rmtree(BUILD, ignore_errors=True)
    run(
        [
            str(sam),
            "build",
            "--template-file",
            str(template),
            "--build-dir",
            str(BUILD),
            "--parallel",
        ],
        env=env,
    )
    timed("sam build", started)
    if not args.keep_sdk:
        prune_runtime_sdk(list(functions))
    check_build(list(functions))
    precompile({logical: pythons[versions[logical]] for logical in functions}, list(functions))

    if not args.skip_smoke:
        smoke(py312, BUILD, SMOKE, functions, tools_module)
    remember_built(tools_module, parameters)
    timed("total", total)
    log(built_line(list(functions)))


if __name__ == "__main__":
    main()
