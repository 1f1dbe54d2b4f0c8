"""`make deploy`: `sam deploy` of what `make build` built, checked first, asking nothing.

1. **Checks before anything is asked**: something is built; AWS credentials are found (the
   environment, `~/.aws`, SSO, ... as botocore resolves them) and a region is known. Each
   missing piece is one line saying what to do, and the deploy stops.
2. **The answers**: the stack name (`make deploy STACK=...`, else `samconfig.toml`'s, else
   `mcp-tasks`, the name the README and docs use), the region (`REGION=...`, else
   samconfig.toml's, else the AWS configuration's), and the template parameters: those saved
   in samconfig.toml, then what the last `make build` packaged (its ToolsModule and Managed*
   parameters, `.aws-sam/built-tools.json`: the tools built last are the ones deployed), then
   `PARAMS="Name=value ..."`.
3. **`sam deploy`**, with the SAM CLI `make build` installed (`.tools/sam-venv`), from the
   project root (no `--template-file`: SAM then takes `.aws-sam/build/template.yaml` and keeps
   `samconfig.toml` in the root, where `sam_build.py` reads it): non-interactive (no change
   set to confirm, the SAM-managed bucket, `CAPABILITY_IAM`) and `--save-params`, so the
   answers are kept in `samconfig.toml` and the next deploy is `make deploy` again.
   `GUIDED=1` runs `sam deploy --guided` instead, its questions prefilled with the same
   answers.

Anything after `--` (or in `make deploy DEPLOY_ARGS=...`) goes to `sam deploy` unchanged.
Ctrl-C ends it quietly (one line, exit 130).

Usage: `python scripts/sam_deploy.py [--stack-name NAME] [--region REGION]
[--parameters "Name=value ..."] [--guided] [-- SAM DEPLOY ARGUMENTS ...]`.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sam_build import (
    BUILD,
    BUILT_TOOLS,
    ROOT,
    ensure_sam,
    parameter_overrides_of,
    python312,
    tool_env,
)

SAMCONFIG = "samconfig.toml"
STACK_NAME = "mcp-tasks"
"""The stack name when none is given or saved: the one the README's commands use."""
CAPABILITIES = ("CAPABILITY_IAM",)
EXIT_INTERRUPTED = 130


def log(message: str) -> None:
    print(f"[sam_deploy] {message}", flush=True)


class DeployError(Exception):
    """Why the deploy cannot start; the message is the one line that says what to do."""


def check_built(build: Path) -> None:
    """Refuse, in one line, to deploy what was never built."""
    if not (build / "template.yaml").exists():
        raise SystemExit("[sam_deploy] nothing is built yet: run make build first")


def saved_answers(root: Path, environment: str = "default") -> dict[str, Any]:
    """`samconfig.toml`'s answers for `environment`: its deploy parameters, and the region
    (which SAM saves among the global parameters); empty when there is none."""
    path = root / SAMCONFIG
    if not path.exists():
        return {}
    section = tomllib.loads(path.read_text()).get(environment, {})
    if not isinstance(section, dict):
        return {}
    answers: dict[str, Any] = {}
    for command in ("global", "deploy"):
        parameters = section.get(command, {}).get("parameters", {})
        if isinstance(parameters, dict):
            answers.update(parameters)
    return answers


def parse_overrides(raw: Any) -> dict[str, str]:
    """Parameter overrides in any spelling (`parameter_overrides_of`); DeployError if not."""
    try:
        return parameter_overrides_of(raw)
    except ValueError as exc:
        raise DeployError(f'{exc} (PARAMS="AuthMode=OAUTH CreateUserPool=true")') from None


def built_parameters(built_tools: Path) -> dict[str, str]:
    """What the last `make build` packaged, as template parameters (empty if unknown)."""
    if not built_tools.exists():
        return {}
    built = json.loads(built_tools.read_text())
    parameters = {"ToolsModule": str(built["ToolsModule"])}
    for name, values in built.get("parameters", {}).items():
        parameters[name] = ",".join(values)  # an empty list resets an earlier declaration's
    return parameters


def override_items(parameters: dict[str, str]) -> list[str]:
    """`Name="value"` items for `sam deploy --parameter-overrides` (an empty value too)."""
    return [
        f'{name}="{value.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"'
        for name, value in parameters.items()
    ]


def region_and_credentials(region: str | None) -> str:
    """The region to deploy to; DeployError when it, or credentials, are missing. Nothing is
    sent to AWS: botocore only looks where credentials are kept (an EC2 instance's or a
    container's own endpoint included)."""
    import botocore.exceptions
    import botocore.session

    session = botocore.session.Session()
    try:
        credentials = session.get_credentials()
        usable = credentials is not None and credentials.get_frozen_credentials().access_key
    except botocore.exceptions.BotoCoreError as exc:
        raise DeployError(
            f"the AWS credentials found cannot be used ({exc}): refresh them (aws sso login, "
            "aws configure), then make deploy again"
        ) from None
    if not usable:
        raise DeployError(
            "no AWS credentials found (environment, ~/.aws, SSO): run aws configure or aws sso "
            "login (or export AWS_PROFILE=...), then make deploy again"
        )
    region = region or session.get_config_variable("region")
    if not region:
        raise DeployError(
            "no AWS region: make deploy REGION=us-east-1 (or set AWS_REGION, or aws configure "
            "set region ...)"
        )
    return str(region)


def deploy_command(
    sam: Path,
    *,
    stack: str,
    region: str,
    parameters: dict[str, str],
    guided: bool,
    extra: Sequence[str] = (),
) -> list[str]:
    """The `sam deploy` command line (see the module docstring)."""
    command = [str(sam), "deploy", "--stack-name", stack, "--region", region]
    if guided:
        command.append("--guided")
    else:
        command += ["--resolve-s3", "--capabilities", *CAPABILITIES]
        command += ["--no-confirm-changeset", "--no-fail-on-empty-changeset", "--save-params"]
    if parameters:
        command += ["--parameter-overrides", *override_items(parameters)]
    return [*command, *extra]


def arguments(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="make deploy", description=__doc__.splitlines()[0])
    parser.add_argument("--stack-name", help=f"the stack (default: samconfig.toml, {STACK_NAME})")
    parser.add_argument("--region", help="the region (default: samconfig.toml, AWS config)")
    parser.add_argument("--parameters", default="", help='"Name=value ..." template parameters')
    parser.add_argument("--guided", action="store_true", help="answer sam deploy's questions")
    argv = list(argv)
    extra: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, extra = argv[:at], argv[at + 1 :]
    args, unknown = parser.parse_known_args(argv)
    args.extra = [*unknown, *extra]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(sys.argv[1:] if argv is None else argv)
    check_built(BUILD)
    environment = "default"
    if "--config-env" in args.extra[:-1]:
        environment = args.extra[args.extra.index("--config-env") + 1]
    saved = saved_answers(ROOT, environment)
    try:
        region = region_and_credentials(args.region or saved.get("region"))
        parameters = {
            **parse_overrides(saved.get("parameter_overrides")),
            **built_parameters(BUILT_TOOLS),
            **parse_overrides(args.parameters),
        }
    except DeployError as exc:
        raise SystemExit(f"[sam_deploy] {exc}") from None
    stack = args.stack_name or saved.get("stack_name") or STACK_NAME
    py312 = python312()
    sam = ensure_sam(py312)
    command = deploy_command(
        sam, stack=stack, region=region, parameters=parameters, guided=args.guided, extra=args.extra
    )
    tools = parameters.get("ToolsModule", "the template's default")
    how = "guided" if args.guided else f"answers kept in {SAMCONFIG}"
    log(f"deploying stack {stack} to {region} with ToolsModule={tools} ({how})")
    log("$ " + shlex.join(command))
    # SAM may ask on this terminal (--guided): stdin, stdout and stderr stay ours.
    process = subprocess.Popen(command, env=tool_env(py312), cwd=ROOT)
    try:
        return process.wait()
    except KeyboardInterrupt:
        # The terminal sent SIGINT to SAM too: let it end, then say so once, no traceback.
        try:
            process.wait(timeout=10)
        except (KeyboardInterrupt, subprocess.TimeoutExpired):
            process.kill()
        print(file=sys.stderr)
        log(
            "interrupted (a stack change already started goes on: aws cloudformation "
            f"describe-stacks --stack-name {stack})"
        )
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except KeyboardInterrupt:  # before sam started: nothing was sent
        print(file=sys.stderr)
        log("interrupted")
        raise SystemExit(EXIT_INTERRUPTED) from None
