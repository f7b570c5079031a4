"""EM and VBEM with the data patterns sharded over JAX devices (``devices=``, lcbayes.sharding)
give the one-device fit, and bad ``devices`` are refused naming the argument.

Several host devices exist only when ``XLA_FLAGS=--xla_force_host_platform_device_count=2`` is
set before JAX starts, so the comparison runs this file as a script in a subprocess
(``python tests/test_sharding.py [carcinoma.csv]``), which prints its measured differences as
JSON; the tests assert on them.

Why the fits run to ``max_iter`` (``tol`` far below rounding): the sharded E step sums the
patterns in another order, so its numbers differ from one device's by rounding (~1e-13,
checked on the first objective of every restart), and SQUAREM's step length and safeguard can
turn such a difference into another path to the same maximum (a different iteration count at
the default ``tol``, parameters apart by the tolerance, ~1e-7). Run to the fixed point, both
paths give the same estimate, which is what is compared to 1e-8.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import lcbayes as lcb
from lcbayes.cli import main

from .conftest import SHARED_DATA

TOL = 1e-8           # fits: loglik, objective, restart logliks, parameters, posteriors, F
STEP_TOL = 1e-10     # one E step at the same starts: rounding only


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


def _gap(a, b) -> float:
    """Largest absolute difference between two numbers, arrays or ``{name: array}``."""
    if isinstance(a, dict):
        return max(_gap(a[k], b[k]) for k in a)
    return float(np.max(np.abs(np.asarray(a, dtype=float) - np.asarray(b, dtype=float))))


def _compare(structure, data, devices: tuple[int, ...]) -> dict:
    """EM (SQUAREM) and VBEM with no ``devices`` and each of ``devices``: the largest
    differences from the run without the argument, and how ``place`` split the patterns."""
    from lcbayes import sharding

    placed = []
    place = sharding.PatternShards.place

    def recording(self, patterns, weights):
        out = place(self, patterns, weights)
        placed.append([[list(s.data.shape) for s in x.addressable_shards] for x in out])
        return out

    sharding.PatternShards.place = recording
    settings = {"tol": 1e-300, "max_iter": 150, "restarts": 2, "seed": 1}
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
            "expected_counts": _gap(em.expected_counts, em0.expected_counts),
            "entropy": _gap(em.entropy, em0.entropy),
            "elbo": _gap(vb.elbo, vb0.elbo),
            "restart_elbos": _gap(vb.restart_elbos, vb0.restart_elbos),
            "posterior_mean": _gap(vb.posterior_mean, vb0.posterior_mean),
            "vb_hidden_posteriors": _gap(vb.hidden_posteriors, vb0.hidden_posteriors),
        }
    return {"n_patterns": data.n_patterns, "gaps": gaps, "placed": placed,
            "restart_spread": [_gap(*em0.restart_logliks), _gap(*vb0.restart_elbos)],
            "hidden_rows": {k: len(v) for k, v in fits[2][0].hidden_posteriors.items()}}


def _main(carcinoma: str) -> None:
    """The subprocess: every comparison as one JSON line."""
    cases = {name: (*model, (2,)) for name, model in _models().items()}
    if carcinoma:
        data = lcb.Dataset.from_csv(carcinoma)
        cases["carcinoma"] = (lcb.latent_class(data, 3), data, (1, 2))
    report = {"device_count": jax.device_count(),
              "cases": {name: _compare(*case) for name, case in cases.items()}}
    print(json.dumps(report))


@pytest.fixture(scope="module")
def two_devices() -> dict:
    """The subprocess's report (two forced host devices)."""
    carcinoma = SHARED_DATA / "carcinoma.csv"
    env = dict(os.environ)
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "")
                        + " --xla_force_host_platform_device_count=2").strip()
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-m", "tests.test_sharding",
         str(carcinoma) if carcinoma.is_file() else ""],
        cwd=root, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


EM_FIELDS = ("loglik", "objective", "restart_logliks", "params", "hidden_posteriors",
             "expected_counts", "entropy")
VB_FIELDS = ("elbo", "restart_elbos", "posterior_mean", "vb_hidden_posteriors")


def test_the_subprocess_has_two_host_devices(two_devices):
    assert two_devices["device_count"] == 2


@pytest.mark.parametrize("case", ["carcinoma", "hlc", "dag"])
def test_sharded_em_equals_the_one_device_fit(two_devices, case):
    if case not in two_devices["cases"]:
        pytest.skip("carcinoma.csv is absent")
    gaps = two_devices["cases"][case]["gaps"]["2"]
    assert {f: gaps[f] for f in EM_FIELDS if gaps[f] > TOL} == {}


@pytest.mark.parametrize("case", ["carcinoma", "hlc", "dag"])
def test_sharded_vbem_bound_equals_the_one_device_bound(two_devices, case):
    if case not in two_devices["cases"]:
        pytest.skip("carcinoma.csv is absent")
    gaps = two_devices["cases"][case]["gaps"]["2"]
    assert {f: gaps[f] for f in VB_FIELDS if gaps[f] > TOL} == {}


def test_the_sums_differ_by_rounding_only(two_devices):
    """Log-likelihoods and bounds are sums over patterns: sharding reorders the additions."""
    for case in two_devices["cases"].values():
        gaps = case["gaps"]["2"]
        assert max(gaps[f] for f in ("loglik", "restart_logliks", "elbo",
                                     "restart_elbos")) < STEP_TOL


def test_one_device_as_a_mesh_is_the_default_fit(two_devices):
    if "carcinoma" not in two_devices["cases"]:
        pytest.skip("carcinoma.csv is absent")
    gaps = two_devices["cases"]["carcinoma"]["gaps"]["1"]
    assert max(gaps.values()) < 1e-12


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
    ([object()], lcb.ArgumentError, "devices must be a non-empty sequence of jax.Device"),
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



def _fit_cli(capsys, tmp_path, *options) -> tuple[int, str, str]:
    csv = tmp_path / "small.csv"
    csv.write_text("a,b,c\n" + "\n".join(["1,0,1", "1,1,1", "0,0,0", "0,,1", "1,1,0"]) + "\n")
    status = main(["fit", str(csv), "--classes", "2", *options])
    out, err = capsys.readouterr()
    return status, out, err


def test_the_command_line_passes_devices_to_em(capsys, tmp_path):
    status, out, _ = _fit_cli(capsys, tmp_path, "--restarts", "2", "--devices", "1", "--json")
    _, plain, _ = _fit_cli(capsys, tmp_path, "--restarts", "2", "--json")
    assert status == 0
    assert json.loads(out)["loglik"] == pytest.approx(json.loads(plain)["loglik"], abs=1e-12)


def test_the_command_line_refuses_devices_for_other_methods(capsys, tmp_path):
    status, out, err = _fit_cli(capsys, tmp_path, "--method", "ais", "--devices", "1")
    assert (status, out) == (2, "")
    assert "--devices applies to --method em or vbem" in err


if __name__ == "__main__":
    _main(sys.argv[1] if len(sys.argv) > 1 else "")
