"""The Laplace approximation in the softmax basis (Whiley 1999 §4.3, eq. 4.5): a closed form at
one class, an independent Hessian, agreement with long AIS on a well-identified model, the
non-positive-definite warning, the aliases and the JSON form."""

from __future__ import annotations

import json
import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.scipy.special import gammaln, logsumexp

import lcbayes as lcb

ITEMS = 5


def _binary(n_items: int) -> lcb.Dataset:
    return lcb.Dataset.from_codes(np.array([[0] * n_items, [1] * n_items]))


def _separated(n_rows: int, seed: int, n_classes: int = 2) -> tuple[lcb.Structure, lcb.Dataset]:
    """Data from a latent class model with well separated classes."""
    model = lcb.latent_class(_binary(ITEMS), n_classes)
    high = [0.85, 0.15, 0.8, 0.2, 0.9]
    rows = [np.asarray(high), 1 - np.asarray(high), np.asarray(high[::-1])][:n_classes]
    params = {"class": np.full(n_classes, 1 / n_classes),
              **{f"X{j + 1}": np.array([[1 - r[j], r[j]] for r in rows]) for j in range(ITEMS)}}
    data = lcb.simulate(model, params, n_rows, seed=seed)
    return lcb.latent_class(data, n_classes), data


def _stirling(x):
    """``ln Gamma(x)`` by Stirling's formula without correction terms."""
    return (x - 0.5) * np.log(x) - x + 0.5 * math.log(2 * math.pi)


def test_one_class_laplace_is_cooper_herskovits_with_stirlings_gamma():
    # softmax basis, alpha = 1: per item the Laplace integral of prod theta^(alpha + n) over
    # phi is B(alpha + n) with every ln Gamma of the posterior counts replaced by Stirling's
    # formula, so the whole approximation is this closed form; the exact evidence is the same
    # with ln Gamma (Cooper-Herskovits, eq. 4.1).
    _, data = _separated(400, seed=1)
    structure = lcb.latent_class(data, 1)
    result = lcb.laplace(structure, data, restarts=1)
    codes = np.asarray(data.codes)
    stirling, exact = 0.0, 0.0
    for j in range(codes.shape[1]):
        a = 1.0 + np.bincount(codes[:, j], minlength=2)
        stirling += float(_stirling(a).sum() - _stirling(a.sum())) - math.lgamma(2.0)
        exact += float(gammaln(a).sum() - gammaln(a.sum()))
    assert result.log_evidence == pytest.approx(stirling, abs=1e-8)
    assert lcb.exact_evidence(structure, data).log_evidence == pytest.approx(exact, abs=1e-8)
    # Stirling's error is about sum 1/(12 x) per Gamma: tiny, but not zero
    assert 0 < abs(result.log_evidence - exact) < ITEMS * 3 / (12 * 50)


def _independent_g(structure, data):
    """``g(phi) = ln p(y | phi) + ln p(phi)`` of a binary latent class model with
    Dirichlet(1) priors, written out directly in the softmax basis (reference category 1)."""
    patterns = jnp.asarray(np.asarray(data.patterns), dtype=jnp.float64)
    counts = jnp.asarray(np.asarray(data.counts), dtype=jnp.float64)
    k = structure.n_classes

    def g(phi):
        log_w = jax.nn.log_softmax(jnp.concatenate([jnp.zeros(1), phi[:k - 1]]))
        logit = phi[k - 1:].reshape(-1, k).T                       # (K, J): item j, class k
        log_p1, log_p0 = jax.nn.log_sigmoid(logit), jax.nn.log_sigmoid(-logit)
        per_class = patterns @ log_p1.T + (1 - patterns) @ log_p0.T
        loglik = counts @ logsumexp(log_w + per_class, axis=1)
        # ln p(phi) = sum over rows of ln Gamma(r) + sum_k ln theta_k (alpha = 1)
        prior = gammaln(float(k)) + log_w.sum() + jnp.sum(log_p1 + log_p0)
        return loglik + prior

    return g


def _phi(structure, params):
    k = structure.n_classes
    w = np.asarray(params["class"])
    items = [np.asarray(params[n]) for n in structure.nodes if n != "class"]
    return np.concatenate([np.log(w[1:] / w[0])]
                          + [np.log(t[:, 1] / t[:, 0]) for t in items]).astype(np.float64)[
        : (k - 1) + k * len(items)]


def test_hessian_and_log_joint_match_an_independent_softmax_basis_implementation(carcinoma):
    structure = lcb.latent_class(carcinoma, 2)
    result = lcb.laplace(structure, carcinoma, restarts=5, seed=0)
    g = _independent_g(structure, carcinoma)
    phi = jnp.asarray(_phi(structure, result.fit.params))
    assert float(g(phi)) == pytest.approx(result.log_joint, abs=1e-8)
    assert np.max(np.abs(np.asarray(jax.grad(g)(phi)))) < 1e-3      # the MAP estimate
    a = -np.asarray(jax.hessian(g)(phi))
    sign, log_det = np.linalg.slogdet(a)
    assert sign > 0 and log_det == pytest.approx(result.log_det, abs=1e-6)
    d = structure.n_parameters
    expected = result.log_joint + d / 2 * math.log(2 * math.pi) - log_det / 2 + math.log(2)
    assert result.log_evidence == pytest.approx(expected, abs=1e-6)
    diag = result.by_variant["full"] + (log_det - np.log(np.diag(a)).sum()) / 2
    assert result.by_variant["diagonal"] == pytest.approx(diag, abs=1e-6)


@pytest.mark.slow
def test_laplace_is_within_half_a_nat_of_long_ais_on_a_well_identified_model():
    structure, data = _separated(2000, seed=3)
    truth = lcb.ais(structure, data, chains=64, temperatures=8192, seed=1)
    assert truth.stderr < 0.15
    for variant in ("full", "block", "diagonal"):
        approx = lcb.laplace(structure, data, variant=variant, restarts=5, seed=0)
        assert abs(approx.log_evidence - truth.log_evidence) < 0.5, variant


def test_variants_come_from_one_hessian_and_block_lies_between(carcinoma):
    structure = lcb.latent_class(carcinoma, 3)
    full = lcb.laplace(structure, carcinoma, restarts=5, seed=0)
    block = lcb.laplace(structure, carcinoma, restarts=5, seed=0, variant="block",
                        fit=full.fit)
    assert block.by_variant == pytest.approx(full.by_variant)
    assert block.log_evidence == pytest.approx(full.by_variant["block"])
    # Hadamard / Fischer: dropping off-diagonal blocks of a positive definite matrix never
    # lowers its determinant, so the evidence estimates fall as more is dropped
    assert full.by_variant["full"] >= full.by_variant["block"] >= full.by_variant["diagonal"]
    assert full.log_alias == pytest.approx(math.log(6))
    bare = lcb.laplace(structure, carcinoma, alias=False, fit=full.fit)
    assert bare.log_evidence == pytest.approx(full.log_evidence - math.log(6))


def test_duplicated_classes_warn_that_a_is_not_positive_definite_and_adjust_the_aliases():
    # an overfitted 3-class model whose classes 2 and 3 are the same merged component of two
    # well separated classes: a fixed point of EM (duplicates stay duplicates) but a saddle
    # point of the posterior, so A has a negative eigenvalue
    structure, data = _separated(600, seed=5, n_classes=3)
    merged = lcb.em(lcb.latent_class(data, 2), data, prior="dirichlet", restarts=5, seed=0)
    big = int(np.argmax(merged.params["class"]))
    init = {"class": np.array([merged.params["class"][1 - big]]
                              + [merged.params["class"][big] / 2] * 2)}
    for name in structure.nodes[1:]:
        t = np.asarray(merged.params[name])
        init[name] = np.stack([t[1 - big], t[big], t[big]])
    fit = lcb.em(structure, data, prior="dirichlet", restarts=0, init=init)
    with pytest.warns(lcb.LaplaceWarning, match="not positive definite"):
        result = lcb.laplace(structure, data, fit=fit)
    assert math.isnan(result.log_evidence) and not result.positive_definite
    assert result.eigen_range[0] < 0
    assert len(result.duplicate_groups) == 1 and len(result.duplicate_groups[0]) == 2
    assert result.log_alias == pytest.approx(math.log(6) - math.log(2))


def test_any_structure_kind_and_json_round_trip():
    data = lcb.simulate(lcb.latent_class(_binary(4), 2),
                        lcb.random_params(lcb.latent_class(_binary(4), 2), seed=2), 300, seed=2)
    structure = lcb.dag(data, {f"X{j}": ["A", "B"] for j in range(1, 5)}, {"A": 2, "B": 2})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", lcb.LaplaceWarning)
        result = lcb.laplace(structure, data, restarts=3, seed=0, variant="block")
    assert result.n_parameters == structure.n_parameters
    assert result.log_alias == pytest.approx(math.log(lcb.alias_count(structure)))
    back = lcb.LaplaceResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert back.to_dict() == result.to_dict()
    assert "Laplace (block, softmax basis)" in back.summary()


def test_bad_arguments_are_refused_naming_them(carcinoma):
    structure = lcb.latent_class(carcinoma, 2)
    with pytest.raises(lcb.ArgumentError, match="variant"):
        lcb.laplace(structure, carcinoma, variant="half")
    with pytest.raises(lcb.ArgumentError, match="prior"):
        lcb.laplace(structure, carcinoma, prior=None)
    with pytest.raises(lcb.ArgumentError, match="restarts"):
        lcb.laplace(structure, carcinoma, restarts=0)
