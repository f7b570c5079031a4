"""EM and VBEM with the data patterns sharded over JAX devices (``devices=``, lcbayes.sharding)
give the one-device fit, and bad ``devices`` are refused naming the argument.

Several host devices exist only when ``XLA_FLAGS=--xla_force_host_platform_device_count=2`` is
set before JAX starts, so the comparison runs this file as a module in a subprocess
(``python -m tests.test_sharding default [carcinoma.csv]``, or ``coded``), which prints its
measured differences as JSON; the tests assert on them.

Why the fits run to ``max_iter`` (``tol`` far below rounding): the sharded E step sums the
patterns in another order, so its numbers differ from one device's by rounding (~1e-13), and
SQUAREM's step length and safeguard can turn such a difference into another path to the same
maximum (at the default ``tol`` another iteration count, parameters apart by ~1e-7 on
carcinoma). Run to the fixed point, both paths give the same estimate, which is compared to
1e-8. Restarts that reach the same optimum tie: the best is then picked by rounding, so the
cases here have distinct restart optima (or, for VBEM, which does not order classes, one
restart).
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import lcbayes as lcb
from lcbayes.cli import fit as fit_command
from lcbayes.cli import main

from .conftest import data_csv

TOL = 1e-8         # fits: loglik, objective, restart logliks, parameters, posteriors, F
STEP_TOL = 1e-10   # the log-likelihoods and bounds themselves: rounding only
#: VBEM's per-pattern posteriors: with ``tol`` below rounding VBEM stops where ``F`` no longer
#: changes in float64, which fixes ``q(s)`` to ~1e-8 only (3571 patterns: 4 against 7
#: iterations, posterior means 1.6e-9 apart, pattern posteriors 1.2e-8).
VB_POSTERIOR_TOL = 1e-7


def _models() -> dict:
    """A simulated HLC and a DAG with 10% missing values and an odd number of patterns (so
    two devices need a padding pattern), as (structure, data) pairs."""
    rng = np.random.default_rng(0)
    base = lcb.Dataset.from_codes(np.stack([rng.integers(0, c, 30) for c in (2, 3, 2, 3, 2)],
                                           axis=1))
    a, b, c, d, e = base.columns
    structures = {
        "hlc": lcb.hlc(base, {"H": ["H1", a, b], "H1": [c, d, e]}, {"H": 2, "H1": 3}),
        "dag": lcb.dag(base, {a: ["s1"], b: ["s1", "s2"], c: ["s2", a], d: ["s2"], e: [d]},
                       {"s1": 2, "s2": 2}),
    }
    out = {}
    for name, s in structures.items():
        truth = lcb.random_params(s, seed=7)
        n = 300
        while (data := lcb.simulate(s, truth, n=n, seed=3, missing=0.1)).n_patterns % 2 == 0:
            n += 1
        out[name] = (s, data)
    return out


def _coded_case():
    """A latent class model with more patterns than the enumeration route's threshold for
    block-coded evidence (:mod:`lcbayes.inference.coded`), 5% missing."""
    template = lcb.Dataset.from_codes(np.tile([[0], [1]], (1, 14)))
    s = lcb.latent_class(template, 2)
    data = lcb.simulate(s, lcb.random_params(s, seed=1), n=5000, seed=2, missing=0.05)
    return s, data


def _collectives(structure, data) -> dict:
    """The collective operations in the compiled EM core for patterns placed on two devices:
    all-reduces of the E-step sums, and no all-gather (each device keeps its half)."""
    from collections import Counter

    from lcbayes.engines.em_loop import run_em
    from lcbayes.inference import complete_columns
    from lcbayes.sharding import pattern_shards

    shards = pattern_shards(2, data.n_patterns)
    patterns, weights = shards.place(data.patterns, data.counts)
    tables = lcb.params.to_tables(structure, lcb.random_params(structure, seed=0))
    starts = shards.replicate(tuple(t[None] for t in tables))
    text = run_em.jitted.lower(structure, patterns, weights, None, 1e-6, starts, 5, 5, 0.0, 1,
                               True, complete=complete_columns(data.patterns)).compile().as_text()
    return dict(Counter(re.findall(r"(all-reduce|all-gather|all-to-all|collective-permute)\(",
                                   text)))


def _gap(a, b) -> float:
    """Largest absolute difference between two numbers, arrays or ``{name: array}``."""
    if isinstance(a, dict):
        return max(_gap(a[k], b[k]) for k in a)
    return float(np.max(np.abs(np.asarray(a, dtype=float) - np.asarray(b, dtype=float))))


def _compare(structure, data, devices: tuple[int, ...], restarts: int = 2) -> dict:
    """EM (SQUAREM) and VBEM with no ``devices`` and each of ``devices``: the largest
    differences from the run without the argument (expected counts and the entropy, sums over
    rows, per row), and how ``place`` split the patterns."""
    from lcbayes import sharding

    placed = []
    place = sharding.PatternShards.place

    def recording(self, patterns, weights):
        out = place(self, patterns, weights)
        placed.append([[list(s.data.shape) for s in x.addressable_shards] for x in out])
        return out

    sharding.PatternShards.place = recording
    settings = {"tol": 1e-300, "max_iter": 150, "restarts": restarts, "seed": 1}
    fits = {d: (lcb.em(structure, data, **settings, devices=d),
                lcb.vbem(structure, data, **settings, devices=d)) for d in (None, *devices)}
    sharding.PatternShards.place = place
    em0, vb0 = fits[None]
    gaps = {}
    for d in devices:
        em, vb = fits[d]
        gaps[str(d)] = {
            "loglik": _gap(em.loglik, em0.loglik),
            "objective": _gap(em.objective, em0.objective),
            "restart_logliks": _gap(em.restart_logliks, em0.restart_logliks),
            "params": _gap(em.params, em0.params),
            "hidden_posteriors": _gap(em.hidden_posteriors, em0.hidden_posteriors),
            "expected_counts": _gap(em.expected_counts, em0.expected_counts) / data.n_rows,
            "entropy": _gap(em.entropy, em0.entropy) / data.n_rows,
            "elbo": _gap(vb.elbo, vb0.elbo),
            "restart_elbos": _gap(vb.restart_elbos, vb0.restart_elbos),
            "posterior_mean": _gap(vb.posterior_mean, vb0.posterior_mean),
            "vb_hidden_posteriors": _gap(vb.hidden_posteriors, vb0.hidden_posteriors),
        }
    return {"n_patterns": data.n_patterns, "gaps": gaps, "placed": placed,
            "restart_spread": [float(np.ptp(em0.restart_logliks)),
                               float(np.ptp(vb0.restart_elbos))],
            "hidden_rows": {k: len(v) for k, v in fits[2][0].hidden_posteriors.items()}}


def _main(which: str, carcinoma: str = "") -> None:
    """The subprocess: every comparison as one JSON line; ``which`` is ``default`` (the HLC,
    the DAG, carcinoma if its path is given, and the compiled collectives) or ``coded``."""
    if which == "coded":  # one restart: VBEM does not order the classes of equal optima
        cases = {"coded": (*_coded_case(), (2,), 1)}
    else:
        cases = {name: (*model, (2,)) for name, model in _models().items()}
        if carcinoma:
            data = lcb.Dataset.from_csv(carcinoma)
            cases["carcinoma"] = (lcb.latent_class(data, 3), data, (1, 2))
    report = {"device_count": jax.device_count(),
              "cases": {name: _compare(*case) for name, case in cases.items()}}
    if which != "coded":
        report["collectives"] = {name: _collectives(*cases[name][:2]) for name in ("hlc", "dag")}
    print(json.dumps(report))


def _subprocess(*args: str) -> dict:
    """``_main(*args)`` in a Python with two forced host devices; its report."""
    env = dict(os.environ)
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "")
                        + " --xla_force_host_platform_device_count=2").strip()
    done = subprocess.run([sys.executable, "-m", "tests.test_sharding", *args],
                          cwd=Path(__file__).resolve().parents[1], env=env,
                          capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def two_devices() -> dict:
    """The default report (two forced host devices)."""
    return _subprocess("default", str(data_csv("carcinoma.csv")))


EM_FIELDS = ("loglik", "objective", "restart_logliks", "params", "hidden_posteriors",
             "expected_counts", "entropy")
VB_FIELDS = ("elbo", "restart_elbos", "posterior_mean")


@pytest.mark.slow  # the two-device subprocess compiles every program again: 30-60 s
def test_the_subprocess_has_two_host_devices(two_devices):
    assert two_devices["device_count"] == 2


@pytest.mark.parametrize("case", ["carcinoma", "hlc", "dag"])
@pytest.mark.slow  # the two-device subprocess compiles every program again: 30-60 s
def test_sharded_em_equals_the_one_device_fit(two_devices, case):
    gaps = two_devices["cases"][case]["gaps"]["2"]
    assert {f: gaps[f] for f in EM_FIELDS if gaps[f] > TOL} == {}


@pytest.mark.parametrize("case", ["carcinoma", "hlc", "dag"])
@pytest.mark.slow  # the two-device subprocess compiles every program again: 30-60 s
def test_sharded_vbem_bound_equals_the_one_device_bound(two_devices, case):
    gaps = two_devices["cases"][case]["gaps"]["2"]
    assert {f: gaps[f] for f in VB_FIELDS if gaps[f] > TOL} == {}
    assert gaps["vb_hidden_posteriors"] < VB_POSTERIOR_TOL


@pytest.mark.slow  # the two-device subprocess compiles every program again: 30-60 s
def test_the_sums_differ_by_rounding_only(two_devices):
    """Log-likelihoods and bounds are sums over patterns: sharding reorders the additions."""
    for case in two_devices["cases"].values():
        gaps = case["gaps"]["2"]
        assert max(gaps[f] for f in ("loglik", "restart_logliks", "elbo",
                                     "restart_elbos")) < STEP_TOL


@pytest.mark.slow  # the two-device subprocess compiles every program again: 30-60 s
def test_one_device_as_a_mesh_is_the_default_fit(two_devices):
    gaps = two_devices["cases"]["carcinoma"]["gaps"]["1"]
    assert max(gaps.values()) < 1e-12


@pytest.mark.slow  # the two-device subprocess compiles every program again: 30-60 s
def test_patterns_are_split_in_halves_and_outputs_unpadded(two_devices):
    """Two shards of ceil(P / 2) rows (an odd P gets one padding pattern), weights alike;
    the hidden posteriors come back with one row per data pattern."""
    odd = 0
    for case in two_devices["cases"].values():
        n = case["n_patterns"]
        half = -(-n // 2)
        odd += n % 2
        two = [p for p in case["placed"] if len(p[0]) == 2]
        assert len(two) == 2  # EM and VBEM
        for patterns, weights in two:
            assert [shape[0] for shape in patterns] == [half, half]
            assert weights == [[half], [half]]
        assert set(case["hidden_rows"].values()) == {n}
    assert odd >= 2  # the HLC and the DAG need padding


@pytest.mark.parametrize(("devices", "error", "match"), [
    (0, lcb.ArgumentError, "devices must be between 1 and"),
    (-1, lcb.ArgumentError, "devices must be between 1 and"),
    ("gpu", lcb.ArgumentTypeError, "devices must be None, a number"),
    (object(), lcb.ArgumentTypeError, "devices must be None, a number"),
    ([object()], lcb.ArgumentTypeError, "devices must be a non-empty sequence of jax.Device"),
    ([], lcb.ArgumentError, "devices must be a non-empty sequence of jax.Device"),
    (True, lcb.ArgumentTypeError, "devices must be None, a number"),
])
@pytest.mark.parametrize("engine", [lcb.em, lcb.vbem])
def test_bad_devices_are_refused_naming_the_argument(engine, devices, error, match):
    data = lcb.Dataset.from_codes(np.array([[0, 1], [1, 0], [1, 1]]))
    with pytest.raises(error, match=match):
        engine(lcb.latent_class(data, 2), data, devices=devices)


@pytest.mark.parametrize("engine", [lcb.em, lcb.vbem])
def test_more_devices_than_jax_has_are_refused(engine):
    data = lcb.Dataset.from_codes(np.array([[0, 1], [1, 0], [1, 1]]))
    n = jax.device_count()
    with pytest.raises(lcb.ArgumentError, match=f"between 1 and the {n} device"):
        engine(lcb.latent_class(data, 2), data, devices=n + 1)
    with pytest.raises(lcb.ArgumentError, match="more than once"):
        engine(lcb.latent_class(data, 2), data, devices=[jax.devices()[0]] * 2)



def test_incremental_em_is_refused_with_devices():
    """IEM visits blocks of patterns in turn: nothing to split, and padding would change the
    blocks."""
    data = lcb.Dataset.from_codes(np.array([[0, 1], [1, 0], [1, 1]]))
    with pytest.raises(lcb.ArgumentError, match="devices cannot be given with algorithm='iem'"):
        lcb.em(lcb.latent_class(data, 2), data, algorithm="iem", devices=1)



@pytest.mark.slow  # the two-device subprocess compiles every program again: 30-60 s
def test_patterns_are_not_gathered_but_sums_all_reduced(two_devices):
    """The compiled EM core on two devices: each keeps its half of the patterns (no
    all-gather), the E-step sums are all-reduced."""
    for collectives in two_devices["collectives"].values():
        assert collectives.get("all-reduce", 0) >= 1
        assert set(collectives) == {"all-reduce"}


@pytest.mark.slow
def test_sharded_block_coded_evidence_equals_the_one_device_fit():
    """3571 patterns: the enumeration route's block codes (lcbayes.inference.coded), with one
    padding pattern."""
    report = _subprocess("coded")
    case = report["cases"]["coded"]
    assert case["n_patterns"] % 2 == 1 and case["n_patterns"] >= 2048
    gaps = case["gaps"]["2"]
    assert {f: gaps[f] for f in EM_FIELDS + VB_FIELDS if gaps[f] > TOL} == {}
    assert gaps["vb_hidden_posteriors"] < VB_POSTERIOR_TOL


def _fit_cli(capsys, tmp_path, *options) -> tuple[int, str, str]:
    csv = tmp_path / "small.csv"
    csv.write_text("a,b,c\n" + "\n".join(["1,0,1", "1,1,1", "0,0,0", "0,,1", "1,1,0"]) + "\n")
    status = main(["fit", str(csv), "--n-classes", "2", *options])
    out, err = capsys.readouterr()
    return status, out, err


class _Called(Exception):
    """Raised by a stand-in engine with the keyword arguments it was given."""


@pytest.mark.parametrize("method", ["em", "vbem"])
def test_the_command_line_passes_devices_to_the_engine(capsys, tmp_path, monkeypatch, method):
    @functools.wraps(getattr(fit_command, method))  # its signature: the CLI reads defaults
    def engine(structure, data, **kwargs):
        raise _Called(kwargs)

    monkeypatch.setattr(fit_command, method, engine)
    with pytest.raises(_Called) as called:
        _fit_cli(capsys, tmp_path, "--method", method, "--devices", "2")
    assert called.value.args[0]["devices"] == 2
    with pytest.raises(_Called) as called:
        _fit_cli(capsys, tmp_path, "--method", method)
    assert "devices" not in called.value.args[0]


def test_the_command_line_refuses_devices_for_other_methods(capsys, tmp_path):
    status, out, err = _fit_cli(capsys, tmp_path, "--method", "ais", "--devices", "1")
    assert (status, out) == (2, "")
    assert "--devices applies to --method em or vbem" in err


if __name__ == "__main__":
    _main(*sys.argv[1:])
