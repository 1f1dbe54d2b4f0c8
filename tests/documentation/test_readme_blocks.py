"""Every command and snippet of the README runs as written against the embedded stack, and
prints what the README says it prints.

The README's fenced `sh` and `python` blocks are read in order. A block runs unless an HTML
comment right above it says `<!-- not run: why -->`; `<!-- run: ... -->` adds options:
`stdin=TEXT` (typed at the CLI's questions), `tools=MODULE` (against a stack serving that
module, or that `.py` file, written by an earlier block whose first line is `# my_tools.py`),
`python` (run a python block as a script), and `expect="TEXT"` (once or more: what the block's
output must hold, the outcome the text around it promises). A python block whose first line
names a file (`# my_tools.py`) is written to a scratch folder instead of run. Each block's
`http://127.0.0.1:8000/mcp` is the test stack's URL. A block passes when it exits 0 and prints
every `expect`; a block that runs and promises nothing is refused: a test that checks only
the exit code once passed while `release` printed the opposite of what the README said.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mcp_tasks_aws.local.stack import EmbeddedStack
from support.mcp import running_stack

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
LOCAL_URL = "http://127.0.0.1:8000/mcp"
FENCE = re.compile(
    r"(?:<!-- (?P<note>(?:[^>]|(?<=\\)>)*?) -->\n)?```(?P<lang>sh|python)\n(?P<body>.*?)\n```",
    re.DOTALL,
)
BLOCKS_AT_ONCE = 4
OPTION = re.compile(r'(\w+)(?:=("(?:[^"\\]|\\.)*"|\S+))?')


@dataclass
class Block:
    line: int
    lang: str
    body: str
    skip: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    expect: list[str] = field(default_factory=list)

    @property
    def file_name(self) -> str | None:
        match = re.match(r"# (\w+\.py)\n", self.body)
        return match.group(1) if match and self.lang == "python" else None

    def __str__(self) -> str:
        return f"README.md:{self.line} ({self.lang})"


def blocks(text: str) -> list[Block]:
    found = []
    for match in FENCE.finditer(text):
        block = Block(text[: match.start()].count("\n") + 1, match["lang"], match["body"])
        note = match["note"] or ""
        if note.startswith("not run:"):
            block.skip = note.removeprefix("not run:").strip()
        elif note.startswith("run:"):
            for key, raw in OPTION.findall(note.removeprefix("run:")):
                value = _unquoted(raw)
                if key == "expect":
                    block.expect.append(value)
                else:
                    block.options[key] = value.replace("\\n", "\n")
        found.append(block)
    return found


def _unquoted(raw: str) -> str:
    if raw.startswith('"') and raw.endswith('"') and len(raw) >= 2:
        return re.sub(r"\\(.)", r"\1", raw[1:-1])
    return raw


def test_the_readme_has_runnable_blocks_and_says_why_others_are_not_run() -> None:
    found = blocks(README.read_text())
    runnable = [b for b in found if b.skip is None]
    assert len(runnable) >= 5, [str(b) for b in found]
    assert all(b.skip for b in found if b.skip is not None), "say why a block is not run"
    promising_nothing = [str(b) for b in runnable if b.file_name is None and not b.expect]
    assert promising_nothing == [], "say what each block prints: <!-- run: expect=... -->"


def test_the_block_reader_sees_options_and_skips() -> None:
    sample = (
        "<!-- not run: a server -->\n```sh\nmake run\n```\n<!-- run: stdin=y -->\n```sh\nls\n```"
    )
    first, second = blocks(sample)
    assert first.skip == "a server"
    assert second.options == {"stdin": "y"}
    quoted = '<!-- run: stdin=a\\ny expect="is live (" expect="{\\"a\\":1}" -->\n```sh\nls\n```'
    (third,) = blocks(quoted)
    assert third.options == {"stdin": "a\ny"}
    assert third.expect == ["is live (", '{"a":1}']


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("readme")


@pytest.fixture(scope="module")
def demo() -> Iterator[EmbeddedStack]:
    with running_stack(MCP_TASKS_TOOLS="demo") as stack:
        yield stack


def run(block: Block, url: str, scratch: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        # The venv's commands (mcp-tasks, python) first, as the README's `export PATH` does.
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "MCP_TASKS_URL": url,
        "PYTHONPATH": os.pathsep.join([str(scratch), os.environ.get("PYTHONPATH", "")]),
        # The CLI's own files (task history, sign-ins) stay out of the real home.
        "HOME": str(home),
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_CACHE_HOME": str(home / "cache"),
    }
    body = block.body.replace(LOCAL_URL, url)
    if block.lang == "sh":
        argv = ["bash", "-euo", "pipefail", "-c", body]
    else:
        argv = [sys.executable, "-c", body]
    return subprocess.run(
        argv,
        cwd=ROOT,
        env=env,
        input=block.options.get("stdin", "") + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_every_readme_block_runs_as_written(
    demo: EmbeddedStack, scratch: Path, tmp_path: Path
) -> None:
    # The blocks run a few at a time, each in its own processes as a user types it: none needs
    # another's output (the CLI's task history, shared as in one home, is locked), and most
    # of a block's time is a tool working. A block starts once every file and stack it may use
    # exists (files and stacks are made in README order), and a file written a second time
    # waits for the blocks before it.
    stacks: dict[str, EmbeddedStack] = {}
    sys.path.insert(0, str(scratch))  # an in-process stack imports the README's modules
    running: list[tuple[Block, Future[subprocess.CompletedProcess[str]]]] = []
    with contextlib.ExitStack() as opened:
        opened.callback(sys.path.remove, str(scratch))
        pool = opened.enter_context(ThreadPoolExecutor(max_workers=BLOCKS_AT_ONCE))
        for block in blocks(README.read_text()):
            if block.skip is not None:
                continue
            if block.file_name is not None:
                if (scratch / block.file_name).exists():
                    wait([future for _, future in running])
                (scratch / block.file_name).write_text(block.body + "\n")
                continue
            module = block.options.get("tools")
            if module is not None and module not in stacks:
                # A file the README wrote (`# my_tools.py`) is served from the scratch folder.
                served = str(scratch / module) if (scratch / module).is_file() else module
                stacks[module] = opened.enter_context(running_stack(MCP_TASKS_TOOLS=served))
            stack = stacks[module] if module is not None else demo
            running.append((block, pool.submit(run, block, stack.url, scratch, tmp_path)))
        wait([future for _, future in running])  # all end before any stack stops
        for block, future in running:
            done = future.result()
            shown = (
                f"\n{block.body}\n--- stdout\n{done.stdout[-2000:]}\n"
                f"--- stderr\n{done.stderr[-2000:]}"
            )
            assert done.returncode == 0, f"{block} failed ({done.returncode}):{shown}"
            for promised in block.expect:
                assert promised in done.stdout, f"{block} did not print {promised!r}:{shown}"
