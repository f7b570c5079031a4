"""The documentation site: an API page per public name, in step with ``lcbayes.API``, and
``mkdocs build --strict`` (broken links, missing references and docstrings griffe cannot read
fail it)."""

from __future__ import annotations

import os
import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

import lcbayes

ROOT = Path(__file__).resolve().parents[1]
API_PAGES = runpy.run_path(str(ROOT / "docs" / "api_pages.py"))


def test_every_public_name_has_its_api_page_and_no_page_is_stale():
    written = {p.name: p.read_text(encoding="utf-8") for p in (ROOT / "docs" / "api").glob("*.md")}
    expected = API_PAGES["expected"]()
    assert written == expected, "run python docs/api_pages.py"
    assert len(expected) == len(lcbayes.API) + 1
    assert set(lcbayes.__all__) - {"__version__"} == set(lcbayes.API)


def test_the_site_builds_strictly(tmp_path):
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (pip install -e '.[docs]')")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d",
                           str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    site = tmp_path / "site"
    for page in ("index.html", "getting-started/index.html", "api/em/index.html",
                 "notebooks/01_how_many_classes/index.html", "measurements/index.html",
                 "reports/first-minute/index.html", "reports/evidence-at-scale/index.html"):
        assert (site / page).is_file(), page
    assert "lcbayes.engines.em.em" in (site / "api/em/index.html").read_text(encoding="utf-8")


#: The longest paragraph a documentation page may have, in words (code blocks and tables aside).
MAX_PARAGRAPH_WORDS = 150


def longest_paragraph(text: str) -> tuple[int, str]:
    """``(words, opening)`` of the longest paragraph of a Markdown page: blocks between blank
    lines and list items, fenced code and tables left out."""
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    blocks = [b for b in re.split(r"\n\s*\n|\n(?=\s*(?:[*-]|\d+\.)\s)", prose)
              if not b.lstrip().startswith("|")]
    return max(((len(b.split()), " ".join(b.split()[:8])) for b in blocks), default=(0, ""))


def test_the_measure_finds_a_long_paragraph():
    text = "short\n\n" + "word " * 200 + "\n\n```\n" + "code " * 500 + "\n```\n"
    assert longest_paragraph(text)[0] == 200
    assert longest_paragraph("* " + "a " * 60 + "\n* " + "b " * 70)[0] == 71


def test_no_page_has_a_wall_of_text():
    long = {}
    for page in sorted((ROOT / "docs").rglob("*.md")):
        if "api" in page.relative_to(ROOT / "docs").parts:
            continue
        words, opening = longest_paragraph(page.read_text(encoding="utf-8"))
        if words >= MAX_PARAGRAPH_WORDS:
            long[str(page.relative_to(ROOT))] = f"{words} words: {opening} ..."
    assert not long, f"split these paragraphs (headings, short paragraphs, bullets): {long}"
