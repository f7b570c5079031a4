"""Write the API reference: ``docs/api/NAME.md`` for every public name of ``lcbayes.API`` (one
mkdocstrings block each) and ``docs/api/index.md`` listing them. Run after changing the API;
``tests/test_docs_site.py`` fails while the pages and the API disagree.

Usage::

    python docs/api_pages.py
"""

from __future__ import annotations

from pathlib import Path

import lcbayes

API_DIR = Path(__file__).resolve().parent / "api"


def identifier(name: str) -> str:
    """The dotted path mkdocstrings documents for public name ``name``."""
    module = lcbayes.API[name]
    return module if module == f"lcbayes.{name}" else f"{module}.{name}"


def file_name(name: str) -> str:
    """The page file of public name ``name``: ``NAME.md``, or ``NAME-class.md`` for a class
    whose name differs from a function's only in case (such as ``Foo`` beside ``foo``), so
    that the pages also coexist on case-insensitive file systems."""
    twins = [n for n in lcbayes.API if n != name and n.lower() == name.lower()]
    return f"{name}-class.md" if twins and name[0].isupper() else f"{name}.md"


def page(name: str) -> str:
    """The page of public name ``name``."""
    return f"# `lcb.{name}`\n\n::: {identifier(name)}\n"


def index() -> str:
    """The API index: every public name with the first line of its docstring."""
    lines = ["# API reference", "",
             "Every public name of `lcbayes` (`import lcbayes as lcb`), listed in "
             "`lcbayes/__init__.py`; one page each.", "", "| name | what it is |", "|---|---|"]
    for name in sorted(lcbayes.API, key=str.lower):
        doc = (getattr(lcbayes, name).__doc__ or "").strip().splitlines()
        summary = doc[0].rstrip(".").replace("|", "\\|") if doc else ""
        lines.append(f"| [`{name}`]({file_name(name)}) | {summary} |")
    return "\n".join(lines) + "\n"


def expected() -> dict[str, str]:
    """``{file name: text}`` of every API page and the index."""
    return {"index.md": index(), **{file_name(name): page(name) for name in lcbayes.API}}


def main() -> None:
    API_DIR.mkdir(exist_ok=True)
    for old in API_DIR.glob("*.md"):
        old.unlink()
    for file, text in expected().items():
        (API_DIR / file).write_text(text, encoding="utf-8")
    print(f"wrote {len(lcbayes.API) + 1} pages to {API_DIR}")


if __name__ == "__main__":
    main()
