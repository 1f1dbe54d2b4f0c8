"""`make build` stages only what the tools reference, from inside the checkout (issue 26, item 6;
issue 29, item 1): a declaration at the checkout's root (the README's `make build
TOOLS=tools.yaml`) once copied the whole checkout, `.env` and `.git` included, into its own
output until the disk was full; tool code outside `src/` was never packaged at all.

Each test builds a checkout-like folder (the project's code linked in, plus what a real
checkout holds: `.env`, `.git`, a `.venv`, `.tools`, an earlier `.aws-sam`) and stages it as
`make build` does, without `sam build` itself (tests/infra/test_sam_build.py runs no SAM
either). The last test imports staged tools from a package laid out as Lambda's code root.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from infra.test_sam_build import sam_build, sam_smoke
from support.user_tools import HELPERS, MY_TOOLS

ROOT = Path(__file__).resolve().parents[2]
DECLARATION = """version: 1
aws: {region: us-east-1, account: "123456789012"}
local: {module: functions}
tools:
  - name: word_count
    description: Count words.
    inputSchema: {type: object, properties: {text: {type: string}}}
    target: {kind: lambda, function: word-count}
  - name: approve
    description: Approve.
    task: required
    inputSchema: {type: object, properties: {}}
    target:
      kind: stateMachine
      type: STANDARD
      arn: arn:aws:states:us-east-1:123456789012:stateMachine:approve
      definition: flows/approval.asl.json
openapi:
  - document: inventory.openapi.yaml
    baseUrl: https://inventory.example.com/v1
"""
OPENAPI = (ROOT / "examples" / "managed" / "inventory.openapi.yaml").read_text()
TOOLS = MY_TOOLS
HIDDEN_IMPORT = "import sys\nsys.path.insert(0, '.hidden')\n" + TOOLS


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A checkout as a newcomer has it, with `sam_build` pointed at it."""
    root = tmp_path / "checkout"
    root.mkdir()
    for name in ("handlers", "src", "infra", "template.yaml", "pyproject.toml"):
        (root / name).symlink_to(ROOT / name)
    (root / ".env").write_text("AWS_SECRET_ACCESS_KEY=do-not-ship\n")
    (root / ".git" / "objects").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n")
    site = root / ".venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (site / "big.py").write_text("x = 1\n")
    (root / ".tools" / "sam-venv").mkdir(parents=True)
    (root / ".aws-sam" / "build" / "ApiFunction").mkdir(parents=True)
    (root / "notes.txt").write_text("not referenced\n")
    monkeypatch.setattr(sam_build, "ROOT", root)
    monkeypatch.setattr(sam_build, "STAGE", root / ".aws-sam" / "stage")
    monkeypatch.setattr(sam_build, "MANAGED_PARAMETERS", root / ".aws-sam" / "managed.json")
    return root


def staged_files(root: Path) -> list[str]:
    code = root / ".aws-sam" / "stage" / "function"
    return sorted(
        str(p.relative_to(code))
        for p in code.rglob("*")
        if p.is_file() and p.relative_to(code).parts[0] not in ("handlers", "mcp_tasks_aws")
    )


def test_a_declaration_at_the_root_stages_only_what_it_references(checkout: Path) -> None:
    # Given the README's declaration at the checkout's root, with what it references beside it
    (checkout / "tools.yaml").write_text(DECLARATION)
    (checkout / "inventory.openapi.yaml").write_text(OPENAPI)
    (checkout / "flows").mkdir()
    (checkout / "flows" / "approval.asl.json").write_text('{"StartAt": "x", "States": {}}')
    (checkout / "functions.py").write_text("def word_count(event, context):\n    return {}\n")
    # When make build stages it (the stage is inside the checkout: .aws-sam/stage)
    sam_build.check_declaration("tools.yaml")
    sam_build.stage(sam_build.tools_plan("tools.yaml"))
    # Then the stage ends, and holds the code, the declaration and its references, nothing else
    assert staged_files(checkout) == [
        "flows/approval.asl.json",
        "inventory.openapi.yaml",
        "requirements.txt",
        "tools.yaml",
    ]
    code = checkout / ".aws-sam" / "stage" / "function"
    for hidden in (".env", ".git", ".venv", ".tools", ".aws-sam"):
        assert not (code / hidden).exists()
    assert sorted(p.name for p in code.iterdir()) == [
        "flows",
        "handlers",
        "inventory.openapi.yaml",
        "mcp_tasks_aws",
        "requirements.txt",
        "tools.yaml",
    ]


@pytest.mark.parametrize(
    ("reference", "says"),
    [
        (
            "../outside.json",
            "tools.yaml: tool 'approve': target.definition: ../outside.json is outside the "
            "declaration's folder ({folder}): keep what a declaration references beside it",
        ),
        (
            "missing.asl.json",
            "tools.yaml: tool 'approve': target.definition: no such file missing.asl.json "
            "(beside the declaration)",
        ),
    ],
    ids=["outside", "missing"],
)
def test_a_reference_outside_the_declarations_folder_is_refused_in_one_line(
    checkout: Path, reference: str, says: str
) -> None:
    folder = checkout / "team"
    folder.mkdir()
    (checkout / "outside.json").write_text("{}")
    (folder / "inventory.openapi.yaml").write_text(OPENAPI)
    (folder / "tools.yaml").write_text(DECLARATION.replace("flows/approval.asl.json", reference))
    with pytest.raises(SystemExit) as refused:
        sam_build.tools_plan("team/tools.yaml")
    expected = says.format(folder=folder).replace("tools.yaml:", "team/tools.yaml:", 1)
    assert str(refused.value) == f"[sam_build] ToolsModule=team/tools.yaml: {expected}"


def test_a_module_at_the_root_is_staged_with_its_neighbours(checkout: Path) -> None:
    # Given the README's my_tools.py at the checkout's root, importing a helper beside it
    (checkout / "my_tools.py").write_text(TOOLS)
    (checkout / "helpers.py").write_text(HELPERS)
    # Then both are packaged at the code root, and nothing else of the checkout
    sam_build.stage(sam_build.tools_plan("my_tools"))
    assert staged_files(checkout) == ["helpers.py", "my_tools.py", "requirements.txt"]


def test_a_py_file_keeps_its_folder_and_a_package_goes_whole(checkout: Path) -> None:
    tools = checkout / "team" / "tools"
    tools.mkdir(parents=True)
    (tools / "my_tools.py").write_text(TOOLS.replace("from helpers", "from billing.rates"))
    (tools / "billing").mkdir()
    (tools / "billing" / "__init__.py").write_text("")
    (tools / "billing" / "rates.py").write_text(HELPERS)
    (tools / "billing" / "lazy.py").write_text("LOADED_LATER = True\n")
    (tools / "billing" / ".secret").write_text("no\n")
    (tools / "unrelated.py").write_text("")
    sam_build.stage(sam_build.tools_plan("team/tools/my_tools.py"))
    assert staged_files(checkout) == [
        "requirements.txt",
        "team/tools/billing/__init__.py",
        "team/tools/billing/lazy.py",
        "team/tools/billing/rates.py",
        "team/tools/my_tools.py",
    ]


@pytest.mark.parametrize(
    ("spec", "files", "says"),
    [
        ("../elsewhere.py", {}, "../elsewhere.py is outside the checkout ({root}): move it inside"),
        (
            "my_toolz",
            {},
            "MCP_TASKS_TOOLS='my_toolz': no module named 'my_toolz' (the built-in ones are "
            "conformance, demo; set MCP_TASKS_TOOLS to a module (package.module[:attribute]), a "
            ".py file (path/to/file.py[:attribute]) or a declaration file (.yaml, .yml, .json))",
        ),
        (
            "my_tools",
            {".hidden/helpers.py": HELPERS, "my_tools.py": HIDDEN_IMPORT},
            "the tools import helpers from the hidden folder .hidden ({root}/.hidden/helpers.py):"
            " move it out of there",
        ),
    ],
    ids=["outside", "typo", "hidden"],
)
def test_tools_that_cannot_be_packaged_are_refused_in_one_line(
    checkout: Path, spec: str, files: dict[str, str], says: str
) -> None:
    for name, text in files.items():
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        (checkout / name).write_text(text)
    with pytest.raises(SystemExit) as refused:
        sam_build.tools_plan(sam_build.tools_spec(spec))
    assert str(refused.value).splitlines() == [
        f"[sam_build] ToolsModule={spec}: " + says.format(root=checkout.resolve())
    ]


def test_a_module_from_outside_the_checkout_is_refused(
    checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "lib"
    outside.mkdir()
    (outside / "helpers.py").write_text(HELPERS)
    (checkout / "my_tools.py").write_text(TOOLS)
    monkeypatch.setenv("PYTHONPATH", str(outside))
    with pytest.raises(SystemExit) as refused:
        sam_build.tools_plan("my_tools")
    assert str(refused.value) == (
        f"[sam_build] ToolsModule=my_tools: the tools import helpers from outside the checkout "
        f"({outside / 'helpers.py'}): move it into the checkout, or install it as a dependency"
    )


def test_staged_tools_import_from_the_code_root_as_deployed(checkout: Path) -> None:
    """The smoke test's child, over a package laid out as `sam build` lays it out."""
    tools = checkout / "team" / "tools"
    tools.mkdir(parents=True)
    (tools / "my_tools.py").write_text(TOOLS)
    (tools / "helpers.py").write_text(HELPERS)
    package = checkout / "ApiFunction"
    sam_build.tools_plan("team/tools/my_tools.py").stage(package)
    os.symlink(ROOT / "handlers", package / "handlers")
    os.symlink(ROOT / "src" / "mcp_tasks_aws", package / "mcp_tasks_aws")
    env = sam_smoke.smoke_environment(package, "team/tools/my_tools.py")
    child = subprocess.run(
        [
            *(sys.executable, "-I", "-c", sam_smoke.SMOKE_CHILD, str(package), str(package)),
            *('["handlers.api.handler", "handlers.stream.asgi"]', "[]", "[]"),
        ],
        env=env,
        cwd=package,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert child.returncode == 0, child.stderr
    assert [line.split(" from ")[0] for line in child.stdout.splitlines()] == [
        "imported handlers.api.handler",
        "imported handlers.stream.asgi",
    ]
