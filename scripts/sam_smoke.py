"""The import smoke test of `make build` (`scripts/sam_build.py`, step 5): each function of the
build imports its own handlers (its `Handler` in template.yaml: for the API function both
doors', the STREAMING one's being the ASGI app `handlers/run.sh` serves) from its package,
with a fresh Python 3.12, the environment Lambda gives it and the ToolsModule it will serve
(the handlers import it at init); and the modules the functions import only on first use
(LAZY_IMPORTS).

Binary wheels in the build are for arm64, so the same versions for this machine are laid over
them (in `.aws-sam/smoke`), with boto3 as the runtime's stand-in. A tool definition the server
refuses ends the build in its own one line (`definition_error`); anything else that fails to
import prints the child's traceback.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

# Top-level names that must never be in a function package (boto3/botocore: the runtime's).
FORBIDDEN = ("moto", "mcp", "pytest", "_pytest", "boto3", "botocore")
# Imported by the functions only on first use, so an import of the handlers does not reach them.
LAZY_IMPORTS = ("cryptography.hazmat.primitives.ciphers.aead",)


def log(message: str) -> None:
    print(f"[sam_build] {message}", flush=True)


def binary_distributions(package: Path) -> list[str]:
    """`name==version` of every wheel in `package` that is not pure Python."""
    pins = []
    for wheel in package.glob("*.dist-info/WHEEL"):
        if "Root-Is-Purelib: true" in wheel.read_text():
            continue
        metadata = (wheel.parent / "METADATA").read_text().splitlines()
        fields = dict(line.split(": ", 1) for line in metadata if ": " in line)
        pins.append(f"{fields['Name']}=={fields['Version']}")
    return sorted(pins)


SMOKE_CHILD = """
import importlib, importlib.util, json, sys
overlay, package, handlers, forbidden, lazy = sys.argv[1:6]
sys.path[:0] = [overlay, package]
for name in json.loads(forbidden):
    spec = importlib.util.find_spec(name)
    if spec is not None and (spec.origin or "").startswith(package):
        raise SystemExit(f"{name} is in the package")
for handler in json.loads(handlers):
    name, _, attribute = handler.rpartition(".")
    module = importlib.import_module(name)
    assert callable(getattr(module, attribute, None)), handler
    print("imported", handler, "from", module.__file__)
for name in json.loads(lazy):
    importlib.import_module(name)
    print("imported", name, "(used on first use)")
"""


def smoke_environment(package: Path, tools_module: str, home: Path | None = None) -> dict[str, str]:
    """What Lambda gives the functions, as the template sets it (no AWS call is made)."""
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(home or package),
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        # What Lambda sets: Powertools turns tracing on inside Lambda.
        "AWS_LAMBDA_FUNCTION_NAME": "smoke",
        "AWS_EXECUTION_ENV": "AWS_Lambda_python3.12",
        "LAMBDA_TASK_ROOT": str(package),
        "MCP_TASKS_TOOLS": tools_module,
        "MCP_TASKS_TABLE": "smoke-table",
        "MCP_TASKS_STATE_MACHINE_ARN": "arn:aws:states:us-east-1:123456789012:stateMachine:s-tasks",
        "MCP_TASKS_RESULT_BUCKET": "smoke-bucket",
        "MCP_TASKS_DEFAULT_TTL_MS": "86400000",
        "MCP_TASKS_STATE_SECRET_ARN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:s",
        "MCP_TASKS_DEPLOYMENT_ID": "arn:aws:cloudformation:us-east-1:123456789012:stack/s/1",
        "POWERTOOLS_SERVICE_NAME": "mcp-tasks-aws",
        "POWERTOOLS_METRICS_NAMESPACE": "McpTasksAws",
        "PYDANTIC_DISABLE_PLUGINS": "__all__",
    }


# The last line of a traceback ending in a tool definition the server refuses at startup.
_DEFINITION_ERROR = re.compile(r"^(?:[\w.]+\.)?(ToolDefinitionError|ToolsModuleError): (.+)$")


def definition_error(stderr: str) -> str | None:
    """`ToolDefinitionError: …` when a handler import failed on the tools module's definitions
    (or on MCP_TASKS_TOOLS naming nothing), else None."""
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    found = _DEFINITION_ERROR.match(lines[-1]) if lines else None
    return f"{found.group(1)}: {found.group(2)}" if found else None


def smoke(
    py312: Path, build: Path, overlay: Path, functions: dict[str, list[str]], tools_module: str
) -> None:
    """Each function of `build` imports its own handlers (from the template's `Handler`) from
    its package, with the binary wheels for this machine installed in `overlay`."""
    started = time.monotonic()
    package = build / next(iter(functions))
    pins = [*binary_distributions(package), "boto3"]
    stamp = overlay / ".pins"
    if not (stamp.exists() and stamp.read_text() == "\n".join(pins)):
        shutil.rmtree(overlay, ignore_errors=True)
        install = [str(py312), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        install += ["--target", str(overlay), "--only-binary", ":all:", *pins]
        log("$ " + " ".join(install))
        subprocess.run(install, check=True)
        stamp.write_text("\n".join(pins))
    env = smoke_environment(package, tools_module, overlay)
    log(f"smoke test with ToolsModule={tools_module}")
    for logical, handlers in functions.items():
        child = subprocess.run(
            [
                # -B: a function on another runtime (the durable one) keeps only its own
                # runtime's bytecode; the others' was written before and is only read.
                *(str(py312), "-I", "-B", "-c", SMOKE_CHILD, str(overlay), str(build / logical)),
                *(json.dumps(handlers), json.dumps(FORBIDDEN), json.dumps(LAZY_IMPORTS)),
            ],
            env=env,
            cwd=build / logical,  # Lambda runs a function in its code root
            capture_output=True,
            text=True,
            check=False,
        )
        print(child.stdout, end="")
        if child.returncode != 0:
            definition = definition_error(child.stderr)
            if definition is not None and not os.environ.get("MCP_TASKS_DEBUG"):
                # What to change, in the tools module's own words (MCP_TASKS_DEBUG=1: traceback).
                raise SystemExit(f"[sam_build] ToolsModule={tools_module}: {definition}")
            print(child.stderr, end="", file=sys.stderr)
            hint = ""
            if "No module named 'aws_xray_sdk'" in child.stderr:
                hint = (
                    " (Tracing=Active imports the X-Ray SDK: the runtime dependencies need "
                    "aws-lambda-powertools[tracer])"
                )
            raise SystemExit(f"{logical}: the handlers do not import from the build{hint}")
    log(f"import smoke test: {time.monotonic() - started:.1f} s")
