"""VBEM: a monotone lower bound, its three algebraic forms, exact evidence and Cheeseman-Stutz."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import lcbayes as lcb
from lcbayes.inference import log_marginal
from lcbayes.params import to_tables


def _codes_data(cards, n, seed, missing=0.0):
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, c, n) for c in cards], axis=1)
    codes = np.where(rng.random(codes.shape) < missing, -1, codes)
    return lcb.Dataset.from_codes(codes, cardinalities=list(cards))


def _structures(data):
    cols = data.columns
    return {
        "lc": lcb.latent_class(data, 2),
        "lc3": lcb.latent_class(data, 3),
        "hlc": lcb.hlc(data, {"H": ["H1", cols[0], cols[1]], "H1": list(cols[2:])},
                       {"H": 2, "H1": 2}),
        "dag": lcb.dag(data, {cols[0]: ["s1"], cols[1]: ["s1", "s2"], cols[2]: ["s2"],
                              cols[3]: ["s2", cols[0]]}, {"s1": 2, "s2": 2}),
    }


@pytest.fixture(scope="module")
def simulated():
    """Data simulated from each structure (8% missing), big enough for a non-trivial bound."""
    base = _codes_data((2, 3, 2, 2), 50, 0)
    return {name: (s, lcb.simulate(s, lcb.random_params(s, seed=11), n=300, seed=5,
                                   missing=0.08))
            for name, s in _structures(base).items()}


@pytest.mark.parametrize("kind", ["lc", "lc3", "hlc", "dag"])
def test_vbem_bound_never_decreases(simulated, kind):
    structure, data = simulated[kind]
    vb = lcb.vbem(structure, data, restarts=2, seed=1, tol=1e-10, max_iter=400)
    assert vb.n_iter > 2
    assert np.all(np.diff(vb.history) >= -1e-9 * abs(vb.elbo))
    assert vb.elbo >= vb.history[-1] - 1e-9 * abs(vb.elbo)
    assert vb.elbo == pytest.approx(vb.restart_elbos.max())


@pytest.mark.parametrize("kind", ["lc", "hlc", "dag"])
def test_three_forms_of_the_bound_agree(simulated, kind):
    structure, data = simulated[kind]
    vb = lcb.vbem(structure, data, restarts=1, seed=2, tol=1e-12, max_iter=3000)
    terms = lcb.bound_terms(structure, data, vb.posterior)
    # forms A and B agree at any alpha (q is its VBE posterior)
    assert terms.general == pytest.approx(terms.after_vbe, rel=1e-12)
    # at a fixed point alpha = lambda + N(q), so form C agrees too
    assert terms.after_vbm == pytest.approx(terms.after_vbe, abs=1e-5)
    assert terms.after_vbe == pytest.approx(vb.elbo, rel=1e-12)
    # away from a fixed point form C differs: the forms are really different expressions
    shifted = {k: v * 1.5 for k, v in vb.posterior.items()}
    moved = lcb.bound_terms(structure, data, shifted)
    assert moved.general == pytest.approx(moved.after_vbe, rel=1e-12)
    assert abs(moved.after_vbm - moved.after_vbe) > 1e-3


def _small_cases():
    data = _codes_data((2, 3, 2, 2), 9, 3, missing=0.15)
    structures = _structures(data)
    return [(name, s, data) for name, s in structures.items()] + [
        ("lc-complete", lcb.latent_class(_codes_data((2, 2, 2, 2), 14, 4), 2),
         _codes_data((2, 2, 2, 2), 14, 4)),
    ]


@pytest.mark.parametrize("name, structure, data", _small_cases(),
                         ids=[c[0] for c in _small_cases()])
def test_vbem_bound_never_exceeds_exact_evidence(name, structure, data):
    exact = lcb.exact_evidence(structure, data)
    for prior in ("dirichlet", 0.5):
        vb = lcb.vbem(structure, data, restarts=4, seed=0, prior=prior, tol=1e-10)
        truth = exact if prior == "dirichlet" else lcb.exact_evidence(structure, data, prior=prior)
        assert vb.elbo <= truth.log_evidence + 1e-9
        # a bound, not a wild guess: within a few nats on problems this small
        assert vb.elbo > truth.log_evidence - 5.0


def test_one_class_bound_is_the_exact_closed_form():
    data = _codes_data((2, 3, 4), 40, 6, missing=0.1)
    structure = lcb.latent_class(data, 1)
    vb = lcb.vbem(structure, data, restarts=1)
    closed = 0.0
    for j, r in enumerate(data.cardinalities):
        counts = np.bincount(data.codes[:, j][data.codes[:, j] >= 0], minlength=r)
        closed += (math.lgamma(r) - math.lgamma(r + counts.sum())
                   + sum(math.lgamma(1 + c) for c in counts))
    assert vb.elbo == pytest.approx(closed, abs=1e-9)
    assert lcb.exact_evidence(structure, data).log_evidence == pytest.approx(closed, abs=1e-9)


@pytest.mark.parametrize("kind", ["lc", pytest.param("lc3", marks=pytest.mark.slow),
                                  pytest.param("hlc", marks=pytest.mark.slow), "dag"])
def test_cheeseman_stutz_is_the_bound_after_one_vbm_step_and_vbem_only_raises_it(simulated,
                                                                                 kind):
    """Beal & Ghahramani Corollary 6.2: from the EM posteriors one VBM step gives F = CS."""
    structure, data = simulated[kind]
    fit = lcb.em(structure, data, restarts=3, seed=0, prior="dirichlet", tol=1e-10)
    # form C at alpha = lambda + N_hat with q = the exact posteriors at theta_hat is CS
    # (collapsed form: ln p(s_hat, y | m) + sum_i H[q_i]; notes §3.2)
    lam = lcb.dirichlet_prior(structure)
    collapsed = 0.0
    for name, counts in fit.expected_counts.items():
        for a, n in zip(lam[name].reshape(-1, counts.shape[-1]),
                        counts.reshape(-1, counts.shape[-1]), strict=True):
            collapsed += (math.lgamma(a.sum()) - math.lgamma(a.sum() + n.sum())
                          + sum(math.lgamma(x + y) - math.lgamma(x) for x, y in zip(a, n,
                                                                                     strict=True)))
    observed = (data.patterns >= 0).any(axis=1)
    entropy = sum(
        c * _pattern_entropy(structure, fit.params, data, p)
        for p, (c, seen) in enumerate(zip(data.counts, observed, strict=True)) if seen
    )
    assert fit.cs == pytest.approx(collapsed + entropy, abs=1e-8)
    vb = lcb.vbem(structure, data, init=fit, restarts=0, tol=1e-10)
    assert vb.history[0] >= fit.cs - 1e-9
    assert np.all(np.diff(vb.history) >= -1e-9 * abs(vb.elbo))
    assert fit.cs <= vb.elbo + 1e-9


def _pattern_entropy(structure, params, data, p):
    """Entropy of the joint posterior of everything a pattern leaves free (hidden nodes and
    missing observed parents), by brute force with the public likelihood."""
    joint = _joint_free_posterior(structure, params, data, p)
    return float(-(joint[joint > 0] * np.log(joint[joint > 0])).sum())


#: One compiled program per structure for the brute-force loops below (one pattern at a time).
_log_marginal = jax.jit(log_marginal, static_argnums=0)


def _joint_free_posterior(structure, params, data, p):
    """``p(free | y_p)`` over every joint value of the free variables: hidden nodes are clamped
    by zeroing the other states of their CPTs, missing observed parents by filling the value
    into the pattern (independent of the E step's own entropy)."""
    row = data.patterns[p]
    column = {i: j for j, i in enumerate(structure.observed_nodes)}
    free = [*structure.hidden_nodes,
            *(i for i in structure.observed_nodes if structure.children[i] and row[column[i]] < 0)]
    logs = []
    for state in np.ndindex(*[structure.cardinalities[i] for i in free]):
        clamped = {k: np.array(v, dtype=np.float64) for k, v in params.items()}
        filled = row.copy()
        for i, value in zip(free, state, strict=True):
            if structure.hidden[i]:
                mask = np.zeros(structure.cardinalities[i])
                mask[value] = 1.0
                clamped[structure.nodes[i]] = clamped[structure.nodes[i]] * mask
            else:
                filled[column[i]] = value
        with np.errstate(divide="ignore"):
            log_tables = tuple(jnp.log(t) for t in to_tables(structure, clamped))
        logs.append(float(_log_marginal(structure, log_tables, jnp.asarray(filled[None, :]))[0]))
    logs = np.array(logs)
    return np.exp(logs - np.logaddexp.reduce(logs))


def test_same_seed_same_bound_and_restarts_are_kept(simulated):
    structure, data = simulated["lc3"]
    a = lcb.vbem(structure, data, restarts=3, seed=4)
    b = lcb.vbem(structure, data, restarts=3, seed=4)
    c = lcb.vbem(structure, data, restarts=3, seed=5)
    assert a.elbo == b.elbo and np.array_equal(a.restart_elbos, b.restart_elbos)
    assert not np.array_equal(a.restart_elbos, c.restart_elbos)
    assert a.restart_elbos.shape == (3,)


def test_result_carries_the_alias_correction_and_serialises(simulated):
    structure, data = simulated["lc3"]
    vb = lcb.vbem(structure, data, restarts=2, seed=0)
    assert vb.log_alias == pytest.approx(math.log(6))
    assert vb.elbo_corrected == pytest.approx(vb.elbo + math.log(6))
    out = vb.to_dict()
    for key in ("elbo", "log_alias", "elbo_corrected", "n_iter", "converged", "posterior"):
        assert key in out
    assert "F + ln S" in vb.summary()
    means = vb.posterior_mean
    for name, alpha in vb.posterior.items():
        np.testing.assert_allclose(means[name].sum(axis=-1), 1.0)
        assert np.all(alpha >= lcb.dirichlet_prior(structure)[name] - 1e-12)
    assert vb.class_posteriors.shape == (data.n_rows, 3)


@pytest.mark.parametrize("kwargs, match", [
    ({"prior": None}, "proper Dirichlet prior"),
    ({"restarts": 0}, "restarts"),
    ({"tol": 0}, "tol"),
    ({"max_iter": 0}, "max_iter"),
])
def test_bad_arguments_are_refused(simulated, kwargs, match):
    structure, data = simulated["lc"]
    with pytest.raises(lcb.LcbayesError, match=match):
        lcb.vbem(structure, data, **kwargs)


@pytest.mark.parametrize("name, structure, data", _small_cases(),
                         ids=[c[0] for c in _small_cases()])
def test_cheeseman_stutz_never_exceeds_exact_evidence_at_any_estimate(name, structure, data):
    """Beal & Ghahramani Theorem 6.1: CS is a lower bound for any theta_hat (ML, MAP, or a
    restart stopped early), and VBEM started from it only improves on it."""
    exact = lcb.exact_evidence(structure, data).log_evidence
    for kwargs in ({}, {"prior": "dirichlet"}, {"max_iter": 2}):
        fit = lcb.em(structure, data, restarts=2, seed=1, **kwargs)
        assert fit.cs <= exact + 1e-9
        assert fit.cs <= lcb.vbem(structure, data, init=fit).elbo + 1e-9
