"""The result contract (ARCHITECTURE.md, "The engine contract") over every public result class:
``to_dict()`` is JSON-ready and lossless (``from_dict`` of its JSON round trip gives back every
field: the same numbers, arrays, draws and nested results), ``to_frame()`` a non-empty table and
``summary()`` a non-empty text. Every class of ``lcbayes.API`` whose name ends in ``Result`` has
a case here (a new one without a case fails), and no public function returns an lcbayes class
outside that naming scheme (except the data and structure types of :data:`NOT_RESULTS`).

The cases are tiny real runs on one simulated data set (120 rows, 4 items), shared by the
module: one comparison whose EM fits serve every case that needs one (the file's time is
nearly all XLA compiling each engine's programs once), samplers and bootstraps with a few
draws."""

from __future__ import annotations

import dataclasses
import inspect
import json
import math
import re
import warnings
from collections.abc import Callable
from functools import cache

import arviz as az
import numpy as np
import pandas as pd
import pytest

import lcbayes as lcb
from lcbayes.streaming.blocks import PatternBlocks

ITEMS = ("Q1", "Q2", "Q3", "Q4")
P_YES = np.array([[0.85, 0.8, 0.9, 0.2], [0.15, 0.2, 0.1, 0.75]])  # (class, item)

#: lcbayes classes a public function may return that are no results: data, structures and
#: data read in blocks (anything else that is no lcbayes class, a dict, a float, a DataFrame or
#: an ArviZ InferenceData, is not checked).
NOT_RESULTS = {"Dataset", "Structure", "PatternBlocks", "Covariates"}


# ---------------------------------------------------------------------- the cases
@cache
def data() -> lcb.Dataset:
    template = lcb.Dataset.from_codes(np.array([[0] * 4, [1] * 4]), columns=ITEMS,
                                      labels=[("no", "yes")] * 4)
    params = {"class": np.array([0.6, 0.4]),
              **{c: np.stack([1 - P_YES[:, j], P_YES[:, j]], axis=1) for j, c in enumerate(ITEMS)}}
    return lcb.simulate(lcb.latent_class(template, 2), params, 120, seed=4, missing=0.1)


def lc2() -> lcb.Structure:
    return lcb.latent_class(data(), 2)


def _blocks() -> PatternBlocks:
    return PatternBlocks.from_dataset(data(), block_patterns=8)


@cache
def _covariates() -> pd.DataFrame:
    """A numeric covariate X and a continuous outcome Z for the rows of :func:`data`."""
    rng = np.random.default_rng(0)
    return pd.DataFrame({"X": rng.normal(size=data().n_rows),
                         "Z": rng.normal(size=data().n_rows)})


def _groups() -> np.ndarray:
    """Two groups for the rows of :func:`data`."""
    return np.where(np.arange(data().n_rows) % 3 == 0, "a", "b")


def _small() -> lcb.Dataset:
    """12 rows of 3 items: small enough for the exact evidence."""
    d = data().select(ITEMS[:3])
    return lcb.Dataset.from_codes(d.codes[:12], columns=d.columns, labels=d.labels)


#: ``{result class name: build(done)}``: a small real instance from the data, where ``done``
#: holds the instances built before it (``_map`` is the MAP fit that Laplace and Chib share).
#: The comparison runs the one EM fit per number of classes that the cases of EM, LMR, BLRT
#: and the fit indices use.
CASES: dict[str, Callable[[dict], object]] = {
    "ComparisonResult": lambda done: lcb.compare(
        data(), n_classes=[1, 2], methods=("bic", "entropy", "lmr", "blrt"), restarts=2,
        exact=False, engine_options={"blrt": {"replicates": 4}}, progress=False, workers=1),
    "EMResult": lambda done: done["ComparisonResult"].em[1],
    "LMRResult": lambda done: done["ComparisonResult"].fits["lmr"][1],
    "BLRTResult": lambda done: done["ComparisonResult"].fits["blrt"][1],
    "ClassificationQualityResult": lambda done: done["ComparisonResult"].fits[
        "classification"][1],
    "GoodnessOfFitResult": lambda done: lcb.goodness_of_fit(
        done["EMResult"].structure, done["EMResult"].params, data()),
    "DimensionResult": lambda done: lcb.effective_dimension_details(lc2()),
    "IdentifiabilityResult": lambda done: lcb.identifiable(lc2()),
    "VBResult": lambda done: lcb.vbem(lc2(), data(), restarts=1, seed=0),
    "BoundTermsResult": lambda done: lcb.bound_terms(lc2(), data(), done["VBResult"].posterior),
    "ExactEvidenceResult": lambda done: lcb.exact_evidence(lcb.latent_class(_small(), 2),
                                                           _small()),
    "AISResult": lambda done: lcb.ais(lc2(), data(), chains=4, temperatures=50, seed=0),
    "StreamEMResult": lambda done: lcb.stream_em(lc2(), _blocks(), restarts=1, seed=0),
    "StreamVBResult": lambda done: lcb.stream_vbem(lc2(), _blocks(), restarts=1, seed=0),
    "LearnResult": lambda done: lcb.learn_classes(data(), seed=0, splits=2, max_classes=2,
                                                  max_iter=50),
    "_map": lambda done: lcb.em(lc2(), data(), prior="dirichlet", restarts=2, seed=0),
    "LaplaceResult": lambda done: lcb.laplace(lc2(), data(), fit=done["_map"]),
    "ChibResult": lambda done: lcb.chib(lc2(), data(), draws=40, warmup=20, chains=2,
                                        batches=4, fit=done["_map"]),
    "GibbsResult": lambda done: lcb.gibbs(lc2(), data(), draws=40, warmup=40, chains=2, seed=0),
    "RelabelResult": lambda done: lcb.relabel(done["GibbsResult"], method="ecr"),
    "PPCResult": lambda done: lcb.posterior_predictive_check(done["GibbsResult"], data(),
                                                             draws=30),
    "LOOResult": lambda done: lcb.loo(lcb.gibbs(lc2(), data(), draws=60, warmup=40, chains=2,
                                                seed=0), data(), refit="none"),
    "RJMCMCResult": lambda done: lcb.rjmcmc(data(), max_classes=3, draws=40, warmup=40,
                                            chains=2, seed=0),
    "KMixingResult": lambda done: done["RJMCMCResult"].k_mixing,
    "DiagnosticsResult": lambda done: lcb.diagnostics(done["RJMCMCResult"],
                                                      relabel_method="ecr"),
    "AllocationResult": lambda done: lcb.allocation_sampler(
        data(), max_classes=3, draws=30, warmup=20, chains=2, heats=1, jumps=1, seed=0),
    "RegressionResult": lambda done: lcb.em(
        lc2(), data(), covariates=_covariates()[["X"]], distal=_covariates()["Z"], restarts=2,
        seed=0, standard_errors="empirical"),
    "ThreeStepResult": lambda done: lcb.three_step(lc2(), data(), distal=_covariates()["Z"]),
    "CovariateEvidenceResult": lambda done: lcb.covariate_evidence(
        lc2(), data(), covariates=_covariates()[["X"]], chains=2, draws=40, warmup=40, seed=0),
    "CovariatePosteriorResult": lambda done: done["CovariateEvidenceResult"].posteriors[0],
    "GroupResult": lambda done: lcb.em(lc2(), data(), group=_groups(), invariance=["Q1"],
                                       restarts=2, seed=0, standard_errors="empirical"),
    "InvarianceTestResult": lambda done: lcb.invariance_test(
        lcb.em(lc2(), data(), group=_groups(), restarts=2, seed=0), done["GroupResult"],
        bootstrap=2),
    # one structure; its evidence is the SMCResult case (one SMC program compiled), one round
    # of at most two reference components (tests/test_smc.py runs the rounds)
    "InvarianceComparisonResult": lambda done: lcb.compare_invariance(
        lc2(), data(), _groups(), invariance=["full"], restarts=2, engine_options={"smc": {
            "particles": 8, "runs": 2, "max_runs": 2, "target_stderr": None,
            "max_components": 2, "restarts": 2}}),
    "SMCResult": lambda done: done["InvarianceComparisonResult"].evidences["full"],
    "BridgeResult": lambda done: lcb.bridge_sampling(lc2(), data(), runs=2, chains=2, draws=40,
                                                     warmup=20, components=4, restarts=2,
                                                     max_modes=2, seed=0),
}

@pytest.fixture(scope="module")
def built() -> dict[str, object]:
    """Every case's instance, built in the order of :data:`CASES`, or the exception that
    building it raised (its test reraises it). The runs are too short for their R-hat, mixing
    and convergence warnings to matter."""
    done: dict[str, object] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, build in CASES.items():
            try:
                done[name] = build(done)
            except Exception as exc:
                done[name] = exc
    return done


# ---------------------------------------------------------------------- equality
def assert_same(a, b, where: str = "result") -> None:
    """``a`` and ``b`` hold the same values: dataclass fields, arrays (NaN equal to NaN),
    numbers exactly, mappings, sequences (a tuple equal to a list), tables, data sets and
    ArviZ draws, recursively."""
    if isinstance(a, az.InferenceData):
        assert isinstance(b, az.InferenceData), where
        assert set(a.groups()) == set(b.groups()), where
        for group in a.groups():
            x, y = a[group], b[group]
            assert_same(dict(x.attrs), dict(y.attrs), f"{where}.{group}.attrs")
            for name in [*x.coords, *x.data_vars]:
                assert x[name].dims == y[name].dims, f"{where}.{group}.{name}"
                assert_same(x[name].values, y[name].values, f"{where}.{group}.{name}")
            assert set(x.data_vars) == set(y.data_vars), f"{where}.{group}"
    elif isinstance(a, lcb.Dataset):
        assert isinstance(b, lcb.Dataset), where
        for name in ("columns", "labels", "patterns", "counts", "codes", "pattern_index"):
            assert_same(getattr(a, name), getattr(b, name), f"{where}.{name}")
    elif isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b, obj=where)
    elif dataclasses.is_dataclass(a) and not isinstance(a, type):
        assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__}"
        for field in dataclasses.fields(a):
            assert_same(getattr(a, field.name), getattr(b, field.name), f"{where}.{field.name}")
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.shape == b.shape, where
        np.testing.assert_array_equal(a, b, err_msg=where)
    elif isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), f"{where}: keys {list(a)} {list(b)}"
        for key in a:
            assert_same(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, list | tuple):
        assert isinstance(b, list | tuple) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, float | np.floating) and math.isnan(a):
        assert isinstance(b, float | np.floating) and math.isnan(b), where
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


# ---------------------------------------------------------------------- the contract
@pytest.mark.parametrize("name", sorted(n for n in CASES if not n.startswith("_")))
def test_result_keeps_the_contract(built, name):
    result = built[name]
    if isinstance(result, Exception):
        raise result
    cls = getattr(lcb, name)
    assert type(result) is cls
    assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, name
    text = json.dumps(result.to_dict(), allow_nan=False)  # JSON-ready: no NaN, no objects
    again = cls.from_dict(json.loads(text))
    assert_same(result, again, name)
    assert json.dumps(again.to_dict(), allow_nan=False) == text  # and the same JSON again
    frame = result.to_frame()
    assert isinstance(frame, pd.DataFrame) and len(frame) > 0 and len(frame.columns) > 0
    summary = result.summary()
    assert isinstance(summary, str) and summary.strip()


def test_the_cases_cover_every_result_class():
    results = {name for name in lcb.API if name.endswith("Result")}
    assert {name for name in CASES if not name.startswith("_")} == results


def _public_functions() -> dict[str, Callable]:
    out = {}
    for name in lcb.API:
        value = getattr(lcb, name)
        if inspect.isfunction(value):
            out[name] = value
    return out


def _returned_classes(fn: Callable) -> set[type]:
    """The lcbayes classes named in ``fn``'s return annotation."""
    annotation = inspect.signature(fn).return_annotation
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    found = set()
    for token in re.findall(r"[A-Za-z_][\w.]*", text):
        value = fn.__globals__.get(token.split(".")[0])
        for part in token.split(".")[1:]:
            value = getattr(value, part, None)
        if value is None and token in lcb.API:
            value = getattr(lcb, token)
        if isinstance(value, type) and value.__module__.startswith("lcbayes"):
            found.add(value)
    return found


def test_public_functions_return_results_named_as_results():
    functions = _public_functions()
    unannotated = [name for name, fn in functions.items()
                   if inspect.signature(fn).return_annotation is inspect.Signature.empty]
    assert not unannotated, f"public functions without a return annotation: {unannotated}"
    assert {"em", "compare", "relabel", "goodness_of_fit"} <= set(functions)
    assert lcb.DiagnosticsResult in _returned_classes(functions["diagnostics"])
    offences = {name: sorted(c.__name__ for c in _returned_classes(fn)
                             if not c.__name__.endswith("Result")
                             and c.__name__ not in NOT_RESULTS)
                for name, fn in functions.items()}
    assert not {k: v for k, v in offences.items() if v}, offences
    for name, fn in functions.items():  # every result returned is public under its name
        for cls in _returned_classes(fn):
            assert getattr(lcb, cls.__name__, None) is cls, (name, cls.__name__)
