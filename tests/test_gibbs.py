"""Gibbs sampler: the InferenceData contract, reproducibility, and agreement with independent
truths — the NumPyro model's log density, exact posterior predictive probabilities from
:func:`lcbayes.exact_evidence`, and NUTS on the NumPyro model.

Every run shares one data shape, ``DRAWS`` and ``CHAINS``, so the sampler compiles once.
"""

from __future__ import annotations

import functools
import json
import warnings

import arviz as az
import jax
import numpy as np
import pytest
from numpyro.infer import MCMC, NUTS
from numpyro.infer.util import log_density

import lcbayes as lcb
from lcbayes.samplers.gibbs import gibbs

DRAWS, WARMUP, CHAINS = 2000, 300, 4
COLUMNS = ("A", "B", "C", "D")
LABELS = ("no", "yes")


def _codes(extra_missing_rows: int = 0) -> np.ndarray:
    """30 rows from two well-separated classes (shares .3 / .7), three missing entries, one
    row with nothing observed (plus ``extra_missing_rows`` more)."""
    rng = np.random.default_rng(1)
    n = 30
    minority = rng.random(n) < 0.3
    codes = (rng.random((n, 4)) < np.where(minority[:, None], 0.85, 0.15)).astype(int)
    codes.flat[rng.choice(codes.size, 3, replace=False)] = -1
    codes[0] = -1
    return np.concatenate([codes, np.full((extra_missing_rows, 4), -1)])


def _dataset(codes) -> lcb.Dataset:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # rows with no observed value are reported
        return lcb.Dataset.from_codes(codes, columns=COLUMNS, labels=[LABELS] * 4)


@functools.cache
def _problem():
    data = _dataset(_codes())
    return lcb.latent_class(data, 2), data


@functools.cache
def _run(seed: int = 0, extra_missing_rows: int = 0):
    structure, data = _problem()
    if extra_missing_rows:
        data = _dataset(_codes(extra_missing_rows))
    return gibbs(structure, data, draws=DRAWS, warmup=WARMUP, chains=CHAINS,
                 seed=seed).to_inference_data()


def _params(idata, chain: int, draw: int) -> dict[str, np.ndarray]:
    post = idata.posterior.isel(chain=chain, draw=draw)
    params = {"class": post["class_weights"].values}
    params.update({c: post[f"theta_{c}"].values for c in COLUMNS})
    return params


def _flat(idata) -> tuple[np.ndarray, np.ndarray]:
    """``(C, D, K)`` weights and ``(C, D, K, J)`` P(item = yes | class)."""
    post = idata.posterior
    theta = np.stack([post[f"theta_{c}"].sel({f"{c}_category": "yes"}).values
                      for c in COLUMNS], axis=-1)
    return post["class_weights"].values, theta


def _sorted_by_weight(weights: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """``(..., 2 + 2 J)``: both classes' weights and item probabilities, the larger class
    first. A function of the unordered set of classes, so immune to label switching."""
    order = np.argsort(-weights, axis=-1)
    w = np.take_along_axis(weights, order, axis=-1)
    t = np.take_along_axis(theta, order[..., None], axis=-2)
    return np.concatenate([w, t.reshape(*t.shape[:-2], -1)], axis=-1)


def _predictive(weights: np.ndarray, theta: np.ndarray, pattern) -> np.ndarray:
    """``p(y* | pi, theta) = sum_k pi_k prod_{j observed} theta_jk[y*_j]`` per draw."""
    factor = np.ones_like(weights)
    for j, value in enumerate(pattern):
        if value >= 0:
            factor = factor * (theta[..., j] if value == 1 else 1.0 - theta[..., j])
    return (weights * factor).sum(-1)


def _mc_stderr(draws: np.ndarray) -> float:
    """Monte Carlo standard error of the mean of ``(C, D)`` draws (ArviZ bulk ESS)."""
    return float(np.std(draws) / np.sqrt(float(az.ess(draws))))


def test_inference_data_has_the_documented_groups_dims_and_coords():
    data = _problem()[1]
    idata = _run()
    post = idata.posterior
    assert post["class_weights"].dims == ("chain", "draw", "class")
    assert post["class_weights"].shape == (CHAINS, DRAWS, 2)
    assert list(post["class"].values) == [1, 2]  # classes numbered from 1
    for c in COLUMNS:
        assert post[f"theta_{c}"].dims == ("chain", "draw", "class", f"{c}_category")
        assert list(post[f"{c}_category"].values) == list(LABELS)
        np.testing.assert_allclose(post[f"theta_{c}"].sum(f"{c}_category"), 1.0, rtol=1e-12)
    np.testing.assert_allclose(post["class_weights"].sum("class"), 1.0, rtol=1e-12)
    for name in ("log_likelihood", "log_joint"):
        assert idata.sample_stats[name].dims == ("chain", "draw")
        assert np.all(np.isfinite(idata.sample_stats[name]))
    y = idata.observed_data["y"]
    assert y.dims == ("row", "item") and list(y["item"].values) == list(COLUMNS)
    np.testing.assert_array_equal(y.values, data.codes)
    attrs = dict(post.attrs)
    json.dumps(attrs)
    assert attrs["engine"] == "gibbs" and attrs["seed"] == 0 and attrs["chains"] == CHAINS
    assert attrs["draws"] == DRAWS and attrs["warmup"] == WARMUP and attrs["seconds"] > 0
    assert json.loads(attrs["labels_json"]) == {c: list(LABELS) for c in COLUMNS}


def test_same_seed_same_draws_other_seed_other_draws():
    first, again, other = _run(0), gibbs(*_problem(), draws=DRAWS, warmup=WARMUP,
                                         chains=CHAINS, seed=0), _run(1)
    for name in ("class_weights", "theta_A"):
        np.testing.assert_array_equal(first.posterior[name], again.posterior[name])
        assert not np.allclose(first.posterior[name], other.posterior[name])


def test_rows_with_nothing_observed_change_nothing():
    base, padded = _run(), _run(extra_missing_rows=5)
    assert padded.observed_data["y"].shape[0] == base.observed_data["y"].shape[0] + 5
    for name in ("class_weights", "theta_C"):
        np.testing.assert_allclose(padded.posterior[name], base.posterior[name], rtol=1e-10)
    np.testing.assert_allclose(padded.sample_stats["log_likelihood"],
                               base.sample_stats["log_likelihood"], rtol=1e-10)


def test_log_joint_is_the_numpyro_log_density_and_log_likelihood_the_inference_core():
    structure, data = _problem()
    idata = _run()
    model = lcb.numpyro_model(structure)
    density = jax.jit(lambda params: log_density(model, (data,), {}, params)[0])
    for chain, draw in ((0, 0), (3, DRAWS - 1)):
        params = _params(idata, chain, draw)
        stats = idata.sample_stats.isel(chain=chain, draw=draw)
        assert float(stats["log_joint"]) == pytest.approx(float(density(params)), rel=1e-10)
        assert float(stats["log_likelihood"]) == pytest.approx(
            lcb.log_likelihood(structure, params, data), rel=1e-10)


@pytest.mark.parametrize("pattern", [(1, 1, 1, 1), (0, 0, 0, 0), (1, 0, -1, 1), (-1, -1, 0, 1)])
def test_posterior_predictive_matches_exact_evidence_ratios(pattern):
    """``E[p(y* | theta) | y] = p(y, y*) / p(y)``, both sides of the ratio exact evidences of
    data with missing values (so the sampler must sum missing values out to agree)."""
    structure, data = _problem()
    extended = _dataset(np.concatenate([_codes(), np.asarray([pattern])]))
    exact = np.exp(lcb.exact_evidence(structure, extended).log_evidence
                   - lcb.exact_evidence(structure, data).log_evidence)
    draws = _predictive(*_flat(_run()), pattern)
    stderr = _mc_stderr(draws)
    assert abs(draws.mean() - exact) < 4 * stderr
    assert abs(draws.mean() - exact) < 0.02 * exact + 1e-3


def _stderrs(draws: np.ndarray) -> tuple[float, float]:
    """Monte Carlo standard errors of the mean and of the sd of ``(C, D)`` draws: ``s / sqrt(n)``
    and ``s sqrt((kurtosis - 1) / (4 n))`` with ``n`` the ArviZ bulk ESS (the parameters
    near 0 or 1 are skewed and heavy-tailed, so the normal ``s / sqrt(2 n)`` is too small)."""
    n = float(az.ess(draws))
    s = draws.std()
    kurtosis = np.mean((draws - draws.mean()) ** 4) / s**4
    return s / np.sqrt(n), s * np.sqrt((kurtosis - 1.0) / (4.0 * n))


@pytest.mark.slow  # NUTS on the NumPyro model: an experiment, 20 s
def test_posterior_agrees_with_nuts_on_the_numpyro_model():
    """Means and sds of both classes' parameters (larger class first) under Gibbs and NUTS."""
    structure, data = _problem()
    mcmc = MCMC(NUTS(lcb.numpyro_model(structure)), num_warmup=500, num_samples=3000,
                progress_bar=False)
    mcmc.run(jax.random.PRNGKey(0), data)
    samples = mcmc.get_samples()
    nuts = _sorted_by_weight(np.asarray(samples["class"]),
                             np.stack([np.asarray(samples[c])[..., 1] for c in COLUMNS], -1))
    ours = _sorted_by_weight(*_flat(_run()))
    for q in range(ours.shape[-1]):
        a, b = ours[..., q], nuts[None, :, q]
        (mean_a, sd_a), (mean_b, sd_b) = _stderrs(a), _stderrs(b)
        assert abs(a.mean() - b.mean()) < 4 * np.hypot(mean_a, mean_b), q
        assert abs(a.std() - b.std()) < 4 * np.hypot(sd_a, sd_b), q


def test_bad_arguments_raise_clear_errors():
    structure, data = _problem()
    huge = lcb.dag(data, {c: ["s1", "s2", "s3"] for c in data.columns},
                   {"s1": 20, "s2": 20, "s3": 20})
    with pytest.raises(lcb.ArgumentError, match="8000 joint states"):
        gibbs(huge, data)
    for kwargs, message in (({"draws": 0}, "draws must be an integer >= 1"),
                            ({"warmup": -1}, "warmup must be an integer >= 0"),
                            ({"chains": 1.5}, "chains must be an integer >= 1"),
                            ({"thin": 0}, "thin must be an integer >= 1"),
                            ({"seed": "x"}, "seed must be a non-negative integer"),
                            ({"prior": None}, "needs a proper Dirichlet prior"),
                            ({"prior": "flat"}, "prior must be None, 'dirichlet'")):
        with pytest.raises(lcb.LcbayesError, match=message):
            gibbs(structure, data, **kwargs)
    with pytest.raises(lcb.LcbayesError, match="lack column"):
        gibbs(structure, data.select(["A", "B"]))
