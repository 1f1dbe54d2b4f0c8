"""`make deploy` (scripts/sam_deploy.py) checks before it asks, then asks nothing (issue 29,
item 2): no credentials or no region is one line before any prompt; the stack is `mcp-tasks`
unless told or saved; the tools built last are the ones deployed; the answers go to
`samconfig.toml` (`--save-params`) and are read back as SAM writes them; `GUIDED=1` is the
guided deploy; Ctrl-C ends in one line. `sam` is a stand-in that writes down how it was called:
nothing reaches AWS."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import sys
import threading
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"
# What `sam deploy --save-params` (SAM CLI 1.170) wrote, verbatim.
SAVED_BY_SAM = """version = 0.1

[default.deploy.parameters]
stack_name = "team-tasks"
resolve_s3 = true
capabilities = ["CAPABILITY_IAM"]
confirm_changeset = false
fail_on_empty_changeset = false

[default.deploy.parameters.parameter_overrides]
ToolsModule = "old_tools.py"
ManagedFunctionArns = ""
AuthMode = "OAUTH"

[default.global.parameters]
region = "eu-west-1"
"""
NON_INTERACTIVE = [
    "--resolve-s3",
    "--capabilities",
    "CAPABILITY_IAM",
    "--no-confirm-changeset",
    "--no-fail-on-empty-changeset",
    "--save-params",
]
MAKE_DEPLOY = ["make", "-s", "-n", "-C", str(ROOT), "deploy"]
NO_CREDENTIALS = (
    "[sam_deploy] no AWS credentials found (environment, ~/.aws, SSO): run aws configure or "
    "aws sso login (or export AWS_PROFILE=...), then make deploy again"
)


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def sam_deploy(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(SCRIPTS))  # it imports sam_build, as `python scripts/…` does
    return _load("sam_deploy")


@pytest.fixture
def aws_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An AWS configuration with nothing in it: no credentials, no region, no metadata service."""
    for name in list(os.environ):
        if name.startswith("AWS_") and name != "AWS_CA_BUNDLE":
            monkeypatch.delenv(name)
    home = tmp_path / "aws"
    home.mkdir()
    monkeypatch.setenv("AWS_CONFIG_FILE", str(home / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(home / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return home


@pytest.fixture
def credentials(aws_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-a-real-secret")


@pytest.fixture
def project(
    tmp_path: Path, sam_deploy: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, Path]:
    """A built project and a stand-in `sam` that records its arguments (and its stdin)."""
    root = tmp_path / "project"
    (root / ".aws-sam" / "build").mkdir(parents=True)
    (root / ".aws-sam" / "build" / "template.yaml").write_text("Resources: {}\n")
    called = root / "called.json"
    fake = root / "sam"
    fake.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        f"json.dump({{'cwd': os.getcwd(), 'argv': sys.argv[1:]}}, open({str(called)!r}, 'w'))\n"
        "if os.environ.get('FAKE_SAM_SLEEP'):\n"
        "    import time; time.sleep(float(os.environ['FAKE_SAM_SLEEP']))\n"
    )
    fake.chmod(0o755)
    monkeypatch.setattr(sam_deploy, "ROOT", root)
    monkeypatch.setattr(sam_deploy, "BUILD", root / ".aws-sam" / "build")
    monkeypatch.setattr(sam_deploy, "BUILT_TOOLS", root / ".aws-sam" / "built-tools.json")
    monkeypatch.setattr(sam_deploy, "python312", lambda: Path(sys.executable))
    monkeypatch.setattr(sam_deploy, "ensure_sam", lambda _: fake)
    return root, called


def sam_was_called_with(called: Path) -> list[str]:
    recorded: list[str] = json.loads(called.read_text())["argv"]
    return recorded


def built(root: Path, tools: str, functions: list[str] | None = None) -> None:
    parameters = {"ManagedFunctionArns": functions or [], "ManagedSecretArns": []}
    (root / ".aws-sam" / "built-tools.json").write_text(
        json.dumps({"ToolsModule": tools, "parameters": parameters})
    )


def test_no_credentials_is_one_line_before_anything_is_asked(
    sam_deploy: ModuleType,
    project: tuple[Path, Path],
    aws_home: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, called = project
    with pytest.raises(SystemExit) as stopped:
        sam_deploy.main(["--region", "eu-west-1"])
    assert stopped.value.code == NO_CREDENTIALS
    assert not called.exists()  # sam never ran: nothing was asked
    assert capsys.readouterr().out == ""


def test_no_region_is_one_line(
    sam_deploy: ModuleType, project: tuple[Path, Path], credentials: None
) -> None:
    _, called = project
    with pytest.raises(SystemExit) as stopped:
        sam_deploy.main([])
    assert stopped.value.code == (
        "[sam_deploy] no AWS region: make deploy REGION=us-east-1 (or set AWS_REGION, or aws "
        "configure set region ...)"
    )
    assert not called.exists()


def test_a_first_deploy_asks_nothing_and_keeps_its_answers(
    sam_deploy: ModuleType, project: tuple[Path, Path], credentials: None
) -> None:
    # Given a build of the user's tools, and nothing saved yet
    root, called = project
    built(root, "my_tools.py")
    # When make deploy REGION=eu-west-1 runs
    assert sam_deploy.main(["--region", "eu-west-1"]) == 0
    # Then sam deploys the stack the README names, with the tools just built, asking nothing,
    # and saves the answers
    assert json.loads(called.read_text())["cwd"] == str(root)
    assert sam_was_called_with(called) == [
        "deploy",
        *("--stack-name", "mcp-tasks", "--region", "eu-west-1"),
        *NON_INTERACTIVE,
        "--parameter-overrides",
        'ToolsModule="my_tools.py"',
        'ManagedFunctionArns=""',
        'ManagedSecretArns=""',
    ]


def test_saved_answers_are_used_and_the_last_build_and_params_win(
    sam_deploy: ModuleType, project: tuple[Path, Path], credentials: None
) -> None:
    root, called = project
    (root / "samconfig.toml").write_text(SAVED_BY_SAM)
    built(root, "examples/managed/tools.yaml", ["arn:aws:lambda:eu-west-1:1:function:f"])
    assert sam_deploy.main(["--parameters", 'AuthMode=JWT JwtAudience="a b"']) == 0
    assert sam_was_called_with(called) == [
        "deploy",
        *("--stack-name", "team-tasks", "--region", "eu-west-1"),
        *NON_INTERACTIVE,
        "--parameter-overrides",
        'ToolsModule="examples/managed/tools.yaml"',
        'ManagedFunctionArns="arn:aws:lambda:eu-west-1:1:function:f"',
        'AuthMode="JWT"',
        'ManagedSecretArns=""',
        'JwtAudience="a b"',
    ]


def test_stack_and_region_given_win_and_guided_is_an_option(
    sam_deploy: ModuleType, project: tuple[Path, Path], credentials: None
) -> None:
    root, called = project
    (root / "samconfig.toml").write_text(SAVED_BY_SAM)
    arguments = ["--stack-name", "other", "--region", "us-west-2", "--guided"]
    assert sam_deploy.main([*arguments, "--", "--no-execute-changeset"]) == 0
    assert sam_was_called_with(called) == [
        "deploy",
        *("--stack-name", "other", "--region", "us-west-2", "--guided"),
        "--parameter-overrides",
        'ToolsModule="old_tools.py"',
        'ManagedFunctionArns=""',
        'AuthMode="OAUTH"',
        "--no-execute-changeset",
    ]


def test_ctrl_c_ends_quietly(
    sam_deploy: ModuleType,
    project: tuple[Path, Path],
    credentials: None,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_SAM_SLEEP", "1")
    # Ctrl-C while sam runs (the terminal would send SIGINT to sam as well; this one only us)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        code = sam_deploy.main(["--region", "eu-west-1"])
    except KeyboardInterrupt:
        code = "a KeyboardInterrupt traceback"
    finally:
        timer.cancel()
    assert code == 130
    captured = capsys.readouterr()
    assert captured.out.splitlines()[-1] == (
        "[sam_deploy] interrupted (a stack change already started goes on: aws cloudformation "
        "describe-stacks --stack-name mcp-tasks)"
    )
    assert "Traceback" not in captured.err


def test_nothing_built_is_one_line(sam_deploy: ModuleType, tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as caught:
        sam_deploy.check_built(tmp_path / ".aws-sam" / "build")
    assert caught.value.code == "[sam_deploy] nothing is built yet: run make build first"


def test_make_deploy_passes_stack_region_params_and_guided() -> None:
    import subprocess

    dry = subprocess.run(
        [
            *MAKE_DEPLOY,
            "STACK=s",
            "REGION=r",
            "PARAMS=AuthMode=OAUTH CreateUserPool=true",
            "GUIDED=1",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert dry.stdout.splitlines()[-1].rstrip() == (
        ".venv/bin/python scripts/sam_deploy.py --stack-name 's' --region 'r' --parameters "
        "'AuthMode=OAUTH CreateUserPool=true' --guided"
    )


def test_make_build_ends_by_naming_make_deploy(tmp_path: Path) -> None:
    sam_build = _load("sam_build")
    assert sam_build.built_line(["ApiFunction"], tmp_path) == (
        "built ApiFunction into .aws-sam/build; next: make deploy (stack mcp-tasks; "
        "STACK=..., REGION=..., PARAMS=... or GUIDED=1 to choose)"
    )
    (tmp_path / "samconfig.toml").write_text("version = 0.1\n")
    assert sam_build.built_line(["ApiFunction"], tmp_path).endswith("; next: make deploy")
