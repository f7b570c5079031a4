"""Imports are lazy: ``import lcbayes`` loads neither JAX nor pandas, the command line's parser
loads none of ArviZ, NumPyro, matplotlib, xarray and SciPy's stats and optimize (``lcbayes fit``
needs none of them), and the first use of a name that
computes with JAX switches JAX to 64-bit floats. Each check runs in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import lcbayes

HEAVY = ("jax", "numpy", "pandas", "arviz", "numpyro", "matplotlib", "scipy.stats", "xarray",
         "scipy.optimize")


def _loaded_after(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; return what it prints as JSON."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=300)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_lcbayes_loads_no_heavy_dependency():
    loaded = _loaded_after(
        "import json, sys; import lcbayes; "
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    assert loaded == []


def test_the_command_line_parser_loads_no_sampler_or_plotting_dependency():
    loaded = _loaded_after(
        "import json, sys; from lcbayes.cli import _parser; _parser(); "
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    assert not {"arviz", "numpyro", "matplotlib", "scipy.stats", "xarray",
                "scipy.optimize"} & set(loaded), loaded


def test_first_use_switches_jax_to_float64_even_after_jax_was_imported():
    state = _loaded_after(
        "import json, jax; before = jax.config.jax_enable_x64; import lcbayes as lcb; "
        "lcb.Dataset; middle = jax.config.jax_enable_x64; lcb.em; "
        "print(json.dumps([before, middle, jax.config.jax_enable_x64, "
        "str(jax.numpy.ones(1).dtype)]))")
    assert state == [False, False, True, "float64"]


def test_every_public_name_resolves_and_is_listed():
    for name, module in lcbayes.API.items():
        value = getattr(lcbayes, name)
        assert name in lcbayes.__all__ and name in dir(lcbayes)
        defined = sys.modules[module]
        # a public module (lcb.datasets) is itself the value
        assert value is (defined if module == f"lcbayes.{name}" else getattr(defined, name))
    with pytest.raises(AttributeError, match="no attribute 'emm'"):
        lcbayes.emm  # noqa: B018


def test_printing_a_comparison_loads_neither_matplotlib_nor_scipy_stats():
    loaded = _loaded_after(
        "import json, sys, numpy as np; import lcbayes as lcb; "
        "d = lcb.Dataset(codes=np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0], [0, 0, 0]] * 5), "
        "columns=('a', 'b', 'c'), labels=((0, 1),) * 3); "
        "c = lcb.compare(d, n_classes=[1, 2], methods='bic', restarts=2); "
        "text = c.summary(); "
        "print(json.dumps([m for m in ('matplotlib', 'scipy.stats') if m in sys.modules]))")
    assert loaded == []


@pytest.mark.parametrize("words", [["--help"], ["--version"], ["datasets"]])
def test_help_version_and_datasets_load_neither_jax_nor_pandas(words):
    loaded = _loaded_after(
        "import contextlib, io, json, sys; from lcbayes.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        f"        main({words!r})\n"
        "    except SystemExit:\n"
        "        pass\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    assert not {"jax", "pandas", "numpy"} & set(loaded), loaded


def test_a_subcommand_loads_only_its_own_module():
    loaded = _loaded_after(
        "import json, sys; from lcbayes.cli import _parser; _parser(['fit']); "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('lcbayes.'))))")
    assert "lcbayes.cli.fit" in loaded
    assert not {"lcbayes.cli.compare", "lcbayes.cli.rjmcmc", "lcbayes.comparison",
                "lcbayes.samplers"} & set(loaded)


def test_the_listed_subcommands_are_the_parsers_and_each_runs_its_module():
    import argparse

    from lcbayes.cli import COMMANDS, _parser

    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert list(sub.choices) == list(COMMANDS)
    for name, parser in sub.choices.items():
        handler = parser.get_default("handler")
        assert handler.__module__ == f"lcbayes.cli.{name}"
        assert parser.format_help()  # every option's help renders
