"""The Bayesian latent class regression (lcbayes/covariate_bayes/):
Bayes factors for "does the covariate matter?" on simulated data with and without an effect and
on the cheating data, the posterior against the ML fit, the bridge estimate against an exact
evidence (a sum over allocations and a quadrature over the coefficients), the label symmetry
the estimator relies on, seeds, JSON, bad input; distal outcomes and AIS cross-checks (slow)."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from numpyro.infer.util import potential_energy
from scipy.special import betaln, comb, logsumexp

import lcbayes as lcb
from lcbayes.covariate_bayes.model import (
    permutations,
    relabel,
    sum_to_zero_basis,
    to_raw,
    unconstrained_layout,
)
from lcbayes.covariate_bayes.problem import build_problem
from lcbayes.errors import ArgumentError, DataError
from tests.test_result_contract import assert_same

#: Light NUTS settings for the default suite.
QUICK = {"chains": 2, "draws": 400, "warmup": 300}
ITEMS = ["Q1", "Q2", "Q3", "Q4"]


def simulate(slope: float, *, n: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Two classes, four binary items, a covariate with values 1..4 (so that the data have at
    most 64 cells, like cheating: one compiled program); class 2's log odds ``-0.4 + slope (x -
    2.5)``."""
    rng = np.random.default_rng(seed)
    x = rng.integers(1, 5, n).astype(float)
    second = rng.random(n) < 1 / (1 + np.exp(0.4 - slope * (x - 2.5)))
    p_yes = np.where(second[:, None], [0.2, 0.3, 0.25, 0.2], [0.85, 0.8, 0.8, 0.75])
    y = (rng.random((n, 4)) < p_yes).astype(int)
    return pd.DataFrame({**{c: y[:, j] for j, c in enumerate(ITEMS)}, "x": x})


def _structure(frame: pd.DataFrame, items, k: int = 2) -> lcb.Structure:
    return lcb.latent_class(lcb.Dataset.from_pandas(frame[list(items)]), k)


@pytest.fixture(scope="module")
def simulated():
    """The evidence with no effect and with a moderate one (N = 1000 each)."""
    out = {}
    for slope in (0.0, 0.5):
        frame = simulate(slope, seed=1)
        out[slope] = frame, lcb.covariate_evidence(_structure(frame, ITEMS), frame,
                                                   covariates=["x"], seed=0, **QUICK)
    return out


@pytest.fixture(scope="module")
def cheating():
    frame = lcb.datasets.frame("cheating")
    structure = lcb.latent_class(lcb.datasets.load("cheating"), 2)
    with pytest.warns(UserWarning, match="4 of 319 rows lack a covariate"):
        result = lcb.covariate_evidence(structure, frame, covariates=frame[["GPA"]],
                                        sensitivity=(10.0,), seed=0, chains=4, draws=500,
                                        warmup=400)
    return result


@pytest.mark.slow  # CI time; run before closing
def test_no_effect_favours_the_nested_model_and_an_effect_the_full_one(simulated):
    _, none = simulated[0.0]
    _, moderate = simulated[0.5]
    for res in (none, moderate):
        assert res.test == "covariates" and res.n_tested == 1
        assert res.log_bayes_factor_stderr < 0.3
    assert none.log_bayes_factor < -1.0
    assert moderate.log_bayes_factor > 3.0
    assert moderate.posterior_probability > 0.95 > none.posterior_probability


@pytest.mark.slow  # CI time; run before closing
def test_posterior_mean_of_beta_is_near_the_ml_estimate(simulated):
    frame, res = simulated[0.5]
    fit = lcb.em(_structure(frame, ITEMS), frame[ITEMS], covariates=frame[["x"]], seed=0)
    post = res.posteriors[0]
    assert post.coef_mean.shape == fit.coef.shape == (2, 2)
    assert list(post.terms) == list(fit.covariates.names) == ["(Intercept)", "x"]
    assert np.all(np.abs(post.coef_mean - fit.coef)[:, 1] < 2 * post.coef_sd[:, 1])
    assert post.coef_mean[1, 1] == pytest.approx(0.5, abs=3 * post.coef_sd[1, 1])
    table = post.coefficients()
    assert list(table.term) == ["(Intercept)", "x"] and (table.r_hat < 1.05).all()
    idata = post.to_inference_data()
    assert idata.posterior["beta"].dims == ("chain", "draw", "term", "beta_class")
    assert idata.posterior["theta_Q1"].dims == ("chain", "draw", "class", "Q1_category")
    nested = res.posteriors[1]
    assert list(nested.terms) == ["(Intercept)"] and nested.coef_mean.shape == (1, 2)


@pytest.mark.slow  # CI time (the result contract covers the API); run before closing
def test_cheating_gpa_bayes_factor_has_an_error_bar_below_0_3(cheating):
    res = cheating
    assert res.log_bayes_factor_stderr < 0.3
    assert 4.5 < res.log_bayes_factor < 6.5      # 5.56 +/- 0.03 with 4 x 1000 draws
    assert res.posteriors[0].n_used_rows == 315
    assert (res.mode_overlap < 0.01).all()
    table = res.prior_sensitivity()
    assert list(table.prior_scale) == [2.5, 10.0]
    # Lindley: a four times wider prior costs about ln 4 (a little less: the prior is not yet
    # flat over the likelihood)
    drop = table.log_bayes_factor.iloc[0] - table.log_bayes_factor.iloc[1]
    assert 0.6 * math.log(4) < drop < 1.1 * math.log(4)
    text = res.summary()
    assert "ln B = " in text and "prior sensitivity" in text


@pytest.mark.slow  # CI time (the result contract covers the API); run before closing
def test_json_round_trip_is_lossless(cheating):
    text = json.dumps(cheating.to_dict(), allow_nan=False)
    again = lcb.CovariateEvidenceResult.from_dict(json.loads(text))
    assert_same(cheating, again)
    assert json.dumps(again.to_dict(), allow_nan=False) == text
    post = again.posteriors[0]
    assert_same(post, lcb.CovariatePosteriorResult.from_dict(json.loads(json.dumps(
        post.to_dict(), allow_nan=False))))
    assert len(cheating.to_frame()) == 2 and len(post.to_frame()) == 2
    assert "GPA" in post.summary()


@pytest.mark.slow  # CI time (the result contract covers the API); run before closing
def test_covariate_posterior_alone(cheating):
    """The posterior function on its own (the same compiled program as the fixture's), and
    its diagnostics through ArviZ."""
    frame = lcb.datasets.frame("cheating")
    structure = lcb.latent_class(lcb.datasets.load("cheating"), 2)
    with pytest.warns(UserWarning, match="4 of 319 rows"):
        post = lcb.covariate_posterior(structure, frame, covariates=["GPA"], seed=1,
                                       chains=4, draws=500, warmup=400)
    assert post.drop is None and post.n_used_rows == 315
    assert post.coef_mean[1, 1] == pytest.approx(cheating.posteriors[0].coef_mean[1, 1],
                                                 abs=0.1)
    table = post.diagnostics()
    assert {"r_hat", "ess_bulk"} <= set(table.columns) and post.max_rhat < 1.05
    shares = post.to_inference_data().posterior["class_shares"].values
    np.testing.assert_allclose(shares.sum(axis=-1), 1.0)


# ---------------------------------------------------------------------- the exact evidence
def tiny(seed: int = 3, n: int = 24) -> pd.DataFrame:
    """Two classes, three binary items, a binary covariate (half the rows each)."""
    rng = np.random.default_rng(seed)
    x = np.repeat([0.0, 1.0], n // 2)
    second = rng.random(n) < 1 / (1 + np.exp(0.5 - 1.5 * x))
    p_yes = np.where(second[:, None], [0.2, 0.25, 0.15], [0.85, 0.8, 0.75])
    y = (rng.random((n, 3)) < p_yes).astype(int)
    return pd.DataFrame({"A": y[:, 0], "B": y[:, 1], "C": y[:, 2], "x": x})


def exact_log_evidence(frame: pd.DataFrame, scale: float, *, step: float = 0.1,
                       width: float = 12.0) -> tuple[float, float]:
    """``ln p(y | x)`` of the tiny model exactly, with and without the covariate: the sum over
    all allocations of the rows to the two classes, as a dynamic programme over the cells
    (class 2's rows per covariate value and its ones per item: the Beta(1, 1) tables integrate
    in closed form), then a quadrature (a grid over +-``width``; halving ``step = 0.1`` moves
    the result by 1e-8) over the standardised intercept and slope of class 2, each N(0,
    scale^2) (the nested model: the intercept alone)."""
    y, x = frame[["A", "B", "C"]].to_numpy(), frame["x"].to_numpy()
    n, ones = len(x), y.sum(axis=0)
    nx = [int((x == 0).sum()), int((x == 1).sum())]
    keys, counts = np.unique(np.c_[y, x], axis=0, return_counts=True)
    w = np.zeros((nx[0] + 1, nx[1] + 1, n + 1, n + 1, n + 1))
    w[0, 0, 0, 0, 0] = 1.0
    for key, nc in zip(keys, counts, strict=True):
        new = np.zeros_like(w)
        for m in range(nc + 1):
            shifts = [m * (key[3] == 0), m * (key[3] == 1), *(m * key[:3])]
            src = tuple(slice(0, w.shape[a] - int(s)) for a, s in enumerate(shifts))
            dst = tuple(slice(int(s), w.shape[a]) for a, s in enumerate(shifts))
            new[dst] += comb(nc, m) * w[src]
        w = new
    a = np.arange(n + 1)
    log_h = np.full((nx[0] + 1, nx[1] + 1), -np.inf)
    for t0 in range(nx[0] + 1):
        for t1 in range(nx[1] + 1):
            t = t0 + t1
            log_g = 0.0
            for j in range(3):
                aj = a.reshape([-1 if i == j else 1 for i in range(3)])
                with np.errstate(invalid="ignore"):
                    term = betaln(1 + aj, 1 + t - aj) + betaln(1 + ones[j] - aj,
                                                               1 + n - t - ones[j] + aj)
                log_g = log_g + np.where(np.isfinite(term), term, -np.inf)
            with np.errstate(divide="ignore"):
                log_h[t0, t1] = logsumexp(np.log(w[t0, t1]) + log_g)
    z = (np.array([0.0, 1.0]) - x.mean()) / x.std()
    grid = np.arange(-width, width + step / 2, step)
    t0, t1 = np.arange(nx[0] + 1)[:, None], np.arange(nx[1] + 1)[None, :]
    out = []
    for slope in (True, False):
        b0, b1 = (g.ravel() for g in np.meshgrid(grid, grid if slope else [0.0],
                                                 indexing="ij"))
        eta = b0[:, None] + b1[:, None] * z[None, :]
        log_s, log_f = -np.logaddexp(0, -eta), -np.logaddexp(0, eta)
        f = (log_h[None] + t0 * log_s[:, 0, None, None] + (nx[0] - t0) * log_f[:, 0, None, None]
             + t1 * log_s[:, 1, None, None] + (nx[1] - t1) * log_f[:, 1, None, None])
        dims = 2 if slope else 1
        prior = (-0.5 * (b0 ** 2 + b1 ** 2) / scale ** 2 - dims * math.log(scale)
                 - 0.5 * dims * math.log(2 * math.pi))
        out.append(float(logsumexp(logsumexp(f.reshape(len(b0), -1), axis=1) + prior)
                         + dims * math.log(step)))
    return out[0], out[1]


@pytest.fixture(scope="module")
def tiny_runs():
    frame = tiny()
    structure = _structure(frame, "ABC")
    return frame, [lcb.covariate_evidence(structure, frame, covariates=["x"], seed=seed,
                                          chains=4, draws=500, warmup=300)
                   for seed in (0, 0)]


@pytest.mark.slow  # CI time; run before closing
def test_bridge_equals_the_exact_evidence_within_its_error_bar(tiny_runs):
    frame, (res, _) = tiny_runs
    exact = exact_log_evidence(frame, 2.5)
    for estimate, se, truth in zip(res.log_evidence, res.stderr, exact, strict=True):
        assert 0.005 < se < 0.15
        assert abs(estimate - truth) < 3 * se
    # N = 24: the labels are barely identified, the chains visit both modes, and the
    # symmetrised proposal still gives the right evidence
    assert res.posteriors[0].relabelled > 0


@pytest.mark.slow  # CI time; run before closing
def test_the_same_seed_gives_the_same_numbers(tiny_runs):
    _, (first, second) = tiny_runs
    np.testing.assert_array_equal(first.log_evidence, second.log_evidence)
    np.testing.assert_array_equal(first.posteriors[0].idata.posterior["beta"].values,
                                  second.posteriors[0].idata.posterior["beta"].values)


# ---------------------------------------------------------------------- invariants
def test_relabelling_leaves_the_posterior_density_unchanged(k=3):
    """The exchangeable priors make every relabelling of the classes (a linear map of the
    unconstrained parameters) leave the log density unchanged, for the full model and the
    one with the outcome independent of class."""
    frame = simulate(0.5, n=200, seed=2)
    frame["Z"] = np.where(frame.x > 2, "hi", "lo")
    structure = _structure(frame, ITEMS, k)
    spec = build_problem(structure, frame, covariates=["x"], distal="Z",
                         distal_type="auto").spec
    layout = unconstrained_layout(spec)
    u = np.random.default_rng(0).normal(size=(1, sum(math.prod(s) for _, _, s in layout)))
    for drop in (None, "distal"):
        model, data = lcb.covariate_model(structure, frame, covariates=["x"], distal="Z",
                                          drop=drop)

        def energy(point, model=model, data=data):
            return float(potential_energy(model, (data,), {}, {
                name: point[0, o:o + math.prod(shape)].reshape(shape)
                for name, o, shape in layout}))

        base = energy(u)
        for perm in permutations(k)[1:]:
            assert energy(relabel(spec, u, perm, drop == "distal")) == pytest.approx(
                base, rel=1e-12, abs=1e-9)


def test_sum_to_zero_basis_and_the_map_back_to_raw_covariates():
    for k in (2, 3, 5):
        q = sum_to_zero_basis(k)
        np.testing.assert_allclose(q.T @ q, np.eye(k - 1), atol=1e-12)
        np.testing.assert_allclose(q.sum(axis=0), 0.0, atol=1e-12)
    rng = np.random.default_rng(0)
    x = rng.normal(3.0, 2.0, size=(50, 2))
    centre, scale = np.r_[0.0, x.mean(axis=0)], np.r_[1.0, x.std(axis=0)]
    std = rng.normal(size=(3, 2))
    raw = to_raw(std, centre, scale)
    design = np.c_[np.ones(50), x]
    np.testing.assert_allclose(design @ raw, ((design - centre) / scale) @ std, atol=1e-10)


def test_bad_input_names_the_argument():
    frame = simulate(0.5, n=100)
    structure = _structure(frame, ITEMS)
    with pytest.raises(ArgumentError, match="give covariates"):
        lcb.covariate_evidence(structure, frame)
    with pytest.raises(ArgumentError, match="test"):
        lcb.covariate_evidence(structure, frame, covariates=["x"], test="items")
    with pytest.raises(ArgumentError, match="distal"):
        lcb.covariate_evidence(structure, frame, covariates=["x"], test="distal")
    with pytest.raises(ArgumentError, match="2 to 6 classes"):
        lcb.covariate_posterior(_structure(frame, ITEMS, 1), frame, covariates=["x"])
    with pytest.raises(DataError, match="also an indicator"):
        lcb.covariate_evidence(structure, frame, covariates=["x"], distal="Q1")
    with pytest.raises(ArgumentError, match="prior_scale"):
        lcb.covariate_evidence(structure, frame, covariates=["x"], prior_scale=0.0)
    with pytest.raises(DataError, match="not columns"):
        lcb.covariate_posterior(structure, frame, covariates=["nope"])


# ---------------------------------------------------------------------- slow
def _distal_frame(differs: bool, kind: str, seed: int = 4) -> pd.DataFrame:
    frame = simulate(0.0, n=600, seed=seed)
    rng = np.random.default_rng(seed + 100)
    # the class is recovered from the items well enough to see a class-dependent outcome
    second = (frame[ITEMS].sum(axis=1) <= 1).to_numpy()
    shift = second if differs else np.zeros(len(frame), dtype=bool)
    if kind == "continuous":
        frame["Y"] = rng.normal(10.0 + 1.5 * shift, 2.0)
    else:
        frame["Y"] = np.where(rng.random(len(frame)) < np.where(shift, 0.7, 0.3), "yes", "no")
    frame.loc[::25, "Y"] = np.nan
    return frame


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["categorical", "continuous"])
def test_distal_outcome_differs_by_class_only_when_it_does(kind):
    for differs in (True, False):
        frame = _distal_frame(differs, kind)
        res = lcb.covariate_evidence(_structure(frame, ITEMS), frame, distal="Y", seed=0)
        assert res.test == "distal" and res.log_bayes_factor_stderr < 0.3
        assert (res.log_bayes_factor > 3.0) if differs else (res.log_bayes_factor < -1.0)
        means = res.posteriors[0].idata.posterior
        assert ("distal_mean" if kind == "continuous" else "distal_probs") in means


@pytest.mark.slow
def test_bridge_agrees_with_ais_numpyro_on_the_same_model():
    frame = lcb.datasets.frame("cheating")
    structure = lcb.latent_class(lcb.datasets.load("cheating"), 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = lcb.covariate_evidence(structure, frame, covariates=["GPA"], seed=1)
        for i, drop in enumerate((None, "covariates")):
            model, data = lcb.covariate_model(structure, frame, covariates=["GPA"],
                                              drop=drop)
            ais = lcb.ais_numpyro(model, data, chains=32, temperatures=2000, seed=0)
            se = math.hypot(ais.stderr, res.stderr[i])
            assert abs(ais.log_evidence - res.log_evidence[i]) < 3 * se + 0.05
