"""`make deploy` (scripts/sam_deploy.py) runs `sam deploy` from the SAM CLI that `make build`
installed, on the built template, guided the first time (no samconfig.toml); and `make build`
ends by naming it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"


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
def project(tmp_path: Path) -> Path:
    (tmp_path / ".aws-sam" / "build").mkdir(parents=True)
    (tmp_path / ".aws-sam" / "build" / "template.yaml").write_text("Resources: {}\n")
    return tmp_path


def test_the_first_deploy_is_guided_and_later_ones_are_not(
    sam_deploy: ModuleType, project: Path
) -> None:
    sam = Path("/x/.tools/sam-venv/bin/sam")
    # No --template-file: run from the project root, sam takes .aws-sam/build/template.yaml
    # and keeps samconfig.toml in the root (it keeps it next to a template it is given).
    assert sam_deploy.deploy_command(sam, [], project) == [str(sam), "deploy", "--guided"]
    (project / "samconfig.toml").write_text("version = 0.1\n")
    assert sam_deploy.deploy_command(sam, ["--config-env", "prod"], project) == [
        str(sam),
        "deploy",
        "--config-env",
        "prod",
    ]
    again = sam_deploy.deploy_command(sam, ["--guided"], project)
    assert again.count("--guided") == 1


def test_nothing_built_is_one_line(sam_deploy: ModuleType, tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as caught:
        sam_deploy.check_built(tmp_path / ".aws-sam" / "build")
    assert caught.value.code == "[sam_deploy] nothing is built yet: run make build first"


def test_it_runs_the_installed_sam_from_the_project_root(
    sam_deploy: ModuleType, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stand-in `sam` that writes down how it was called.
    called = project / "called.txt"
    fake = project / "sam"
    fake.write_text(
        f"#!{sys.executable}\nimport os, sys\n"
        f"open({str(called)!r}, 'w').write(os.getcwd() + '\\n' + ' '.join(sys.argv[1:]))\n"
    )
    fake.chmod(0o755)
    monkeypatch.setattr(sam_deploy, "ROOT", project)
    monkeypatch.setattr(sam_deploy, "BUILD", project / ".aws-sam" / "build")
    monkeypatch.setattr(sam_deploy, "python312", lambda: Path(sys.executable))
    monkeypatch.setattr(sam_deploy, "ensure_sam", lambda _: fake)
    assert sam_deploy.main(["--", "--no-confirm-changeset"]) == 0
    cwd, arguments = called.read_text().splitlines()
    assert Path(cwd) == project
    assert arguments == "deploy --guided --no-confirm-changeset"


def test_make_build_ends_by_naming_make_deploy(tmp_path: Path) -> None:
    sam_build = _load("sam_build")
    assert sam_build.built_line(["ApiFunction"], tmp_path) == (
        "built ApiFunction into .aws-sam/build; next: make deploy (guided the first time)"
    )
    (tmp_path / "samconfig.toml").write_text("version = 0.1\n")
    assert sam_build.built_line(["ApiFunction"], tmp_path).endswith("; next: make deploy")
    makefile = (ROOT / "Makefile").read_text()
    assert "\ndeploy: $(STAMP)\n\t$(PY) scripts/sam_deploy.py $(DEPLOY_ARGS)\n" in makefile
