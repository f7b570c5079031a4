"""Docstrings and comments state the method and its contract, not figures from runs: no run on a
shipped data set is described in lcbayes' source (measurements belong in ``reports/``); the
``datasets`` package, which describes the data sets, is left out."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "lcbayes"
#: The shipped data sets and the benchmarks' election data ("values" is also a word).
DATA_SETS = sorted({p.stem for p in (PACKAGE / "datasets").glob("*.csv")} - {"values"}
                   | {"election"})
#: A data set named as an argument (``load("carcinoma")``, ``from_csv("carcinoma.csv")``) is an
#: example; named in prose it describes a run.
IN_CODE = r"[\"'`]"
RUN_WORDS = re.compile(r"\bmeasured (on|in)\b|\bmeasured:|\ban earlier version\b", re.I)


def prose_of(source: str) -> list[tuple[int, str]]:
    """``(line, text)`` of every docstring line and comment of ``source``."""
    found = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            for i, line in enumerate(body[0].value.value.splitlines()):
                found.append((body[0].lineno + i, line))
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            found.append((tok.start[0], tok.string))
    return found


def run_descriptions(source: str) -> list[tuple[int, str]]:
    """The prose lines of ``source`` that describe a run: a shipped data set named outside
    code, or "measured on"."""
    names = re.compile(rf"(?<!{IN_CODE})\b({'|'.join(DATA_SETS)})\b(?!\.csv|{IN_CODE})", re.I)
    return [(n, line) for n, line in prose_of(source)
            if RUN_WORDS.search(line)
            or (names.search(line) and ">>>" not in line and "lcb." not in line)]


def test_the_check_finds_a_run_described_in_a_docstring():
    source = ('"""EM on the carcinoma data took 0.2 s."""\n'
              "# measured on 20 binary items\n"
              'x = load("carcinoma")  # an example\n')
    assert [n for n, _ in run_descriptions(source)] == [1, 2]


@pytest.mark.parametrize("path", sorted(p for p in PACKAGE.rglob("*.py")
                                         if p.parent.name != "datasets"),
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_docstring_or_comment_describes_a_run(path: Path):
    found = run_descriptions(path.read_text())
    assert not found, f"{path.relative_to(PACKAGE)} describes runs (move them to reports/): {found}"
