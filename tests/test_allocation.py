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
    augmented_gibbs,
    class_likelihoods,
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


def _log_allocation_term(codes: np.ndarray, cards, z: np.ndarray, k: int, heat: float
                         ) -> float:
    """ln p(z | K) + ln F_h(z) of one labelled allocation, alpha = lam = 1."""
    sizes = np.bincount(z, minlength=k)
    term = gammaln(k) - gammaln(k + z.size) + gammaln(1 + sizes).sum()
    for c in range(k):
        for j, r in enumerate(cards):
            values = codes[z == c, j]
            counts = np.bincount(values[values >= 0], minlength=r)
            term += gammaln(1 + heat * counts).sum() - gammaln(r + heat * counts.sum()) + gammaln(r)
    return term


def _enumerated_posterior_k(data: lcb.Dataset, max_classes: int, heat: float = 1.0
                            ) -> np.ndarray:
    """p(K | y) by summing p(z | K) p(y | z, K) over every labelled allocation z of the rows
    to K classes (empty classes included), Dirichlet(1) priors, uniform p(K); at ``heat`` h
    the power posterior's p(z | K) F_h(z), F_h = prod B(1 + h n_kj) / B(1)."""
    codes = np.asarray(data.codes)
    cards = np.asarray(data.cardinalities)
    log_post = [logsumexp([_log_allocation_term(codes, cards, np.asarray(z), k, heat)
                           for z in itertools.product(range(k), repeat=codes.shape[0])])
                for k in range(1, max_classes + 1)]
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


@pytest.mark.slow  # a long tempered run compared with the exact power posterior: 10 s
def test_one_heated_replica_samples_the_power_posterior_of_k():
    """A single replica at heat 1/2 (no cold one): its K follows the enumerated power
    posterior sum_z p(K) p(z | K) F_h(z), so the tempered ejection / absorption ratios and the
    tempered Gibbs step (Dir(lam + h n) tables, likelihood^h) leave F_h's target invariant."""
    data = _six_rows()
    heat = 0.5
    expected = _enumerated_posterior_k(data, MAX_CLASSES, heat)
    assert np.abs(expected - _enumerated_posterior_k(data, MAX_CLASSES)).max() > 0.05
    lc = lc_data(data)
    prior = allocation_prior(data, lc, "class", "dirichlet", np.full(MAX_CLASSES, 0.25))
    out = run_chains(SHARED["draws"], JUMPS, LCData(*map(jnp.asarray, lc)), prior,
                     jnp.array([heat]), jax.random.split(prng_key(2), 4),
                     jnp.array([1, 2, 3, 4], dtype=jnp.int32), SHARED["warmup"], 1)
    k = np.asarray(out[0])
    assert _chi_square_p(k[:, ::5].ravel(), expected) > 1e-3
    assert np.abs(np.bincount(k.ravel(), minlength=5)[1:] / k.size - expected).max() < 0.03


def test_gibbs_step_leaves_the_tempered_allocation_target_invariant():
    """Fixed K = 2 on 5 rows (one value missing), heat 0.6: 4000 independent chains of 30
    data-augmentation Gibbs steps end in the 32 labelled allocations with the probabilities
    p(z | K) F_h(z) (enumerated), so the step's Dir(lam + h n) tables and likelihood^h
    pair up."""
    codes = np.asarray(_six_rows().codes)[:5]
    data = lcb.Dataset.from_codes(codes, cardinalities=(2, 3, 4))
    heat, k, n = 0.6, 2, codes.shape[0]
    lc = LCData(*map(jnp.asarray, lc_data(data)))
    prior = allocation_prior(data, lc, "class", "dirichlet", np.full(k, 0.5))
    rows = alloc_data(lc)

    def chain(key):
        def step(state, key):
            k_gamma, k_rows = jax.random.split(key)
            u = jax.random.uniform(k_rows, state.z.shape)
            return augmented_gibbs(k_gamma, u, rows, prior, state, heat, 1)[0], None

        return jax.lax.scan(step, initial_state(rows, k, k), jax.random.split(key, 30))[0].z

    z = np.asarray(jax.jit(jax.vmap(chain))(jax.random.split(prng_key(5), 4000)))[:, :n]
    observed = np.bincount(z @ (k ** np.arange(n)), minlength=k ** n)
    terms = np.array([_log_allocation_term(codes, (2, 3, 4), np.asarray(z_), k, heat)
                      for z_ in itertools.product(range(k), repeat=n)])
    expected = np.exp(terms - logsumexp(terms))[
        [int(np.dot(z_, k ** np.arange(n))) for z_ in itertools.product(range(k), repeat=n)]]
    assert stats.chisquare(observed, expected * z.shape[0]).pvalue > 1e-3
    assert np.abs(observed / z.shape[0] - expected).max() < 0.02


def test_tabulated_target_terms_equal_the_log_gamma_formula():
    """The tables of every heat give ln F_h of a class (ln B(lam + h n) - ln B(lam) per
    item) and the ejection's Beta terms exactly as ln Γ computes them."""
    data = _small()
    lc = LCData(*map(jnp.asarray, lc_data(data)))
    prior = allocation_prior(data, lc, "class", "dirichlet", np.full(MAX_CLASSES, 0.25))
    rows = alloc_data(lc)
    state = initial_state(rows, MAX_CLASSES, 3)
    lam, total = np.asarray(prior.lam), np.asarray(prior.lam_total)
    for heat in (1.0, 0.37):
        tables = target_tables(rows, prior, heat)
        counts = heat * np.asarray(state.nr)
        direct = (gammaln(lam + counts) - gammaln(lam)).sum((1, 2)) - (
            gammaln(total + counts.sum(-1)) - gammaln(total)).sum(-1)
        np.testing.assert_allclose(class_likelihoods(tables, state.nr), direct, atol=1e-10)
        np.testing.assert_allclose(tables.shape[5] + tables.shape[2] - tables.double[7],
                                   gammaln(6.0) + gammaln(3.0) - gammaln(9.0), atol=1e-12)


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
    assert res.settings["jumps"] == back.settings["jumps"] == JUMPS
    draws = res.posterior["k"].values.ravel()     # the share of draws with each K
    assert res.posterior_k == {k: float(np.mean(draws == k)) for k in res.posterior_k}
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
    ({"jumps": 0}, "jumps must be an integer >= 1"),
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
    code = main(["rjmcmc", str(path), "--method", "allocation", *tiny, "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["sampler"] == "allocation" and out["heats"] == [1.0, 0.4]
    assert set(out["acceptance"]) == set(out["proposed"]) == {"eject", "absorb", "swap"}
    assert abs(sum(out["posterior_k"].values()) - 1.0) < 1e-9
    main(["rjmcmc", str(path), "--method", "allocation", *tiny])
    assert "Allocation sampler (heats 1, 0.4)" in capsys.readouterr().out
    assert main(["rjmcmc", str(path), "--heats", "2"]) == 2
    assert "--heats is an option of --method allocation" in capsys.readouterr().err


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
