"""`make deploy`: `sam deploy` of what `make build` built, with the SAM CLI it installed.

The SAM CLI lives in `.tools/sam-venv` (see `sam_build.py`), not on PATH, so this runs it from
there, from the project root, where a plain `sam deploy` takes `.aws-sam/build/template.yaml`
(no `--template-file`: SAM keeps `samconfig.toml` next to the template it was *given*, which
would put it inside `.aws-sam/build`, where the next build deletes it and where `sam_build.py`
does not look for the ToolsModule):

- the first time (no `samconfig.toml` yet) with `--guided`: SAM asks for the stack name, the
  region and the parameters, and saves the answers to `samconfig.toml`;
- afterwards without it: the saved answers are used as they are.

Anything after `--` (or in `make deploy DEPLOY_ARGS=...`) goes to `sam deploy` unchanged, such
as `--guided` to answer the questions again, or `--config-env prod`.

Usage: `python scripts/sam_deploy.py [SAM DEPLOY ARGUMENTS ...]`.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from sam_build import BUILD, ROOT, ensure_sam, python312, tool_env

SAMCONFIG = "samconfig.toml"


def log(message: str) -> None:
    print(f"[sam_deploy] {message}", flush=True)


def deploy_command(sam: Path, extra: list[str], root: Path) -> list[str]:
    """The `sam deploy` command line: guided when nothing was saved yet (see the docstring)."""
    command = [str(sam), "deploy"]
    if not (root / SAMCONFIG).exists() and "--guided" not in extra:
        command.append("--guided")
    return [*command, *extra]


def check_built(build: Path) -> None:
    """Refuse, in one line, to deploy what was never built."""
    if not (build / "template.yaml").exists():
        raise SystemExit("[sam_deploy] nothing is built yet: run make build first")


def main(argv: list[str] | None = None) -> int:
    extra = list(sys.argv[1:] if argv is None else argv)
    if extra[:1] == ["--"]:
        extra = extra[1:]
    check_built(BUILD)
    py312 = python312()
    sam = ensure_sam(py312)
    command = deploy_command(sam, extra, ROOT)
    if "--guided" in command and not (ROOT / SAMCONFIG).exists():
        log(f"no {SAMCONFIG} yet: a guided deploy, whose answers are saved there for next time")
    log("$ " + " ".join(command))
    # SAM asks its questions on this terminal: stdin, stdout and stderr stay ours.
    return subprocess.run(command, env=tool_env(py312), cwd=ROOT, check=False).returncode


if __name__ == "__main__":
    raise SystemExit(main())
