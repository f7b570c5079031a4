"""Shared fixtures: the real data sets (the ones lcbayes ships, from :mod:`lcbayes.datasets`;
election from ``tests/data``)."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

# Most of the suite's time is XLA compiling hundreds of small programs once each, and the
# problems are tiny: unoptimised code generation halves the compile time (the same programs,
# the same numbers to rounding). Set before JAX starts its backend; XLA_FLAGS given by the
# caller are kept.
if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                               + " --xla_backend_optimization_level=0").strip()

import pytest

import lcbayes as lcb

TEST_DATA = Path(__file__).resolve().parent / "data"

# The suite runs without the persistent compilation cache (a caller's LCBAYES_CACHE_DIR is
# kept): CI starts from an empty cache anyway, and a worker near the memory-mapping limit (see
# _bounded_memory_mappings) crashed inside the cache's (de)serialisation. tests/test_cli.py and
# tests/test_cache.py give the cache tests folders of their own.
if "LCBAYES_CACHE_DIR" not in os.environ:
    os.environ["LCBAYES_CACHE_DIR"] = "off"


#: Where :func:`data_csv` writes the shipped data sets (once per test process).
_WRITTEN = Path(tempfile.mkdtemp(prefix="lcbayes-datasets-"))
atexit.register(shutil.rmtree, _WRITTEN, ignore_errors=True)


def data_csv(name: str) -> Path:
    """Path of data file ``name``: a data set lcbayes ships (:mod:`lcbayes.datasets`) written
    as CSV, else the file in ``tests/data`` (its README states the sources)."""
    stem = Path(name).stem
    if stem in lcb.datasets.SETS:
        path = _WRITTEN / name
        if not path.is_file():
            lcb.datasets.write_csv(stem, path)
        return path
    path = TEST_DATA / name
    assert path.is_file(), f"{path} is missing: the tests' own data belong in tests/data"
    return path


@pytest.fixture(scope="session")
def carcinoma() -> lcb.Dataset:
    """Agresti's carcinoma ratings: 118 slides x 7 pathologists, coded 1/2."""
    return lcb.datasets.load("carcinoma")


@pytest.fixture(scope="session")
def long_names_tree():
    """An HLC tree learned on carcinoma with long column names (its path table and figure
    labels are wide: the report tests' hard case, tests/test_report_rendering.py)."""
    frame = lcb.datasets.frame("carcinoma")
    frame.columns = [f"pathologist_{c}_rating_of_the_slide" for c in frame.columns]
    return lcb.learn_tree(lcb.Dataset.from_pandas(frame), seed=0, time_limit=30)


#: The slowest test files, slowest first (measured; the notebooks take minutes each). They are
#: collected first, so that pytest-xdist (``--dist loadfile``, which hands out whole files)
#: starts them early and the short files fill the gaps at the end, instead of one worker
#: finishing a long file alone.
LONG_FILES = ("test_notebooks.py", "test_notebook_02.py", "test_report_rendering.py", "test_ais.py",
              "test_vbem.py",
              "test_em.py", "test_compare.py", "test_cli.py", "test_beal_study.py",
              "test_inference.py", "test_ais_numpyro.py", "test_coded.py", "test_gibbs.py",
              "test_rjmcmc.py", "test_models.py", "test_execution.py",
              "test_result_contract.py")


#: Past this many memory mappings a worker drops its compiled programs (below).
MAX_MAPPINGS = 30000


@pytest.fixture(autouse=True, scope="module")
def _bounded_memory_mappings():
    """Every compiled XLA program keeps memory mappings; a worker that compiles hundreds of
    them passes the kernel's ``vm.max_map_count`` (65530), and LLVM then fails to allocate and
    the process crashes. After a test file, a worker past :data:`MAX_MAPPINGS` drops its
    compiled programs (``jax.clear_caches``)."""
    yield
    maps = Path("/proc/self/maps")
    if maps.exists() and sum(1 for _ in maps.open()) > MAX_MAPPINGS:
        import gc

        import jax

        jax.clear_caches()
        gc.collect()


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(LONG_FILES)}
    # stable: the order within a file, and of the other files, is kept
    items.sort(key=lambda item: rank.get(item.path.name, len(LONG_FILES)))
