"""Likelihood-ratio tests of K-1 against K classes (lcbayes.lrt): the parametric bootstrap (BLRT)
and the Lo-Mendell-Rubin tests (LMR).

The data are small (4 or 5 binary items, a few hundred rows), so that a BLRT takes a fraction of
a second once compiled. The full calibration study (hundreds of simulated data sets) is marked
``slow``: it runs with ``pytest -m slow``, not in the default run.
"""

from __future__ import annotations

import json
import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import chi2

import lcbayes as lcb
from lcbayes.errors import ArgumentError, ArgumentTypeError
from lcbayes.lrt import blrt, bootstrap, lmr, vuong_weights, weighted_chi2_sf


def _model(k: int, n_items: int, separation: float = 0.6):
    """A latent class model with ``k`` equal classes on binary items: item probabilities
    spread over ``0.5 +- separation / 2``, rotated from item to item."""
    base = lcb.Dataset.from_codes([[0] * n_items, [1] * n_items])
    structure = lcb.latent_class(base, k)
    probs = (np.linspace(0.5 - separation / 2, 0.5 + separation / 2, k) if k > 1
             else np.array([0.3]))
    params = {"class": np.full(k, 1.0 / k)}
    for j, name in enumerate(base.columns):
        params[name] = np.c_[1 - np.roll(probs, j), np.roll(probs, j)]
    return structure, params


def _sample(k: int, n_items: int, n: int, seed: int, separation: float = 0.6,
            missing: float = 0.0) -> lcb.Dataset:
    structure, params = _model(k, n_items, separation)
    return lcb.simulate(structure, params, n, seed=seed, missing=missing)


@pytest.fixture(scope="module")
def null_data():
    """300 rows of 4 binary items from one class (every one of the 16 patterns appears)."""
    return _sample(1, 4, 300, seed=11)


@pytest.fixture(scope="module")
def two_class_data():
    """400 rows of 5 binary items from two well-separated classes."""
    return _sample(2, 5, 400, seed=12, separation=0.8)


# ------------------------------------------------------------------ weighted chi-square
def test_weighted_chi2_tail_is_chi2_for_unit_weights():
    for k in (1, 2, 7, 30):
        for x in (0.2, k, 3 * k + 10):
            assert weighted_chi2_sf(x, np.ones(k)) == pytest.approx(chi2.sf(x, k), abs=1e-8)


def test_weighted_chi2_tail_with_weights_of_both_signs_matches_simulation():
    lam = np.array([3.0, 1.5, 0.7, -0.4, -1.2, 0.05])
    draws = (np.random.default_rng(0).standard_normal((400_000, lam.size)) ** 2) @ lam
    for x in (-2.0, 0.0, 1.0, 5.0, 15.0):
        assert weighted_chi2_sf(x, lam) == pytest.approx((draws > x).mean(), abs=3e-3)
    assert weighted_chi2_sf(-3.0, [-1.0]) == pytest.approx(1 - chi2.sf(3.0, 1), abs=1e-8)


def test_vuong_weights_of_a_regular_nested_pair_are_one_and_zeros():
    """Saturated 2 x 2 table against independence, data independent: Vuong's W has one
    eigenvalue 1 (the chi-square(1) of the classical LR test) and the rest near 0."""
    rng = np.random.default_rng(0)
    y = np.c_[rng.random(20_000) < 0.3, rng.random(20_000) < 0.6].astype(int)
    cells = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    counts = np.array([np.sum((y == c).all(axis=1)) for c in cells], dtype=float)

    def log_softmax(v):
        return v - jax.scipy.special.logsumexp(v)

    def saturated(e):
        return log_softmax(jnp.r_[0.0, e])

    def independent(e):
        return (log_softmax(jnp.r_[0.0, e[0]])[cells[:, 0]]
                + log_softmax(jnp.r_[0.0, e[1]])[cells[:, 1]])

    p = counts / counts.sum()
    a, b = p[2] + p[3], p[1] + p[3]
    e_f = jnp.log(jnp.asarray(p[1:] / p[0]))
    e_g = jnp.asarray([math.log(a / (1 - a)), math.log(b / (1 - b))])
    parts = [np.asarray(f(e)) for fn, e in ((saturated, e_f), (independent, e_g)) for f in
             (jax.jacfwd(fn), jax.hessian(lambda v, fn=fn: jnp.asarray(counts) @ fn(v)))]
    lam = vuong_weights(*parts, counts)
    assert lam[0] == pytest.approx(1.0, abs=1e-6)
    assert np.all(np.abs(lam[1:]) < 0.05)


# ------------------------------------------------------------------ BLRT
def test_blrt_p_value_estimator_and_result(null_data):
    result = blrt(null_data, 2, replicates=39, restarts=3, seed=1, sequential=False)
    assert result.replicates_used == 39 and not result.stopped_early
    assert result.replicate_lr.shape == (39,)
    exceed = int(np.sum(result.replicate_lr >= result.lr))
    assert result.n_exceed == exceed
    assert result.p_value == pytest.approx((1 + exceed) / 40)
    assert result.p_value_stderr == pytest.approx(
        math.sqrt(result.p_value * (1 - result.p_value) / 39))
    assert result.p_value_interval[0] <= exceed / 39 <= result.p_value_interval[1]
    assert result.lr == pytest.approx(2 * (result.loglik_alt - result.loglik_null))
    np.testing.assert_allclose(result.replicate_lr, 2 * (result.replicate_loglik_alt
                                                          - result.replicate_loglik_null))
    # the split start keeps K classes at least as good as K-1 on every replicate
    assert np.all(result.replicate_lr > -1e-6)
    assert result.n_failed == 0 and result.n_parameters_alt - result.n_parameters_null == 5
    spec = json.loads(json.dumps(result.to_dict()))
    assert spec["method"] == "blrt" and spec["replicates_used"] == 39
    assert "Bootstrap likelihood-ratio test: 1 vs 2 classes" in result.summary()


def test_blrt_same_seed_same_result(null_data):
    first = blrt(null_data, 2, replicates=20, restarts=3, seed=5)
    again = blrt(null_data, 2, replicates=20, restarts=3, seed=5)
    other = blrt(null_data, 2, replicates=20, restarts=3, seed=6)
    np.testing.assert_array_equal(first.replicate_lr, again.replicate_lr)
    assert first.p_value == again.p_value
    assert not np.array_equal(first.replicate_lr, other.replicate_lr)


@pytest.mark.slow  # a power study
def test_blrt_power_on_well_separated_classes(two_class_data):
    result = blrt(two_class_data, 2, replicates=19, restarts=3, seed=0)
    assert result.n_exceed == 0 and result.p_value == pytest.approx(1 / 20)
    assert result.lr > 10 * result.replicate_lr.max()


@pytest.mark.slow  # several full BLRT runs
def test_sequential_rule_stops_early_on_clear_cases(two_class_data):
    # one-class data with a typical LR of 1 vs 2 classes (2.5; null_data's 15.0 is a 1-in-200
    # draw whose bootstrap p is 0.005): p clearly above alpha after 50 replicates
    keep = blrt(_sample(1, 4, 300, seed=13), 2, replicates=500, restarts=2, seed=3)
    assert keep.n_exceed >= 10
    assert keep.stopped_early and keep.replicates_used == 50
    assert keep.p_value_interval[0] > keep.alpha
    reject = blrt(two_class_data, 2, replicates=500, restarts=2, seed=3)
    # no exceedance: the 99% interval excludes 0.05 only from 200 replicates on
    assert reject.stopped_early and reject.replicates_used == 200
    assert reject.p_value == pytest.approx(1 / 201) and reject.p_value_interval[1] < 0.05
    full = blrt(two_class_data, 2, replicates=60, restarts=2, seed=3, sequential=False)
    assert full.replicates_used == 60 and not full.stopped_early


def test_blrt_keeps_the_missingness_masks(monkeypatch):
    data = _sample(2, 5, 250, seed=21, missing=0.15)
    simulated = []
    original = bootstrap.unique_rows

    def spy(codes):
        simulated.append(np.array(codes))
        return original(codes)

    monkeypatch.setattr(bootstrap, "unique_rows", spy)
    result = blrt(data, 3, replicates=8, restarts=2, seed=0, keep=1, burn_in=5)
    assert len(simulated) == 8
    for codes in simulated:
        np.testing.assert_array_equal(codes < 0, data.codes < 0)
        assert not np.array_equal(codes, data.codes)
    assert result.replicates_used == 8 and np.all(np.isfinite(result.replicate_lr))
    assert 0 < result.p_value <= 1


@pytest.mark.slow  # a calibration study
def test_blrt_calibration_smoke():
    """Data from K-1 classes: p-values spread over (0, 1], few rejections (20 data sets)."""
    p = np.array([blrt(_sample(1, 4, 300, seed=500 + m), 2, replicates=19, restarts=2,
                       seed=m, fit_restarts=5).p_value for m in range(20)])
    assert np.mean(p < 0.05) <= 0.2
    assert 0.3 < p.mean() < 0.7


@pytest.mark.slow
@pytest.mark.parametrize(("k", "n_items", "n", "m"), [(2, 4, 300, 200), (3, 5, 400, 100)])
def test_blrt_calibration(k, n_items, n, m):
    """Rejection rate at alpha = 0.05 over ``m`` data sets from K-1 classes within three Monte
    Carlo standard errors of the level (B = 99: exactly 4/100 for an exact test)."""
    p = np.array([blrt(_sample(k - 1, n_items, n, seed=1000 + i), k, replicates=99,
                       restarts=4, seed=i, fit_restarts=10).p_value for i in range(m)])
    rate = np.mean(p < 0.05)
    assert abs(rate - 0.04) < 3 * math.sqrt(0.04 * 0.96 / m), rate
    assert 0.4 < p.mean() < 0.6


# ------------------------------------------------------------------ LMR
def _fits(data, k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return (lcb.em(lcb.latent_class(data, k - 1), data, restarts=10, seed=0),
                lcb.em(lcb.latent_class(data, k), data, restarts=20, seed=0))


def test_lmr_rejects_one_class_for_two_well_separated(two_class_data):
    result = lmr(*_fits(two_class_data, 2), two_class_data)
    assert result.p_value < 1e-6 and result.p_value_unadjusted < 1e-6
    assert result.df == 6 and result.n == 400
    assert result.lr_adjusted == pytest.approx(result.lr / (1 + 1 / (6 * math.log(400))))
    assert json.loads(json.dumps(result.to_dict()))["method"] == "lmr"
    assert "Lo-Mendell-Rubin test: 1 vs 2 classes" in result.summary()


@pytest.mark.slow  # a size study
def test_lmr_on_data_from_k_minus_1_classes():
    """Typically not small (LMR is known to be liberal, so the median over a few sets)."""
    results = [lmr(*_fits(d, 2), d) for d in (_sample(1, 4, 300, seed=s) for s in range(5))]
    assert np.median([r.p_value for r in results]) > 0.1
    for r in results:
        assert r.lr_adjusted <= r.lr
        assert r.p_value >= r.p_value_unadjusted - 1e-9
        assert r.weights[0] > 0


# ------------------------------------------------------------------ bad input
def test_bad_input_is_refused_with_a_message(null_data):
    with pytest.raises(ArgumentError, match="replicates must be an integer >= 1"):
        blrt(null_data, 2, replicates=0)
    with pytest.raises(ArgumentError, match="n_classes must be an integer >= 2"):
        blrt(null_data, 1)
    with pytest.raises(ArgumentError, match="alpha"):
        blrt(null_data, 2, alpha=1.5)
    f1, f2 = _fits(null_data, 2)
    with pytest.raises(ArgumentError, match="fits\\[0\\] has 1 class;"):
        blrt(null_data, 3, fits=(f1, f2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stuck = lcb.em(lcb.latent_class(null_data, 2), null_data, restarts=1, max_iter=1)
        mapped = lcb.em(lcb.latent_class(null_data, 2), null_data, prior="dirichlet")
    assert not stuck.converged
    with pytest.raises(ArgumentError, match="larger: EM did not converge"):
        lmr(f1, stuck, null_data)
    with pytest.raises(ArgumentError, match="MAP fit"):
        lmr(f1, mapped, null_data)
    with pytest.raises(ArgumentError, match="more classes"):
        lmr(f2, f1, null_data)
    with pytest.raises(ArgumentTypeError, match="must be an EM fit"):
        lmr("fit", f2, null_data)
    with pytest.raises(ArgumentError, match="rows"):
        lmr(f1, f2, _sample(1, 4, 100, seed=0))
