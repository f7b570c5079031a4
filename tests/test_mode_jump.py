"""The mode-jumping move of the latent class SMC (lcbayes.samplers.mode_jump): EM's expected
counts, the move's invariance on a posterior computed exactly by enumerating the allocations,
and the row order of the election data on which the particle filter without it ends 10-15 nats
low."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import gammaln, logsumexp

import lcbayes as lcb
from lcbayes.samplers.gibbs import draw_dirichlets
from lcbayes.samplers.mode_jump import em_counts, jump_move
from lcbayes.samplers.particles import Particles
from lcbayes.samplers.smc import run_smc, smc_data
from lcbayes.samplers.smc_evidence import smc_prior
from lcbayes.validation import fit_data

from .conftest import data_csv

#: A small data set whose 2^8 allocations into two classes are enumerated.
TINY = np.array([[0, 0, 0], [0, 0, 1], [0, 0, 0], [1, 1, 1], [1, 1, 0], [1, 1, 1], [0, 1, 0],
                 [1, 0, 1]])


def _prepared(codes: np.ndarray, k: int):
    data = lcb.Dataset.from_codes(codes)
    structure = lcb.latent_class(data, k)
    ordered = smc_data(fit_data(structure, data), np.random.default_rng(0))
    prior = smc_prior(structure, "dirichlet", k, ordered.categories)
    return ordered, prior


def test_em_counts_are_expected_counts_of_the_weighted_rows():
    model = lcb.latent_class(lcb.Dataset.from_codes(TINY), 3)
    simulated = lcb.simulate(model, lcb.random_params(model, seed=1), 200, seed=1)
    ordered, prior = _prepared(np.asarray(simulated.codes), 3)
    weights = jnp.asarray(ordered.counts) * (jnp.arange(ordered.counts.size) % 2)
    modes = em_counts(jax.random.key(0), jnp.asarray(ordered.one_hot),
                      jnp.asarray(ordered.categories), weights, prior, 2, restarts=5,
                      iterations=20)
    assert modes.n_k.shape == (5, 3)
    np.testing.assert_allclose(modes.n_k.sum(axis=1), float(weights.sum()), rtol=1e-12)
    assert np.all(modes.n_k[:, 2] == 0)                  # the inactive slot takes no rows
    # complete rows: every item's counts add up to the class's rows
    np.testing.assert_allclose(modes.n_kjr.sum(axis=-1), np.repeat(
        np.asarray(modes.n_k)[:, :, None], 3, axis=2), rtol=1e-10, atol=1e-10)
    # one class: the counts are the weighted rows' values, whatever the start
    one = em_counts(jax.random.key(1), jnp.asarray(ordered.one_hot),
                    jnp.asarray(ordered.categories), weights, prior, 1, restarts=2,
                    iterations=3)
    expected = np.einsum("p,pjr->jr", np.asarray(weights), ordered.one_hot)
    np.testing.assert_allclose(one.n_kjr[:, 0], np.stack([expected] * 2), rtol=1e-12)


def _exact_posterior(codes: np.ndarray, k: int):
    """Every allocation of the rows to ``k`` classes, its posterior probability (the
    parameters integrated out under Dirichlet(1) priors) and its class counts."""
    n = codes.shape[0]
    allocations = np.array(list(itertools.product(range(k), repeat=n)))
    one_hot = np.eye(2)[codes]                                     # (n, J, 2)
    n_k = np.stack([(allocations == c).sum(axis=1) for c in range(k)], axis=1)
    n_kjr = np.einsum("azk,zjr->akjr", np.eye(k)[allocations], one_hot)
    log_joint = (gammaln(k) - gammaln(k + n) + gammaln(1 + n_k).sum(axis=1)
                 + (gammaln(2) - gammaln(2 + n_kjr.sum(-1))).sum(axis=(1, 2))
                 + gammaln(1 + n_kjr).sum(axis=(1, 2, 3)))
    return np.exp(log_joint - logsumexp(log_joint)), n_k, n_kjr


def _symmetric_statistics(pi: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """Two functions of ``(pi, theta)`` that no relabelling changes: ``sum pi_k^2`` and
    ``sum_k pi_k theta_k[item 0 = 0]``."""
    return np.stack([(pi ** 2).sum(-1), (pi * theta[..., 0, 0]).sum(-1)], axis=-1)


def test_the_move_keeps_the_exact_posterior():
    # particles drawn exactly from p(pi, theta | y) stay so after three moves: the means of two
    # label-symmetric functions match their exact values (from the enumeration) within 4 s.e.
    ordered, prior = _prepared(TINY, 2)
    prob, n_k, n_kjr = _exact_posterior(TINY, 2)
    alpha = 1.0 + n_k
    exact = np.array([
        prob @ ((alpha * (alpha + 1)).sum(1) / (alpha.sum(1) * (alpha.sum(1) + 1))),
        prob @ ((alpha / alpha.sum(1, keepdims=True))
                * (1.0 + n_kjr[:, :, 0, 0]) / (2.0 + n_kjr[:, :, 0].sum(-1))).sum(1)])
    m = 20_000
    rng = np.random.default_rng(3)
    picked = rng.choice(prob.size, size=m, p=prob)
    counts_k, counts_kjr = jnp.asarray(n_k[picked], float), jnp.asarray(n_kjr[picked])
    categories, active = jnp.asarray(ordered.categories), jnp.ones(2, bool)
    log_w, log_t = jax.vmap(draw_dirichlets, (0, 0, 0, None, None))(
        jax.random.split(jax.random.key(4), m), prior.delta + counts_k, prior.lam + counts_kjr,
        categories, active)
    particles = Particles(log_w, log_t, counts_k, counts_kjr)
    # the move reads the patterns in the SMC's numbering; the counts cover every row
    rows = ordered.classes[0].rows
    pattern_counts = jnp.asarray(np.bincount(rows, minlength=ordered.one_hot.shape[0]), float)
    one_hot = jnp.asarray(ordered.one_hot)
    modes = em_counts(jax.random.key(5), one_hot, categories, pattern_counts, prior, 2,
                      restarts=4, iterations=20)
    moves = jax.jit(lambda key, p: jump_move(key, one_hot, categories, pattern_counts, prior, 2,
                                             p, modes))
    for step in range(3):
        particles, accepted = moves(jax.random.key(10 + step), particles)
        assert 0.05 < float(accepted) < 0.999              # the move moves, and is not a copy
        stats = _symmetric_statistics(np.exp(np.asarray(particles.log_weights)),
                                      np.exp(np.asarray(particles.log_theta)))
        se = stats.std(axis=0) / np.sqrt(m)
        assert np.all(np.abs(stats.mean(axis=0) - exact) < 4 * se), (step, stats.mean(0), exact)


@pytest.fixture(scope="module")
def election_300():
    """election's first 300 rows, K = 2, and Chib's log evidence of them (computed once for
    both cases of the test below)."""
    data = lcb.Dataset.from_csv(data_csv("election.csv"), columns=[
        "MORALG", "CARESG", "KNOWG", "LEADG", "DISHONG", "INTELG", "MORALB", "CARESB", "KNOWB",
        "LEADB", "DISHONB", "INTELB"])
    data = lcb.Dataset.from_codes(np.asarray(data.codes)[:300], columns=data.columns,
                                  labels=data.labels)
    structure = lcb.latent_class(data, 2)
    return data, structure, lcb.chib(structure, data, seed=0)


@pytest.mark.parametrize("jumps", [True, False])
def test_the_move_rescues_a_row_order_that_misleads_the_filter(election_300, jumps):
    # election, first 300 rows, K = 2, the row order of seed [0, 2]: the posterior of the first
    # 31 rows holds one split of the rows, that of the first 39 another; without the move every
    # run stays in the first and ends 10-15 nats low (module docstring of mode_jump)
    data, structure, reference = election_300
    assert reference.reliable
    ordered = jax.tree.map(jnp.asarray, smc_data(fit_data(structure, data),
                                                 np.random.default_rng([0, 2])))
    prior = smc_prior(structure, "dirichlet", 2, ordered.categories)
    errors = np.array([float(run_smc(jax.random.key(run), ordered, prior, 2, 0.9,
                                     particles=128, sweeps=1, max_moves=4096, draws=1,
                                     jumps=jumps)[0]) - reference.log_evidence
                       for run in range(3)])
    if jumps:   # a run's own spread is about 1 nat here (128 particles)
        assert np.all(np.abs(errors) < 4.0) and abs(errors.mean()) < 2.0, errors
    else:
        assert np.all(errors < -8.0), errors
