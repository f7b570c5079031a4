"""The code blocks of the README and of the documentation pages run as written.

A block may be preceded by a marker line: ``<!-- example-test: file NAME -->`` (a JSON block
written to ``NAME`` before anything runs) or ``<!-- example-test: skip (REASON) -->`` (a block
that cannot run here, with the reason). ``text`` blocks are output. The default run checks
that every Python block compiles, every ``lcbayes`` command line parses and every file block is
JSON; ``pytest -m slow`` runs them all in one fresh folder, page by page in the order of
:data:`PAGES` (the getting-started page writes the data files the others read): the shell
blocks line by line, then the Python blocks as one script (the examples build on each other),
with two host devices for the multi-device example.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from lcbayes.cli import _parser

ROOT = Path(__file__).resolve().parents[1]
#: The pages whose examples run, in order.
PAGES = ("README.md", "docs/getting-started.md", "docs/guide/fit.md", "docs/guide/compare.md",
         "docs/guide/evidence.md", "docs/guide/posterior-k.md", "docs/guide/structure-search.md",
         "docs/guide/fit-indices.md", "docs/guide/model-check.md",
         "docs/guide/scale.md", "docs/methods/estimators.md", "docs/guide/covariates.md",
         "docs/guide/groups.md")
#: An environment variable set for one command: ``LCBAYES_SCHEDULER=tcp://... lcbayes ...``.
ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
MARKER = re.compile(r"<!-- example-test: (file (?P<file>\S+)|skip \((?P<reason>.+)\)) -->")


@dataclass(frozen=True)
class Block:
    page: str
    line: int          # the page's line of the opening fence
    language: str
    code: str
    file: str | None = None
    skip: str | None = None


def page_blocks(page: str) -> list[Block]:
    """Every fenced code block of ``page`` with its marker."""
    lines = (ROOT / page).read_text(encoding="utf-8").splitlines()
    found, i = [], 0
    while i < len(lines):
        if lines[i].startswith("```") and len(lines[i]) > 3:
            end = lines.index("```", i + 1)
            marker = MARKER.fullmatch(lines[i - 1].strip()) if i else None
            found.append(Block(page, i + 1, lines[i][3:].strip(), "\n".join(lines[i + 1:end]),
                               marker and marker["file"], marker and marker["reason"]))
            i = end
        i += 1
    return found


def blocks() -> list[Block]:
    """The blocks of every page of :data:`PAGES`, in order."""
    return [b for page in PAGES for b in page_blocks(page)]


def block_id(block: Block) -> str:
    return f"{block.page}:{block.line}"


def commands(block: Block) -> list[str]:
    """The command lines of a shell block, comments stripped."""
    out = []
    for line in block.code.splitlines():
        command = line.split(" #", 1)[0].strip()
        if command and not command.startswith("#"):
            out.append(command)
    return out


def runnable(language: str) -> list[Block]:
    return [b for b in blocks() if b.language == language and b.skip is None and b.file is None]


def test_the_pages_have_blocks_of_every_kind_and_every_skip_says_why():
    found = blocks()
    assert {b.language for b in found} >= {"bash", "python", "json", "text"}
    assert all(b.file or b.skip or b.language != "json" for b in found)
    skipped = [b for b in found if b.skip]
    assert all(b.skip.strip() for b in skipped)
    assert len(skipped) <= 5, [block_id(b) for b in skipped]
    every_page = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md")
                        if "```" in p.read_text(encoding="utf-8"))
    assert set(every_page) <= set(PAGES), "a page with examples is missing from PAGES"


@pytest.mark.parametrize("block", runnable("python"), ids=block_id)
def test_python_blocks_compile(block):
    compile(block.code, block_id(block), "exec")


@pytest.mark.parametrize("block", runnable("bash"), ids=block_id)
def test_lcbayes_command_lines_parse(block):
    for command in commands(block):
        argv = shlex.split(command)
        while argv and ENV_ASSIGNMENT.match(argv[0]):  # VAR=value lcbayes ...
            argv = argv[1:]
        if argv[0] != "lcbayes":
            continue
        try:
            _parser().parse_args(argv[1:])
        except SystemExit as exc:
            pytest.fail(f"{block_id(block)}: {command!r} does not parse (exit {exc.code})")


@pytest.mark.parametrize("block", [b for b in blocks() if b.file],
                         ids=block_id)
def test_file_blocks_are_json(block):
    assert isinstance(json.loads(block.code), dict)


@pytest.mark.slow
def test_every_block_runs_as_written(tmp_path):
    for block in blocks():
        if block.file:
            (tmp_path / block.file).write_text(block.code + "\n", encoding="utf-8")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "MPLBACKEND": "Agg"}
    for block in runnable("bash"):
        for command in commands(block):
            done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env,
                                  capture_output=True, text=True, timeout=900)
            assert done.returncode == 0, (f"{block_id(block)}: {command}\n"
                                          f"{done.stderr[-2000:]}")
    script = "\n\n".join(b.code for b in runnable("python"))
    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=2"
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, timeout=1800, env={**env, "XLA_FLAGS": flags.strip()})
    assert done.returncode == 0, done.stderr[-3000:]
