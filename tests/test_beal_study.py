"""Batched scoring of the Beal & Ghahramani structures (benchmarks/beal/study.py and
tied_ais.py): every batched score equals an unbatched lcbayes computation on the sub-structure
itself."""

from __future__ import annotations

import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import gammaln

import lcbayes as lcb
from beal import ghahramani as bg
from beal import study as beal_study
from beal.tied_ais import tied_runner
from lcbayes import scores
from lcbayes.engines.annealing import make_schedule, weight_statistics
from lcbayes.engines.dirichlet import complete_data_log_evidence
from lcbayes.errors import LcbayesError
from lcbayes.params import prior_tables

N = 10
RESTARTS = 2
EMPTY, SYMMETRIC, FULL = (0, 0, 0, 0), (0, 3, 3, 0), (3, 3, 3, 3)
CODES = (EMPTY, SYMMETRIC, bg.TRUE_CODES, FULL)


@pytest.fixture(scope="module")
def data() -> lcb.Dataset:
    return bg.nested_datasets(seed=0, sizes=(N,))[N]


@pytest.fixture(scope="module")
def fit(data) -> beal_study.StudyFit:
    return beal_study.fit_all(data, seed=0, restarts=RESTARTS, codes=CODES, workers=2)


@pytest.fixture(scope="module")
def exact(data) -> dict:
    """Exact ``ln p(y | m)`` of each structure (sum over all 4^10 completions, eq. 9)."""
    return {c: lcb.exact_evidence(bg.structure_from_codes(c, data), data).log_evidence
            for c in CODES}


def test_alias_rule_of_the_study_is_lcbayes_general_rule():
    for c in bg.parent_codes():
        assert lcb.log_alias(bg.structure_from_codes(c)) == pytest.approx(bg.log_alias(c),
                                                                          abs=1e-12)


def test_vb_score_is_lcbayes_vbem_of_the_substructure_started_identically(fit, data):
    """The host-shaped, row-tied VBEM run from the same prior draws as ``lcb.vbem`` on the
    sub-structure itself follows the same iterates: same bounds, same iteration counts."""
    for c in (SYMMETRIC, bg.TRUE_CODES):
        vb = lcb.vbem(bg.structure_from_codes(c, data), data, restarts=RESTARTS, seed=0)
        np.testing.assert_allclose(fit.elbo[fit.index(c)], vb.restart_elbos, rtol=0, atol=1e-9)
        np.testing.assert_array_equal(fit.vb_n_iter[fit.index(c)], vb.restart_n_iter)


def test_vb_score_is_the_bound_at_the_substructure_posterior(fit, data):
    """The batched bound equals form B of ``F`` (notes §4.3) of the sub-structure itself at the
    same Dirichlet posteriors (the first host row of every tied group)."""
    for c in (EMPTY, FULL):
        structure = bg.structure_from_codes(c, data)
        for r in range(RESTARTS):
            terms = lcb.bound_terms(structure, data, fit.posterior(c, r))
            assert fit.elbo[fit.index(c), r] == pytest.approx(terms.after_vbe, abs=1e-9)
            assert terms.general == pytest.approx(terms.after_vbe, abs=1e-9)
            assert fit.vb_converged[fit.index(c), r]


def test_map_score_and_cheeseman_stutz_of_the_substructure(fit, data):
    """MAP = ln p(y | theta^) (eq. 29) and CS (eqs 27-30) recomputed on the sub-structure
    from its own expected counts at theta^."""
    for c in CODES:
        structure = bg.structure_from_codes(c, data)
        i = fit.index(c)
        for r in range(RESTARTS):
            theta = fit.params(c, r)
            loglik = lcb.log_likelihood(structure, theta, data)
            assert fit.loglik[i, r] == pytest.approx(loglik, abs=1e-9)
            counts = lcb.expected_counts(structure, theta, data)
            tables = [counts[name].reshape(-1, counts[name].shape[-1]) for name in counts]
            evidence = float(complete_data_log_evidence(
                tables, [np.ones_like(t) for t in tables]))
            complete_loglik = sum(float((counts[k] * np.log(theta[k])).sum()) for k in counts)
            cs = scores.cheeseman_stutz(loglik, evidence, complete_loglik)
            assert fit.cs[i, r] == pytest.approx(cs, abs=1e-8)
    # the collapsed form: CS = ln p(s^, y | m) + sum_i H[q^_i] (notes §3.2)
    np.testing.assert_allclose(fit.cs, fit.complete_evidence + fit.entropy, atol=1e-9)


def test_map_estimate_is_the_softmax_basis_fixed_point(fit, data):
    """theta^ = (lambda + N) / (lambda_0 + N) with N the sub-structure's expected counts at
    theta^ (Beal & Ghahramani §3.1, MacKay's softmax basis), up to EM's stopping rule."""
    for c in CODES:
        theta = fit.params(c)
        counts = lcb.expected_counts(bg.structure_from_codes(c, data), theta, data)
        for name, n_hat in counts.items():
            update = (1.0 + n_hat) / (1.0 + n_hat).sum(axis=-1, keepdims=True)
            np.testing.assert_allclose(theta[name], update, atol=1e-3)


def test_score_columns(fit):
    frame = fit.to_frame()
    assert list(frame["codes"]) == list(CODES)
    assert list(frame["d"]) == [18, 42, 50, 66]
    best = np.max(fit.loglik, axis=1)
    np.testing.assert_allclose(frame["MAP"], best)
    np.testing.assert_allclose(frame["BIC*"], best - frame["d"] / 2 * math.log(N))
    # with lambda = 1 the simplex-basis prior density is ln 24 per observed CPT row (notes §9.4)
    observed_rows = np.array([4, 10, 12, 16])
    np.testing.assert_allclose(frame["BICp*"] - frame["BIC*"], math.log(24) * observed_rows)
    np.testing.assert_allclose(frame["CS*"], np.max(fit.cs, axis=1))
    np.testing.assert_allclose(frame["VB*"], np.max(fit.elbo, axis=1))
    log_s = np.array([bg.log_alias(c) for c in CODES])
    np.testing.assert_allclose(log_s, [0.0, math.log(8), math.log(4), math.log(8)])
    for m in ("BIC", "BICp", "CS", "VB"):
        np.testing.assert_allclose(frame[m], frame[m + "*"] + log_s)
    assert len(json.loads(json.dumps(fit.to_dict()))["scores"]) == len(CODES)
    assert "VB*" in fit.summary()


def test_cs_and_vb_never_exceed_the_exact_evidence(fit, exact):
    """Theorem 6.1 (CS) and the variational bound (VB), both uncorrected (notes §9.10)."""
    for c in CODES:
        i = fit.index(c)
        assert np.all(fit.cs[i] <= exact[c] + 1e-9)
        assert np.all(fit.elbo[i] <= exact[c] + 1e-9)
        assert np.all(fit.loglik[i] >= exact[c])  # the MAP value is an upper bound here


def test_empty_structure_vb_is_the_closed_form_less_two_orphan_penalties(fit, data, exact):
    """Empty graph: the exact evidence is closed form (notes §9.11); each childless binary
    hidden node costs VB ``ln B(1 + n/2, 1 + n/2) + n ln 2`` (its bound at q(s_i) = 1/2,
    form C), about -1.00 nats at n = 10 (notes §4.3)."""
    counts = [np.bincount(data.codes[:, j], minlength=5) for j in range(4)]
    closed = sum(gammaln(5) - gammaln(5 + N) + gammaln(1 + k).sum() for k in counts)
    assert exact[EMPTY] == pytest.approx(closed, abs=1e-9)
    orphan = 2 * gammaln(1 + N / 2) - gammaln(2 + N) + N * math.log(2)
    assert orphan == pytest.approx(-1.00, abs=0.01)
    assert fit.elbo[fit.index(EMPTY)].max() == pytest.approx(closed + 2 * orphan, abs=1e-3)
    assert fit.elbo[fit.index(EMPTY)].max() < closed


def test_starts_depend_on_the_structure_not_on_its_position(fit, data):
    reordered = beal_study.fit_all(data, seed=0, restarts=RESTARTS, codes=CODES[::-1],
                                   workers=2)
    np.testing.assert_allclose(reordered.elbo[::-1], fit.elbo, rtol=1e-10)
    np.testing.assert_allclose(reordered.cs[::-1], fit.cs, rtol=1e-10)
    assert reordered.seconds["compile"] < 1.0  # same shapes: the compiled programs are reused


def test_arguments_are_checked(data):
    with pytest.raises(LcbayesError, match="methods"):
        beal_study.fit_all(data, methods=("AIS",))
    with pytest.raises(LcbayesError, match="n_patterns"):
        beal_study.fit_all(data, n_patterns=1)
    with pytest.raises(LcbayesError, match="restarts"):
        beal_study.fit_all(data, restarts=0)


def test_tied_runner_anneals_a_beal_substructure():
    """A sub-structure of Beal & Ghahramani's host, obtained by tying host rows, has the
    evidence of the sub-structure itself."""
    codes = (0, 0, 1, 1)
    sub = bg.structure_from_codes(codes)
    rng = np.random.default_rng(0)
    cards = [sub.cardinalities[i] for i in sub.observed_nodes]
    data = lcb.Dataset(codes=np.stack([rng.integers(0, c, 8) for c in cards], axis=1),
                       columns=sub.observed_names,
                       labels=tuple(sub.labels[i] for i in sub.observed_nodes))
    sub = bg.structure_from_codes(codes, data)
    exact = lcb.exact_evidence(sub, data).log_evidence
    host = bg.full_structure(data)
    priors = prior_tables(host, "dirichlet")
    tying = bg.pooling_matrices(codes)
    groups = tuple(jnp.asarray(tying[n]) for n in host.nodes)
    run = tied_runner(host, data.patterns, data.counts, priors, make_schedule("beal", 1024),
                      (2.0, 0.5 * 8), chains=32)
    log_w, _ = jax.jit(run)(groups, jax.random.PRNGKey(0))
    est = weight_statistics(np.asarray(log_w)[-1])
    assert abs(est["log_evidence"] - exact) < max(3 * est["stderr"], 0.02), (est, exact)
