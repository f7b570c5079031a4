"""Reversible-jump MCMC over K: the sampled K follows its prior when there are no data, and its
posterior matches the one implied by exact evidences; move bookkeeping and the InferenceData
contract.

Both data sets have items of 2, 3 and 4 categories and fit the smallest padded data shape
(:func:`lcbayes.gibbs.lc_data`), and every run keeps ``DRAWS`` draws of 4 chains, so the sampler
compiles once.
"""

from __future__ import annotations

import functools
import json
import warnings

import arviz as az
import jax
import numpy as np
import pytest
from numpyro.infer.util import log_density
from scipy import stats
from scipy.special import logsumexp

import lcbayes as lcb
from lcbayes.samplers.results import KMixingWarning
from lcbayes.samplers.rjmcmc import MOVES, posterior_k, rjmcmc

MAX_CLASSES, DRAWS = 4, 1500
PRIOR_THIN, SMALL_THIN = 2, 4
CARDINALITIES = (2, 3, 4)


def _no_data() -> lcb.Dataset:
    """Four rows with nothing observed: the posterior is the prior, so every acceptance ratio
    is priors, proposals and Jacobians only."""
    return lcb.Dataset(codes=np.full((4, 3), -1), columns=("X1", "X2", "X3"),
                       labels=tuple(tuple(range(c)) for c in CARDINALITIES))


@functools.cache
def _small() -> lcb.Dataset:
    """12 rows from two classes with opposite profiles, one missing value."""
    rng = np.random.default_rng(0)
    minority = rng.random(12) < 0.4
    profiles = [np.array([[0.9, 0.1], [0.1, 0.9]]),
                np.array([[0.8, 0.1, 0.1], [0.1, 0.1, 0.8]]),
                np.array([[0.7, 0.1, 0.1, 0.1], [0.1, 0.1, 0.1, 0.7]])]
    codes = np.stack([[rng.choice(p.shape[1], p=p[int(m)]) for m in minority]
                      for p in profiles], axis=1)
    codes[2, 1] = -1
    return lcb.Dataset.from_codes(codes, cardinalities=CARDINALITIES)


# The targets below are the posteriors truncated at MAX_CLASSES, so the warning that the
# posterior reaches the bound is expected (tests/test_rjmcmc_output.py tests it).
@functools.cache
def _prior_run(prior_k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", KMixingWarning)
        return rjmcmc(_no_data(), max_classes=MAX_CLASSES, draws=DRAWS, warmup=100, chains=4,
                      thin=PRIOR_THIN, seed=0, prior_k=prior_k)


@functools.cache
def _small_run():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", KMixingWarning)
        return rjmcmc(_small(), max_classes=MAX_CLASSES, draws=DRAWS, warmup=200, chains=4,
                      thin=SMALL_THIN, seed=0)


def _exact_posterior_k(data, p_k) -> np.ndarray:
    log_ev = np.array([lcb.exact_evidence(lcb.latent_class(data, k), data).log_evidence
                       for k in range(1, len(p_k) + 1)])
    log_post = np.log(p_k) + log_ev
    return np.exp(log_post - logsumexp(log_post))


_POISSON = 1.0 / np.array([1.0, 2.0, 6.0, 24.0])


@pytest.mark.parametrize(("prior_k", "expected"), [
    ("uniform", np.full(4, 0.25)),
    ((0.1, 0.2, 0.3, 0.4), np.array([0.1, 0.2, 0.3, 0.4])),
    ("poisson", _POISSON / _POISSON.sum()),
])
def test_k_follows_its_prior_without_data(prior_k, expected):
    """A chi-square test of the sampled K against p(K), on every 10th sweep (nearly
    independent); p = 0.04-0.99 over six seeds. The items have 2, 3 and 4 categories, so the
    split's Jacobian has one ``theta* / (u1 (1 - u1))`` per free category; one per item
    instead gives p ~ 1e-93. (Every class is empty here, so the birth factor (K+1)/(K0+1) is 1:
    the exact-evidence test checks it.)"""
    idata = _prior_run(prior_k)
    np.testing.assert_allclose(list(json.loads(idata.posterior.attrs["prior_k_json"]).values()),
                               expected)
    k = idata.posterior["k"].values[:, ::5].ravel()
    observed = np.bincount(k, minlength=MAX_CLASSES + 1)[1:]
    assert stats.chisquare(observed, expected * k.size).pvalue > 1e-3
    shares = np.array(list(posterior_k(idata).values()))
    assert np.abs(shares - expected).max() < 0.04


def test_same_seed_same_draws_and_equivalent_priors_on_k():
    """``"uniform"`` and the constant function are the same p(K): same seed, same draws."""
    first, again = _prior_run("uniform"), _prior_run(lambda k: 1.0)
    assert json.loads(again.posterior.attrs["prior_k_json"]) == \
        json.loads(first.posterior.attrs["prior_k_json"])
    np.testing.assert_array_equal(first.posterior["k"], again.posterior["k"])
    np.testing.assert_array_equal(first.posterior["class_weights"],
                                  again.posterior["class_weights"])


def test_posterior_of_k_matches_exact_evidences():
    """p(K | y) ∝ p(K) p(y | K) with p(y | K) from exact_evidence (labelled classes,
    Dirichlet(1) priors: the sampler's target). Total variation 0.003-0.013 over six seeds;
    without R&G's (K+1)/(K0+1) birth factor it is 0.24, without p* in the split Jacobian 0.07,
    with Whiley's one ``theta* / (u1 (1 - u1))`` per item instead of per free category 0.72."""
    data = _small()
    exact = _exact_posterior_k(data, np.full(MAX_CLASSES, 1.0 / MAX_CLASSES))
    sampled = np.array(list(posterior_k(_small_run()).values()))
    assert 0.5 * np.abs(sampled - exact).sum() < 0.04
    assert exact[0] < 0.05 and exact.max() < 0.5  # K = 1 unlikely, K = 2..4 all plausible


def test_acceptance_rates_are_accepted_over_proposed_counts():
    idata = _small_run().to_inference_data()
    proposed = idata.sample_stats["proposed"].values
    accepted = idata.sample_stats["accepted"].values
    assert list(idata.sample_stats["move"].values) == list(MOVES)
    assert np.all((0 <= accepted) & (accepted <= proposed))
    # every sweep proposes one of split / merge and one of birth / death
    per_draw = proposed.sum(axis=-1)
    assert np.all(per_draw[:, 0] == 2 * (200 + SMALL_THIN))
    assert np.all(per_draw[:, 1:] == 2 * SMALL_THIN)
    rates = json.loads(idata.posterior.attrs["acceptance_json"])
    for i, move in enumerate(MOVES):
        assert rates[move] == pytest.approx(accepted[..., i].sum() / proposed[..., i].sum())
        assert 0.01 < rates[move] < 1.0
    # a proposal is accepted in both directions: K changes exactly by the accepted moves
    k = idata.posterior["k"].values
    ups = accepted[..., 0] + accepted[..., 2] - accepted[..., 1] - accepted[..., 3]
    np.testing.assert_array_equal(np.diff(k, axis=1), ups[:, 1:])


def test_inference_data_contract_and_log_joint():
    """Active classes fill the first k slots, the rest are NaN; log_joint is the NumPyro log
    density of the k-class model plus ln p(K)."""
    data = _small()
    idata = _small_run().to_inference_data()
    post = idata.posterior
    k = post["k"].values
    assert post["k"].dims == ("chain", "draw") and set(np.unique(k)) <= {1, 2, 3, 4}
    assert post["class_weights"].dims == ("chain", "draw", "class")
    assert list(post["class"].values) == list(range(1, MAX_CLASSES + 1))  # numbered from 1
    weights = post["class_weights"].values
    active = np.arange(MAX_CLASSES) < k[..., None]
    assert np.all(np.isnan(weights) == ~active)
    np.testing.assert_allclose(np.nansum(weights, axis=-1), 1.0, rtol=1e-10)
    assert np.all(np.isnan(post["theta_X3"].values) == ~active[..., None])
    assert post["theta_X3"].dims == ("chain", "draw", "class", "X3_category")
    assert list(post["X3_category"].values) == ["0", "1", "2", "3"]
    attrs = dict(post.attrs)
    json.dumps(attrs)
    assert attrs["engine"] == "rjmcmc" and attrs["max_classes"] == MAX_CLASSES
    assert {int(a): b for a, b in json.loads(attrs["posterior_k_json"]).items()} == \
        posterior_k(idata)
    for n in (2, 4):
        chain, draw = np.argwhere(k == n)[-1]
        sel = post.isel(chain=chain, draw=draw, **{"class": slice(0, n)})
        params = {"class": sel["class_weights"].values}
        params.update({c: sel[f"theta_{c}"].values for c in data.columns})
        model = lcb.numpyro_model(lcb.latent_class(data, n))
        value = jax.jit(lambda p, model=model: log_density(model, (data,), {}, p)[0])(params)
        stats_ = idata.sample_stats.isel(chain=chain, draw=draw)
        assert float(stats_["log_joint"]) == pytest.approx(float(value) + np.log(0.25),
                                                           rel=1e-10)


def test_bad_arguments_raise_clear_errors():
    data = _small()
    for kwargs, message in (({"max_classes": 1}, "max_classes must be an integer >= 2"),
                            ({"draws": 0}, "draws must be an integer >= 1"),
                            ({"chains": 0}, "chains must be an integer >= 1"),
                            ({"prior_k": "flat"}, "prior_k must be 'uniform', 'poisson'"),
                            ({"prior_k": [1, 2]}, "one probability per K = 1..10"),
                            ({"prior_k": [-1] * 10}, "finite, >= 0"),
                            ({"prior": None}, "needs a proper Dirichlet prior")):
        with pytest.raises(lcb.LcbayesError, match=message):
            rjmcmc(data, **kwargs)
    with pytest.raises(lcb.LcbayesError, match="Dataset"):
        rjmcmc("data.csv")
    with pytest.raises(lcb.LcbayesError, match="'k' variable"):
        posterior_k(az.from_dict(posterior={"class_weights": np.ones((1, 2, 3))}))
