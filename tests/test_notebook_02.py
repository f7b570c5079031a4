"""Notebook 02 runs top to bottom, shows its figures as images and prints no warning from a
dependency (its own file, so pytest-xdist runs it beside notebook 01; the checks are those of
``test_notebooks.py``)."""

from __future__ import annotations

import pytest

from .test_notebooks import check_figures, check_quiet, check_runs, executed_notebook

notebook_02 = executed_notebook("02_posterior_over_classes.ipynb")


@pytest.mark.slow  # CI time: a cold run is about 40 s (docs/notebooks.md)
def test_notebook_02_runs(notebook_02):
    check_runs(notebook_02)


@pytest.mark.slow  # CI time: a cold run is about 40 s (docs/notebooks.md)
def test_notebook_02_shows_every_figure_as_an_image(notebook_02):
    check_figures(notebook_02)


@pytest.mark.slow  # CI time: a cold run is about 40 s (docs/notebooks.md)
def test_notebook_02_prints_no_warning_from_a_dependency(notebook_02):
    check_quiet(notebook_02)
