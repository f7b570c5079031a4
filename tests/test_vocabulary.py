"""One vocabulary over the public API (docs/vocabulary.md, issue 31): the table of concepts on
that page is read here, and every public function's keywords, every public method's keywords,
every result's fields and every command line option is checked against it; options after the
data are keyword-only; the same algorithm has the same defaults; ``lcb.__all__`` and the API
reference pages agree."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import re
from pathlib import Path

import pytest

import lcbayes as lcb
from lcbayes.cli import _parser

ROOT = Path(__file__).resolve().parent.parent
VOCABULARY_PAGE = ROOT / "docs" / "vocabulary.md"

#: Parameters with a default that may still be positional: inputs, not options (``y`` is
#: scikit-learn's unused target of ``fit(X, y=None)``, ``level`` an interval's coverage).
POSITIONAL_INPUTS = {"candidates", "path", "shared", "y", "level"}
#: Command line options that name no Python keyword: output and reading choices of the CLI.
CLI_ONLY = {"help", "version", "json", "report", "markdown", "wide", "out", "structure",
            "skeleton", "tree", "no_lc_bound", "engine_option", "evidence", "se", "exact",
            "relabel_method", "prior_k", "heats", "devices", "score", "methods", "method",
            "allow_ragged", "chunk_rows", "columns", "encoding", "sep", "sheet", "max_categories",
            "steps"}


def _table() -> list[tuple[str, set[str], set[str]]]:
    """``(concept, names, forbidden)`` per row of the page's table."""
    rows = []
    for line in VOCABULARY_PAGE.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] in ("Concept", "---"):
            continue
        names, never = (set(re.findall(r"`([a-z_]+)`", c)) for c in cells[1:])
        if names and never:
            rows.append((cells[0], names, never))
    return rows


CONCEPTS = _table()
FORBIDDEN = {bad: (concept, names) for concept, names, never in CONCEPTS for bad in never}


def _public_functions():
    for name in sorted(lcb.API):
        value = getattr(lcb, name)
        if inspect.isfunction(value):
            yield name, value


def _public_classes():
    for name in sorted(lcb.API):
        value = getattr(lcb, name)
        if inspect.isclass(value):
            yield name, value


def _public_methods():
    """``(Class.method, function)`` of every public method of every public class."""
    for cls_name, cls in _public_classes():
        for name, member in inspect.getmembers(cls, inspect.isfunction):
            if not name.startswith("_") and member.__qualname__.startswith(cls.__name__):
                yield f"{cls_name}.{name}", member


def _cli_options() -> dict[str, str]:
    """``{option name with _: "subcommand --option"}`` of every subcommand."""
    out: dict[str, str] = {}
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    for command, parser in sub.choices.items():
        for action in parser._actions:
            for option in action.option_strings:
                if option.startswith("--"):
                    out.setdefault(option[2:].replace("-", "_"), f"{command} {option}")
    return out


def test_the_page_lists_the_concepts():
    concepts = {c for c, _, _ in CONCEPTS}
    assert len(CONCEPTS) >= 14
    assert any("number of latent classes" in c for c in concepts)
    for _, names, never in CONCEPTS:
        assert not names & never


def _offences(where: str, names) -> list[str]:
    return [f"{where}: {n!r} (say {' or '.join(sorted(FORBIDDEN[n][1]))}: "
            f"{FORBIDDEN[n][0]})" for n in names if n in FORBIDDEN]


def test_public_functions_and_methods_use_one_name_per_concept():
    offences = []
    for where, function in [*_public_functions(), *_public_methods()]:
        offences += _offences(where, inspect.signature(function).parameters)
    for name, cls in _public_classes():
        if not issubclass(cls, Exception) and cls.__init__ is not object.__init__:
            offences += _offences(f"{name}()", inspect.signature(cls).parameters)
    assert not offences, "\n".join(offences)


def test_result_fields_and_json_keys_use_one_name_per_concept():
    offences = []
    for name, cls in _public_classes():
        if dataclasses.is_dataclass(cls):
            offences += _offences(name, [f.name for f in dataclasses.fields(cls)])
    from lcbayes.comparison import registry

    columns = [c.name for m in registry.methods() for c in m.columns]
    offences += _offences("comparison JSON rows", columns)
    assert not offences, "\n".join(offences)


def test_command_line_options_use_the_python_names():
    options = _cli_options()
    offences = _offences("command line", options)
    keywords = {p for _, f in _public_functions() for p in inspect.signature(f).parameters}
    unknown = sorted(f"{where} (no public keyword {name!r})" for name, where in options.items()
                     if name not in keywords and name not in CLI_ONLY)
    assert not offences + unknown, "\n".join(offences + unknown)


def test_options_after_the_data_are_keyword_only():
    offences = []
    for name, function in [*_public_functions(), *_public_methods()]:
        for p in inspect.signature(function).parameters.values():
            if (p.kind is p.POSITIONAL_OR_KEYWORD and p.default is not p.empty
                    and p.name not in POSITIONAL_INPUTS):
                offences.append(f"{name}({p.name}=...)")
    assert not offences, ("options with a default must be keyword-only: "
                          + ", ".join(offences))


def _default(function, name):
    return inspect.signature(function).parameters[name].default


@pytest.mark.parametrize(("functions", "names"), [
    ((lcb.em, lcb.stream_em, lcb.blrt), ("tol", "max_iter", "restarts")),
    ((lcb.em, lcb.laplace, lcb.chib, lcb.LatentClassModel), ("restarts",)),
    ((lcb.em, lcb.LatentClassModel), ("tol", "max_iter", "algorithm")),
    ((lcb.vbem, lcb.stream_vbem), ("tol", "max_iter", "restarts")),
])
def test_the_same_algorithm_has_the_same_defaults(functions, names):
    for name in names:
        values = {f.__name__: _default(f, name) for f in functions}
        assert len(set(values.values())) == 1, f"{name}: {values}"


def test_every_seed_defaults_to_zero():
    seeds = {name: _default(f, "seed") for name, f in _public_functions()
             if "seed" in inspect.signature(f).parameters}
    assert len(seeds) > 20 and set(seeds.values()) == {0}, seeds


def test_one_naming_scheme_for_results_warnings_and_errors():
    for name, cls in _public_classes():
        if issubclass(cls, Warning):
            assert name.endswith("Warning"), name
        elif issubclass(cls, Exception):
            assert name.endswith("Error"), name


def test_all_and_the_api_reference_agree():
    pages = {p.stem.removesuffix("-class") for p in (ROOT / "docs" / "api").glob("*.md")}
    assert set(lcb.__all__) - {"__version__"} == pages - {"index"}
