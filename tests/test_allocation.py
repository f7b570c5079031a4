"""The collapsed allocation sampler: K follows its prior without data (or with the likelihood
off), the posterior of K equals the exact one (enumerated allocations, exact evidences), the
collapsed likelihood is the evidence of one class, the result contract and the command line;
slow: agreement with reversible jump on carcinoma and on a simulated 4-class set."""

from __future__ import annotations

import functools
import itertools
import json
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.special import gammaln, logsumexp

import lcbayes as lcb
from lcbayes.cli import main
from lcbayes.samplers.allocation import (
    JUMPS,
    allocation_prior,
    allocation_sampler,
    heat_ladder,
    run_chains,
)
from lcbayes.samplers.allocation_moves import (
    AllocPrior,
    alloc_data,
    collapsed_loglik,
    initial_state,
    target_tables,
)
from lcbayes.samplers.gibbs import LCData, lc_data
from lcbayes.samplers.kmixing import KMixingWarning
from lcbayes.samplers.rjmcmc import posterior_k, rjmcmc
from lcbayes.validation import prng_key

from .test_rjmcmc import _exact_posterior_k, _no_data, _small

MAX_CLASSES = 4
#: The default-suite runs on rjmcmc's small sets share compiled programs: same shapes (3 items
#: of 2-4 categories, padded rows and patterns), classes, heats, chains and draws.
SHARED = {"max_classes": MAX_CLASSES, "draws": 2500, "warmup": 100, "chains": 4, "heats": 2}
TINY = {"max_classes": 3, "draws": 200, "warmup": 20, "chains": 2, "heats": 2}


def _quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", KMixingWarning)
        return function(*args, **kwargs)


def _chi_square_p(k: np.ndarray, expected: np.ndarray) -> float:
    observed = np.bincount(k, minlength=expected.size + 1)[1:]
    return stats.chisquare(observed, expected * k.size).pvalue


_POISSON = 1.0 / np.array([1.0, 2.0, 6.0, 24.0])


@pytest.mark.parametrize(("prior_k", "expected"), [
    ("uniform", np.full(4, 0.25)),
    ((0.1, 0.2, 0.3, 0.4), np.array([0.1, 0.2, 0.3, 0.4])),
    ("poisson", _POISSON / _POISSON.sum()),
])
def test_k_follows_its_prior_without_data(prior_k, expected):
    """No row observed: every class is empty, so ejections add empty classes with the summed
    proposal probability and absorptions remove them; chi-square on every 5th draw."""
    res = _quiet(allocation_sampler, _no_data(), prior_k=prior_k, seed=0, **SHARED)
    assert _chi_square_p(res.posterior["k"].values[:, ::5].ravel(), expected) > 1e-3
    assert np.abs(np.array(list(res.posterior_k.values())) - expected).max() < 0.03


def test_k_follows_its_prior_with_the_likelihood_off():
    """Heat 0 on real rows: the target is p(K) p(z | K), whose marginal is p(K), so every
    ejection and absorption ratio (with non-empty classes) is tested without the data."""
    data = _small()
    lc = lc_data(data)
    prior = allocation_prior(data, lc, "class", "dirichlet", np.full(MAX_CLASSES, 0.25))
    out = run_chains(SHARED["draws"], JUMPS, LCData(*map(jnp.asarray, lc)), prior,
                     jnp.zeros(SHARED["heats"]), jax.random.split(prng_key(1), 4),
                     jnp.array([1, 2, 3, 4], dtype=jnp.int32), SHARED["warmup"], 1)
    k = np.asarray(out[0])
    assert _chi_square_p(k[:, ::5].ravel(), np.full(4, 0.25)) > 1e-3
    assert np.asarray(out[7])[..., :2].sum() > 500  # dimension moves accepted


def _enumerated_posterior_k(data: lcb.Dataset, max_classes: int) -> np.ndarray:
    """p(K | y) by summing p(z | K) p(y | z, K) over every labelled allocation z of the rows
    to K classes (empty classes included), Dirichlet(1) priors, uniform p(K)."""
    codes = np.asarray(data.codes)
    cards = np.asarray(data.cardinalities)
    log_post = []
    for k in range(1, max_classes + 1):
        terms = []
        for z in itertools.product(range(k), repeat=codes.shape[0]):
            z = np.asarray(z)
            sizes = np.bincount(z, minlength=k)
            term = gammaln(k) - gammaln(k + z.size) + gammaln(1 + sizes).sum()
            for c in range(k):
                for j, r in enumerate(cards):
                    values = codes[z == c, j]
                    counts = np.bincount(values[values >= 0], minlength=r)
                    term += gammaln(1 + counts).sum() - gammaln(r + counts.sum()) + gammaln(r)
            terms.append(term)
        log_post.append(logsumexp(terms))
    log_post = np.asarray(log_post)
    return np.exp(log_post - logsumexp(log_post))


@functools.cache
def _six_rows() -> lcb.Dataset:
    codes = np.array([[0, 0, 0], [0, 0, 1], [0, 0, 0], [1, 1, 3], [1, 2, 3], [1, -1, 3]])
    return lcb.Dataset.from_codes(codes, cardinalities=(2, 3, 4))


def test_posterior_of_k_matches_the_enumeration_of_every_allocation():
    """6 rows, items with 2, 3 and 4 categories (one value missing), K <= 4: the sum over all
    1 + 64 + 729 + 4096 labelled allocations agrees with exact_evidence (an independent
    route), and the sampler agrees with both within Monte Carlo error."""
    data = _six_rows()
    enumerated = _enumerated_posterior_k(data, MAX_CLASSES)
    np.testing.assert_allclose(enumerated, _exact_posterior_k(data, np.full(4, 1 / 4)),
                               rtol=1e-8)
    res = _quiet(allocation_sampler, data, seed=0, **SHARED)
    sampled = np.array(list(res.posterior_k.values()))
    assert _chi_square_p(res.posterior["k"].values[:, ::5].ravel(), enumerated) > 1e-3
    assert np.abs(sampled - enumerated).max() < 0.03


def test_posterior_of_k_matches_exact_evidences_with_polytomous_items():
    """12 rows, items with 2, 3 and 4 categories, one missing value (rjmcmc's test set)."""
    data = _small()
    exact = _exact_posterior_k(data, np.full(MAX_CLASSES, 1.0 / MAX_CLASSES))
    res = _quiet(allocation_sampler, data, seed=0, **SHARED)
    sampled = np.array(list(posterior_k(res).values()))
    assert 0.5 * np.abs(sampled - exact).sum() < 0.04, (sampled, exact)


def test_collapsed_likelihood_of_one_class_is_its_evidence():
    data = _small()
    lc = lc_data(data)
    lam = np.ones(lc.categories.shape)
    prior = AllocPrior(jnp.zeros(2), jnp.asarray(1.0), jnp.asarray(lam),
                       jnp.asarray(lc.categories).sum(-1) * 1.0, jnp.asarray(1.0))
    rows = alloc_data(LCData(*map(jnp.asarray, lc)))
    state = initial_state(rows, 2, 1)
    expected = lcb.exact_evidence(lcb.latent_class(data, 1), data).log_evidence
    assert float(collapsed_loglik(target_tables(rows, prior, 1.0), state.nr)) == pytest.approx(
        expected, abs=1e-9)


@pytest.fixture(scope="module")
def small_csv(tmp_path_factory):
    """rjmcmc's small set as a CSV file (missing value empty), read back as the CLI reads it."""
    path = tmp_path_factory.mktemp("allocation") / "small.csv"
    data = _small()
    pd.DataFrame(np.asarray(data.codes), columns=data.columns).replace(-1, "").to_csv(
        path, index=False)
    return path


def test_result_contract_round_trip_and_same_seed(small_csv):
    data = lcb.Dataset.from_csv(small_csv)
    settings = {**TINY, "heats": [1.0, 0.5]}
    res = _quiet(allocation_sampler, data, seed=3, **settings)
    again = _quiet(allocation_sampler, data, seed=3, **settings)
    np.testing.assert_array_equal(res.posterior["k"], again.posterior["k"])
    assert set(res.acceptance) == {"eject", "absorb", "swap"}
    assert res.heats == [1.0, 0.5] and "heats of the tempered replicas: 1, 0.5" in res.summary()
    stats_ = res.idata.sample_stats
    assert {"collapsed_log_likelihood", "proposed", "accepted"} <= set(stats_.data_vars)
    assert int(stats_["proposed"].sel(move="swap").sum()) == 2 * 220
    weights = res.posterior["class_weights"].values
    active = np.arange(3)[None, None, :] < res.posterior["k"].values[..., None]
    np.testing.assert_allclose(np.nansum(weights, axis=-1), 1.0)
    assert np.all(np.isnan(weights) == ~active)
    back = lcb.AllocationResult.from_dict(json.loads(json.dumps(res.to_dict())))
    assert back.posterior_k == res.posterior_k and back.acceptance == res.acceptance
    assert lcb.posterior_k(res) == res.posterior_k
    assert res.k_mixing.move_names == ("eject", "absorb")
    assert res.predict_proba(data).shape == (data.n_rows, res.modal_k)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"max_classes": 1}, "max_classes must be an integer >= 2"),
    ({"heats": 0}, "heats must be an integer >= 1"),
    ({"heats": [0.5, 0.2]}, "heats must be a number of heats >= 1 or decreasing"),
    ({"heats": [1.0, 1.0]}, "decreasing heats"),
    ({"heats": "hot"}, "decreasing heats"),
    ({"prior_k": "flat"}, "prior_k must be 'uniform', 'poisson'"),
    ({"seed": -1}, "seed must be a non-negative integer"),
])
def test_bad_arguments_raise_clear_errors(kwargs, message):
    with pytest.raises(lcb.LcbayesError, match=message):
        allocation_sampler(_small(), **kwargs)


def test_heat_ladder():
    np.testing.assert_allclose(heat_ladder(4), [1.0, 0.8, 0.6, 0.4])
    np.testing.assert_allclose(heat_ladder(1), [1.0])


def test_command_line_allocation_sampler(capsys, small_csv):
    path = small_csv
    tiny = ["--max-classes", "3", "--draws", "200", "--warmup", "20", "--chains", "2",
            "--heats", "2"]
    code = main(["rjmcmc", str(path), "--sampler", "allocation", *tiny, "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["sampler"] == "allocation" and out["heats"] == [1.0, 0.4]
    assert set(out["acceptance"]) == set(out["proposed"]) == {"eject", "absorb", "swap"}
    assert abs(sum(out["posterior_k"].values()) - 1.0) < 1e-9
    main(["rjmcmc", str(path), "--sampler", "allocation", *tiny])
    assert "Allocation sampler (heats 1, 0.4)" in capsys.readouterr().out
    assert main(["rjmcmc", str(path), "--heats", "2"]) == 2
    assert "--heats is an option of --sampler allocation" in capsys.readouterr().err


# ---------------------------------------------------------------------------------- slow
def _total_variation(a: dict, b: dict) -> float:
    return 0.5 * sum(abs(a[k] - b[k]) for k in a)


@pytest.mark.slow
def test_carcinoma_agrees_with_reversible_jump(carcinoma):
    """Both samplers, K <= 6, uniform p(K): P(K = 3) and the whole posterior of K agree
    within Monte Carlo error (ESS of k in the thousands for both)."""
    alloc = _quiet(allocation_sampler, carcinoma, max_classes=6, draws=10_000, warmup=1000,
                   seed=0)
    rj = _quiet(rjmcmc, carcinoma, max_classes=6, draws=10_000, warmup=2000, seed=0)
    assert 0.80 < alloc.posterior_k[3] < 0.90
    assert abs(alloc.posterior_k[3] - rj.posterior_k[3]) < 0.04
    assert _total_variation(alloc.posterior_k, rj.posterior_k) < 0.04


@pytest.mark.slow
def test_simulated_four_classes_agree_with_reversible_jump():
    """200 rows from 4 well-separated classes of 8 binary items, K <= 6: the same posterior
    of K (total variation, 4 x 5000 allocation draws against 4 x 10000 reversible jump
    draws)."""
    columns = [f"X{j + 1}" for j in range(8)]
    template = lcb.Dataset.from_codes(np.array([[0] * 8, [1] * 8]), columns=columns,
                                      labels=[(0, 1)] * 8)
    truth = lcb.latent_class(template, 4)
    profiles = np.array([[0.9] * 8, [0.1] * 8, [0.9] * 4 + [0.1] * 4, [0.1] * 4 + [0.9] * 4])
    params = {"class": np.full(4, 0.25)}
    for j, column in enumerate(columns):
        params[column] = np.stack([1 - profiles[:, j], profiles[:, j]], axis=1)
    data = lcb.simulate(truth, params, n=200, seed=4)
    alloc = _quiet(allocation_sampler, data, max_classes=6, draws=5000, warmup=1000, seed=0)
    rj = _quiet(rjmcmc, data, max_classes=6, draws=10_000, warmup=2000, seed=0)
    both = (alloc.posterior_k, rj.posterior_k)
    # K = 4 or more: empty and tiny classes spread the rest over K = 5, 6 (P(K = 4) ~ 0.35)
    assert all(sum(p[k] for k in (1, 2, 3)) < 0.01 for p in both), both
    assert _total_variation(*both) < 0.06, both
