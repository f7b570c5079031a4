"""Notebook 02 runs top to bottom (its own file, so pytest-xdist runs it beside notebook 01)."""

from __future__ import annotations

try:  # tests/ as a package
    from .test_notebooks import NOTEBOOK_DIR, needs_data, needs_kernel, run_notebook
except ImportError:  # tests/ on sys.path
    from test_notebooks import NOTEBOOK_DIR, needs_data, needs_kernel, run_notebook


@needs_data
@needs_kernel
def test_notebook_02_runs(monkeypatch, tmp_path):
    run_notebook(NOTEBOOK_DIR / "02_posterior_over_classes.ipynb", monkeypatch, tmp_path)
