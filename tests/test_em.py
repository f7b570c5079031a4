"""EM: monotonicity, fixed points, closed forms, published numbers and recovery."""

from __future__ import annotations

import itertools
import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest

import lcbayes as lcb

POLCA_CARCINOMA = {  # poLCA 1.6's log-likelihoods and BIC (many restarts)
    1: (-524.4648, 7, 1082.3244),
    2: (-317.2568, 15, 706.0739),
    3: (-293.7050, 23, 697.1357),
    4: (-289.2858, 31, 726.4629),
}


def _codes_data(cards, n=60, seed=0):
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, c, n) for c in cards], axis=1)
    return lcb.Dataset.from_codes(codes, cardinalities=cards)


def _with_missing(data: lcb.Dataset, rate: float, seed: int) -> lcb.Dataset:
    rng = np.random.default_rng(seed)
    codes = np.where(rng.random(data.codes.shape) < rate, -1, data.codes)
    return lcb.Dataset(codes=codes, columns=data.columns, labels=data.labels)


@pytest.fixture(scope="module")
def small_models():
    """An LC, an HLC and a DAG structure with data simulated from them (10% missing)."""
    base = _codes_data((2, 3, 2, 3, 2, 2))
    cols = base.columns
    structures = {
        "lc": lcb.latent_class(base, 3),
        "hlc": lcb.hlc(base, {"H": ["H1", cols[0], cols[1]], "H1": list(cols[2:])},
                       {"H": 2, "H1": 3}),
        "dag": lcb.dag(base, {cols[0]: ["s1"], cols[1]: ["s1", "s2"], cols[2]: ["s2", cols[0]],
                              cols[3]: ["s2"], cols[4]: ["s1"], cols[5]: [cols[4]]},
                       {"s1": 2, "s2": 2}),
    }
    return {
        name: (s, lcb.simulate(s, lcb.random_params(s, seed=7), n=400, seed=3, missing=0.1))
        for name, s in structures.items()
    }


@pytest.mark.parametrize("kind", ["lc", "hlc", "dag"])
def test_em_loglik_never_decreases(small_models, kind):
    structure, data = small_models[kind]
    fit = lcb.em(structure, data, restarts=4, seed=1, tol=1e-10, max_iter=300)
    assert len(fit.history) == fit.n_iter > 5
    steps = np.diff(fit.history)
    assert steps.min() >= -1e-9 * abs(fit.history[-1])
    assert fit.loglik >= fit.history[-1] - 1e-9 * abs(fit.loglik)
    assert np.isclose(fit.loglik, lcb.log_likelihood(structure, fit.params, data), rtol=1e-12)


@pytest.mark.parametrize("basis", ["softmax", "simplex"])
def test_map_objective_never_decreases(small_models, basis):
    structure, data = small_models["hlc"]
    fit = lcb.em(structure, data, restarts=3, seed=2, prior=2.0, map_basis=basis, max_iter=300)
    assert fit.estimator == "map"
    assert np.diff(fit.history).min() >= -1e-9 * abs(fit.history[-1])
    # the objective is loglik + sum (lambda - 1 + b) ln theta, b = 1 in the softmax basis
    exponent = 2.0 if basis == "softmax" else 1.0
    prior_term = sum(exponent * np.log(t).sum() for t in fit.params.values())
    assert fit.objective == pytest.approx(fit.loglik + prior_term, rel=1e-10)


@pytest.mark.parametrize("kind", ["lc", "hlc", "dag"])
def test_ml_estimate_is_a_fixed_point_of_expected_counts(small_models, kind):
    structure, data = small_models[kind]
    fit = lcb.em(structure, data, restarts=4, seed=0, tol=1e-12, max_iter=3000)
    counts = lcb.expected_counts(structure, fit.params, data)
    for name, table in fit.params.items():
        expected = counts[name] / counts[name].sum(axis=-1, keepdims=True)
        np.testing.assert_allclose(table, expected, atol=2e-4, err_msg=name)


def test_map_softmax_estimate_is_add_lambda_of_expected_counts(small_models):
    structure, data = small_models["lc"]
    fit = lcb.em(structure, data, restarts=4, seed=0, prior="dirichlet", tol=1e-12,
                 max_iter=3000)
    counts = lcb.expected_counts(structure, fit.params, data)
    for name, table in fit.params.items():
        smoothed = (counts[name] + 1.0) / (counts[name] + 1.0).sum(axis=-1, keepdims=True)
        np.testing.assert_allclose(table, smoothed, atol=2e-4, err_msg=name)
    assert fit.log_prior == pytest.approx(lcb.log_prior(structure, fit.params, prior="dirichlet"))


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_em_reproduces_polca_on_carcinoma(carcinoma, k):
    loglik, npar, polca_bic = POLCA_CARCINOMA[k]
    fit = lcb.em(lcb.latent_class(carcinoma, k), carcinoma, restarts=20, seed=0)
    assert fit.loglik == pytest.approx(loglik, abs=1e-3)
    assert fit.n_parameters == npar
    assert lcb.to_deviance_scale(fit.bic) == pytest.approx(polca_bic, abs=2e-3)
    assert fit.converged


def test_one_class_model_is_the_closed_form_independence_model(carcinoma):
    # restarts=20, seed=0: the fit of test_em_reproduces_polca_on_carcinoma[1] (its compiled
    # program serves; so below)
    fit = lcb.em(lcb.latent_class(carcinoma, 1), carcinoma, restarts=20, seed=0)
    expected = 0.0
    for j in range(carcinoma.n_columns):
        counts = np.bincount(carcinoma.codes[:, j], minlength=2)
        expected += sum(c * math.log(c / counts.sum()) for c in counts if c)
    assert fit.loglik == pytest.approx(expected, abs=1e-9)
    assert fit.entropy == pytest.approx(0.0, abs=1e-12)


def test_scores_follow_their_definitions(carcinoma):
    fit = lcb.em(lcb.latent_class(carcinoma, 3), carcinoma, restarts=20, seed=0)
    n, d = carcinoma.n_rows, 23
    assert fit.bic == pytest.approx(fit.loglik - d / 2 * math.log(n))
    assert fit.aic == pytest.approx(fit.loglik - d)
    q = fit.class_posteriors
    assert q.shape == (n, 3)
    np.testing.assert_allclose(q.sum(axis=1), 1.0)
    entropy = -np.sum(q * np.log(np.where(q > 0, q, 1.0)))
    assert fit.icl == pytest.approx(fit.bic - entropy, abs=1e-8)
    assert np.all(np.diff(fit.class_weights) <= 0)  # classes ordered by size


def _best_permutation_error(true_params, fit, structure):
    root = structure.nodes[structure.root]
    k = structure.cardinalities[structure.root]
    best = np.inf
    for perm in itertools.permutations(range(k)):
        perm = list(perm)
        err = np.abs(fit.params[root][perm] - true_params[root]).max()
        for name in structure.observed_names:
            err = max(err, np.abs(fit.params[name][perm] - true_params[name]).max())
        best = min(best, err)
    return best


@pytest.fixture(scope="module")
def three_class_truth():
    cards = (2, 3, 4, 2, 3, 4, 2, 3)
    structure = lcb.latent_class(_codes_data(cards), 3)
    params = lcb.random_params(structure, seed=11)
    params["class"] = np.array([0.45, 0.33, 0.22])
    return structure, params


@pytest.mark.parametrize("missing", [0.0, 0.2])
def test_em_recovers_a_simulated_three_class_model(three_class_truth, missing):
    structure, truth = three_class_truth
    data = lcb.simulate(structure, truth, n=20000, seed=5, missing=missing)
    if missing:
        assert 0.19 < np.mean(data.codes < 0) < 0.21
        assert data.n_rows == 20000
    fit = lcb.em(structure, data, restarts=8, seed=0)
    assert fit.converged
    assert _best_permutation_error(truth, fit, structure) < 0.03


def test_same_seed_same_numbers_and_seeds_matter(small_models):
    structure, data = small_models["lc"]
    a = lcb.em(structure, data, restarts=3, seed=4, max_iter=50)
    b = lcb.em(structure, data, restarts=3, seed=4, max_iter=50)
    c = lcb.em(structure, data, restarts=3, seed=5, max_iter=50)
    np.testing.assert_array_equal(a.restart_logliks, b.restart_logliks)
    for name in a.params:
        np.testing.assert_array_equal(a.params[name], b.params[name])
    assert not np.array_equal(a.restart_logliks, c.restart_logliks)


def test_zero_count_categories_and_empty_classes_give_no_nan():
    frame = pd.DataFrame({
        "a": pd.Categorical(["x", "y", "x", "y"] * 5, categories=["x", "y", "never"]),
        "b": ["u", "v", "v", "u"] * 5,
        "c": [1, 1, 2, 2] * 5,
    })
    data = lcb.Dataset.from_pandas(frame)
    with pytest.warns(UserWarning, match="6 states but data has only 4 distinct observed"):
        fit = lcb.em(lcb.latent_class(data, 6), data, restarts=4, seed=0)  # too many classes
    for table in fit.params.values():
        assert np.all(np.isfinite(table))
    assert fit.params["a"][:, 2].max() == 0.0  # the unseen category keeps probability zero
    assert np.isfinite(fit.loglik) and np.isfinite(fit.icl)
    assert np.all(np.isfinite(fit.restart_logliks))


def test_result_serialises_and_prints(carcinoma):
    fit = lcb.em(lcb.latent_class(carcinoma, 2), carcinoma, restarts=20, seed=0)
    out = json.loads(json.dumps(fit.to_dict()))
    assert out["n_classes"] == 2 and out["n_patterns"] == 20
    assert len(out["conditional_probabilities"]["A"]) == 2
    assert set(out["conditional_probabilities"]["A"][0]) == {"1", "2"}
    assert sum(out["class_weights"]) == pytest.approx(1.0)
    text = fit.summary()
    assert "class population shares" in text and "log-likelihood: -317.2568" in text
    assert "poLCA scale: 706.07" in text


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"restarts": 0}, "restarts"),
        ({"tol": 0.0}, "tol"),
        ({"max_iter": 0}, "max_iter"),
        ({"prior": 0.5, "map_basis": "simplex"}, "simplex"),
        ({"prior": -1.0}, "> 0"),
        ({"prior": "uniform"}, "prior"),
        ({"map_basis": "logit"}, "map_basis"),
    ],
)
def test_bad_arguments_are_refused_with_a_clear_message(small_models, kwargs, match):
    structure, data = small_models["lc"]
    with pytest.raises(lcb.LcbayesError, match=match):
        lcb.em(structure, data, **kwargs)


ELECTION_RATINGS = ["MORALG", "CARESG", "KNOWG", "LEADG", "DISHONG", "INTELG",
                    "MORALB", "CARESB", "KNOWB", "LEADB", "DISHONB", "INTELB"]


def test_election_ratings_use_every_row_and_marginalise_gaps():
    from .conftest import data_csv

    data = lcb.Dataset.from_csv(data_csv("election.csv"), columns=ELECTION_RATINGS)
    fit = lcb.em(lcb.latent_class(data, 2), data, restarts=4, seed=0)
    assert fit.n_rows == 1785 == data.n_rows
    assert sum(data.n_missing.values()) > 0
    # independent NumPy evaluation: sum_rows log sum_k pi_k prod_{j observed} theta_j[k, y_j]
    log_joint = np.log(fit.params["class"])[None, :].repeat(data.n_rows, axis=0)
    for j, name in enumerate(ELECTION_RATINGS):
        y = data.codes[:, j]
        seen = y >= 0
        log_joint[seen] += np.log(fit.params[name][:, y[seen]]).T
    row_loglik = np.logaddexp.reduce(log_joint, axis=1)
    assert fit.loglik == pytest.approx(row_loglik.sum(), rel=1e-10)
    assert fit.converged


def test_two_stage_restarts_keep_the_best_and_stay_monotone(carcinoma):
    full = lcb.em(lcb.latent_class(carcinoma, 3), carcinoma, restarts=16, seed=0)
    staged = lcb.em(lcb.latent_class(carcinoma, 3), carcinoma, restarts=16, seed=0, keep=4,
                    burn_in=5)
    assert staged.restart_kept.sum() == 4 and full.restart_kept.all()
    assert staged.loglik == pytest.approx(POLCA_CARCINOMA[3][0], abs=1e-3)
    assert np.diff(staged.history).min() >= -1e-9 * abs(staged.loglik)
    assert staged.n_iter == len(staged.history) > 5
    # the kept starts are the best after the burn-in; the pruned ones stopped there
    assert np.all(staged.restart_n_iter[~staged.restart_kept] <= 5)
    assert staged.restart_n_iter.sum() < full.restart_n_iter.sum()


@pytest.mark.parametrize("kind", ["lc", "hlc", "dag"])
def test_squarem_reaches_the_plain_em_fixed_point_in_fewer_iterations(small_models, kind):
    structure, data = small_models[kind]
    plain = lcb.em(structure, data, restarts=2, seed=3, tol=1e-9, max_iter=5000,
                   algorithm="em")
    fast = lcb.em(structure, data, restarts=2, seed=3, tol=1e-9, max_iter=5000)
    assert plain.restart_converged.all() and fast.restart_converged.all()
    # the same maximum; plain EM crawls along a flat ridge and stops a little short of it
    assert plain.loglik - 1e-7 <= fast.loglik <= plain.loglik + 1e-3
    # a SQUAREM cycle costs at most three E steps
    assert 3 * fast.restart_n_iter.sum() < plain.restart_n_iter.sum()
    assert np.diff(fast.history).min() >= -1e-9 * abs(fast.loglik)


def test_a_fit_stopped_at_the_iteration_cap_warns(carcinoma):
    structure = lcb.latent_class(carcinoma, 3)
    with pytest.warns(lcb.ConvergenceWarning, match="EM stopped at max_iter=3"):
        fit = lcb.em(structure, carcinoma, restarts=2, max_iter=3)
    assert not fit.converged
    with pytest.warns(lcb.ConvergenceWarning, match="VBEM stopped at max_iter=3"):
        lcb.vbem(structure, carcinoma, restarts=2, max_iter=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", lcb.ConvergenceWarning)
        assert lcb.em(structure, carcinoma, restarts=2).converged
