"""Standard errors of EM estimates: poLCA's formula, closed forms, the Fisher identity, finite
differences, a parametric bootstrap, and the warnings.

Two poLCA comparisons at the same optimum (whose log-likelihood and class shares equal poLCA's):
``probs.se`` / ``P.se`` as poLCA 1.6.0.2 printed them (:data:`POLCA_OUTPUT`), and an independent
NumPy transcription of ``poLCA.se`` (``R/poLCA.se.R``), row by row as poLCA computes it.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.linalg import block_diag
from scipy.optimize import linear_sum_assignment

import lcbayes as lcb
from lcbayes.errors import ArgumentError
from lcbayes.information import (
    StandardErrorWarning,
    boundary_entries,
    covariance,
    fit_standard_errors,
    information,
    standard_errors,
)

from .conftest import data_csv

#: poLCA's factor levels of gss82 (its first level is the reference category).
GSS82_LEVELS = {
    "PURPOSE": ("Good", "Depends", "Waste of time"),
    "ACCURACY": ("Mostly true", "Not true"),
    "UNDERSTA": ("Good", "Fair/Poor"),
    "COOPERAT": ("Interested", "Cooperative", "Impatient"),
}

#: The global maxima poLCA reports: carcinoma K = 2 (poLCA 1.6) and gss82 K = 3
#: (poLCA user's manual, section 5.7, Table 1: llik -2754.545, shares 0.621, 0.172, 0.207;
#: lcbayes orders classes by decreasing share).
POLCA_OPTIMA = {
    ("carcinoma.csv", 2): (-317.2568, None),
    ("gss82.csv", 3): (-2754.545, (0.621, 0.207, 0.172)),
}


#: ``probs.se`` and ``P.se`` printed by poLCA 1.6.0.2 (R 4.2.2, Debian's r-base-core; poLCA built
#: from its CRAN sources) for ``poLCA(f, carcinoma, nclass = 2)`` and ``poLCA(f, gss82, nclass =
#: 3)`` with ``nrep = 20 / 30, tol = 1e-12`` (log-likelihoods -317.2568373 and -2754.545405),
#: rows in poLCA's class order; ``order[i]``: the poLCA class that is lcbayes's class i (lcbayes
#: orders classes by decreasing share). Entries EM put on the boundary print as ~0.
POLCA_OUTPUT = {
    ("carcinoma.csv", 2): {
        "order": (1, 0),
        "class": (0.04633576285, 0.04633576285),
        "A": ((0.04509218831, 0.04509218831), (0.0, 0.0)),
        "B": ((0.08283463483, 0.08283463483), (0.01706440018, 0.01706440018)),
        "C": ((0.0, 0.0), (0.05886991894, 0.05886991894)),
        "D": ((0.0, 0.0), (0.07202397305, 0.07202397305)),
        "E": ((0.06809303616, 0.06809303616), (0.02163373312, 0.02163373312)),
        "F": ((0.0, 0.0), (0.07078141075, 0.07078141075)),
        "G": ((0.05151675343, 0.05151675343), (0.0, 0.0)),
    },
    ("gss82.csv", 3): {
        "order": (2, 0, 1),
        "class": (0.05193979854, 0.03505837412, 0.04554030097),
        "PURPOSE": ((0.03933720572, 0.02507975812, 0.02451421247),
                    (0.10817543421, 0.04478866497, 0.09210310038),
                    (0.02021632682, 0.01158938562, 0.01568852712)),
        "ACCURACY": ((0.05150633933, 0.05150633933), (0.06190830047, 0.06190830047),
                     (0.02406711921, 0.02406711921)),
        "UNDERSTA": ((0.1530199823, 0.1530199823), (0.03855894869, 0.03855894869),
                     (0.0, 0.0)),
        "COOPERAT": ((0.03704511626, 0.03476230127, 0.01876833030),
                     (0.04310271957, 0.03668240547, 0.02511189691),
                     (0.01861282022, 0.01861282022, 0.0)),
    },
}


def _mass_ginv(matrix):
    """``MASS::ginv``: singular values ``<= sqrt(eps) * d_max`` dropped."""
    u, d, vt = np.linalg.svd(matrix)
    keep = d > np.sqrt(np.finfo(float).eps) * d[0]
    return vt[keep].T @ np.diag(1 / d[keep]) @ u[:, keep].T


def polca_se(structure, params, data):
    """``poLCA.se`` without covariates, transcribed: one score row per data row."""
    items = list(structure.observed_names)
    shares = np.asarray(params[structure.nodes[structure.root]], dtype=float)
    probs = [np.asarray(params[n], dtype=float) for n in items]
    codes = structure.check_data(data).codes
    n, classes = codes.shape[0], shares.size
    with np.errstate(divide="ignore"):
        log_joint = np.tile(np.log(shares), (n, 1))
        for j, p in enumerate(probs):
            seen = codes[:, j] >= 0
            log_joint[seen] += np.log(p[:, codes[seen, j]]).T
    rgivy = np.exp(log_joint - log_joint.max(axis=1, keepdims=True))
    rgivy /= rgivy.sum(axis=1, keepdims=True)
    columns = []
    for r in range(classes):
        for j, p in enumerate(probs):
            y = np.zeros((n, p.shape[1]))
            seen = codes[:, j] >= 0
            y[np.flatnonzero(seen), codes[seen, j]] = 1
            s = rgivy[:, [r]] * (y[:, 1:] - p[r, 1:])
            s[~seen] = 0  # poLCA: s[is.na(s)] <- 0
            columns.append(s)
    columns += [(rgivy[:, [r]] - shares[r]) for r in range(1, classes)]
    scores = np.hstack(columns)
    vce = _mass_ginv(scores.T @ scores)
    n_lo = sum(classes * (p.shape[1] - 1) for p in probs)
    blocks = []
    for r in range(classes):
        for p in probs:
            jsub = -np.outer(p[r], p[r])
            np.fill_diagonal(jsub, p[r] * (1 - p[r]))
            blocks.append(jsub[:, 1:])
    jac = block_diag(*blocks)
    main = np.diag(jac @ vce[:n_lo, :n_lo] @ jac.T).copy()
    main[main < 0] = 0
    flat = np.sqrt(main)
    out, pos = {n: np.zeros_like(p) for n, p in zip(items, probs, strict=True)}, 0
    for r in range(classes):
        for name, p in zip(items, probs, strict=True):
            out[name][r] = flat[pos:pos + p.shape[1]]
            pos += p.shape[1]
    mix = (np.diag(shares) - np.outer(shares, shares))[:, 1:]
    out[structure.nodes[structure.root]] = np.sqrt(np.diag(mix @ vce[n_lo:, n_lo:] @ mix.T))
    return out


@pytest.mark.parametrize(("name", "k"), list(POLCA_OPTIMA))
def test_empirical_standard_errors_are_polcas(name, k):
    data = lcb.Dataset.from_csv(data_csv(name))
    if name == "gss82.csv":
        data = data.with_categories(GSS82_LEVELS)
    structure = lcb.latent_class(data, k)
    fit = lcb.em(structure, data, restarts=20, seed=0, tol=1e-12, max_iter=20000)
    loglik, shares = POLCA_OPTIMA[(name, k)]
    assert fit.loglik == pytest.approx(loglik, abs=1e-3)  # poLCA's optimum
    if shares is not None:
        np.testing.assert_allclose(fit.class_weights, shares, atol=1e-3)
    with pytest.warns(StandardErrorWarning, match="on the boundary"):  # both fits have zeros
        se = fit_standard_errors(fit, data)
    reference = polca_se(structure, fit.params, data)
    assert se.keys() == fit.params.keys()
    for node, value in se.items():
        assert value.shape == np.shape(fit.params[node])
        np.testing.assert_allclose(value, reference[node], rtol=1e-6, atol=1e-9, err_msg=node)
    assert min(v.max() for v in se.values()) > 0.01  # not all zero: a real comparison
    # the entries EM drove to 0 (and their two-category partners) have standard error ~0
    at_zero = boundary_entries(structure, fit.params)
    assert at_zero
    for node in structure.observed_names:
        p = np.asarray(fit.params[node])
        on_edge = p < 1e-6
        if p.shape[1] == 2:
            on_edge = on_edge | on_edge[:, ::-1]
        assert np.all(se[node][on_edge] < 1e-6), node


@pytest.mark.parametrize(("name", "k"), list(POLCA_OUTPUT))
def test_empirical_standard_errors_equal_polcas_printed_ones(name, k):
    """Within 2 % of poLCA's printed ``probs.se`` / ``P.se`` (absolute 1e-6 where ~0)."""
    data = lcb.Dataset.from_csv(data_csv(name))
    if name == "gss82.csv":
        data = data.with_categories(GSS82_LEVELS)
    fit = lcb.em(lcb.latent_class(data, k), data, restarts=20, seed=0, tol=1e-12,
                 max_iter=20000)
    with pytest.warns(StandardErrorWarning):
        se = fit_standard_errors(fit, data)
    printed = POLCA_OUTPUT[name, k]
    order = list(printed["order"])
    for node, value in se.items():
        reference = np.asarray(printed[node])[order]
        tiny = reference < 1e-6
        np.testing.assert_allclose(value[~tiny], reference[~tiny], rtol=0.02, err_msg=node)
        assert np.all(value[tiny] < 1e-6), node


def test_interior_fit_gives_no_warning_and_any_reference_category():
    """values.csv, 2 classes: an interior maximum; reversing every item's categories changes
    the reference category and leaves the probabilities' standard errors as they were."""
    data = lcb.Dataset.from_csv(data_csv("values.csv"))
    structure = lcb.latent_class(data, 2)
    fit = lcb.em(structure, data, restarts=10, seed=0, tol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        se = standard_errors(structure, fit.params, data)
    flipped_data = data.with_categories({c: tuple(reversed(lab))
                                         for c, lab in structure.categories().items()})
    flipped = lcb.latent_class(flipped_data, 2)
    params = {n: (v if n == "class" else v[:, ::-1]) for n, v in fit.params.items()}
    se_flipped = standard_errors(flipped, params, flipped_data)
    for node, value in se.items():
        back = se_flipped[node] if node == "class" else se_flipped[node][:, ::-1]
        np.testing.assert_allclose(value, back, rtol=1e-7, err_msg=node)
    np.testing.assert_allclose(se["class"], polca_se(structure, fit.params, data)["class"],
                               rtol=1e-7)


@pytest.mark.parametrize("method", ["empirical", "observed"])
def test_independence_model_has_binomial_standard_errors(method):
    """One class: every item's probabilities are its observed frequencies, with standard errors
    ``sqrt(p (1 - p) / n_j)`` (``n_j`` the rows where the item is observed). Every row observes
    one item only, so that the empirical information has no cross-item terms either (the
    observed one never has)."""
    rng = np.random.default_rng(0)
    cards = (2, 3, 4)
    codes = np.stack([rng.integers(0, c, 600) for c in cards], axis=1)
    shown = rng.integers(0, 3, 600)
    codes[np.arange(3)[None, :] != shown[:, None]] = -1
    data = lcb.Dataset.from_codes(codes, cardinalities=cards)
    structure = lcb.latent_class(data, 1)
    params = {"class": np.ones(1)}
    for j, name in enumerate(structure.observed_names):
        seen = codes[codes[:, j] >= 0, j]
        params[name] = (np.bincount(seen, minlength=cards[j]) / seen.size)[None, :]
    se = standard_errors(structure, params, data, method=method)
    for j, name in enumerate(structure.observed_names):
        p, n_j = params[name], (codes[:, j] >= 0).sum()
        np.testing.assert_allclose(se[name], np.sqrt(p * (1 - p) / n_j), rtol=1e-9)
    assert se["class"].tolist() == [0.0]


@pytest.fixture(scope="module")
def small_models():
    """An HLC and a DAG fitted to data simulated from them with 10% missing values."""
    rng = np.random.default_rng(0)
    cards = (2, 3, 2, 3, 2, 2)
    base = lcb.Dataset.from_codes(np.stack([rng.integers(0, c, 60) for c in cards], axis=1),
                                  cardinalities=cards)
    cols = base.columns
    structures = {
        "hlc": lcb.hlc(base, {"H": ["H1", cols[0], cols[1]], "H1": list(cols[2:])},
                       {"H": 2, "H1": 2}),
        "dag": lcb.dag(base, {cols[0]: ["s1"], cols[1]: ["s1", "s2"], cols[2]: ["s2", cols[0]],
                              cols[3]: ["s2"], cols[4]: ["s1"], cols[5]: [cols[4]]},
                       {"s1": 2, "s2": 2}),
    }
    out = {}
    for name, structure in structures.items():
        data = lcb.simulate(structure, lcb.random_params(structure, seed=7), n=600, seed=3,
                            missing=0.1)
        fit = lcb.em(structure, data, restarts=4, seed=0, tol=1e-12, max_iter=5000)
        out[name] = (structure, data, fit)
    return out


def _fisher_scores(structure, params, data):
    """Per-pattern scores in the log-ratio basis from the E step's family posteriors (Fisher's
    identity), no autodiff: ``F_plk - p_lk sum_k' F_plk'``, reference category first."""
    family = lcb.family_posteriors(structure, params, data)
    columns = []
    for name in structure.nodes:
        r = np.shape(params[name])[-1]
        f = family[name].reshape(family[name].shape[0], -1, r)
        p = np.asarray(params[name]).reshape(-1, r)
        g = f - p[None] * f.sum(axis=2, keepdims=True)
        columns.append(g[:, :, 1:].reshape(g.shape[0], -1))
    return np.hstack(columns)


def _softmax_jacobian(structure, params):
    blocks = []
    for name in structure.nodes:
        p = np.asarray(params[name])
        for row in p.reshape(-1, p.shape[-1]):
            blocks.append((np.diag(row) - np.outer(row, row))[:, 1:])
    return block_diag(*blocks)


@pytest.mark.parametrize("kind", ["hlc", "dag"])
def test_empirical_information_is_the_fisher_identitys(small_models, kind):
    structure, data, fit = small_models[kind]
    checked = structure.check_data(data)
    scores = _fisher_scores(structure, fit.params, checked)
    info = (scores * checked.counts[:, None]).T @ scores
    ours, score, jacobian = information(structure, fit.params, data)
    np.testing.assert_allclose(ours, info, rtol=1e-8, atol=1e-8 * np.abs(info).max())
    np.testing.assert_allclose(jacobian, _softmax_jacobian(structure, fit.params), atol=1e-12)
    assert np.abs(score).max() < 1e-4  # a maximum
    jac = _softmax_jacobian(structure, fit.params)
    expected = np.sqrt(np.maximum(np.diag(jac @ _mass_ginv(info) @ jac.T), 0))
    se = standard_errors(structure, fit.params, data, warn=False)  # the DAG has zeros
    got = np.concatenate([np.ravel(se[n]) for n in structure.nodes])
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("kind", ["hlc", "dag"])
def test_observed_information_is_a_finite_difference_of_the_score(small_models, kind):
    """The Hessian by autodiff against central differences of the total score (expected
    counts of the E step, Fisher's identity) in the log-ratio basis."""
    structure, data, fit = small_models[kind]
    shapes = [np.shape(fit.params[n]) for n in structure.nodes]

    def unpack(beta):
        params, pos = {}, 0
        for name, shape in zip(structure.nodes, shapes, strict=True):
            r = shape[-1]
            free = beta[pos:pos + int(np.prod(shape[:-1])) * (r - 1)].reshape(-1, r - 1)
            pos += free.size
            u = np.hstack([np.zeros((free.shape[0], 1)), free])
            e = np.exp(u - u.max(axis=1, keepdims=True))
            params[name] = (e / e.sum(axis=1, keepdims=True)).reshape(shape)
        return params

    def total_score(beta):
        params = unpack(beta)
        counts = lcb.expected_counts(structure, params, data)
        return np.concatenate([
            (c.reshape(-1, c.shape[-1]) - p.reshape(-1, c.shape[-1])
             * c.reshape(-1, c.shape[-1]).sum(axis=1, keepdims=True))[:, 1:].ravel()
            for c, p in ((counts[n], params[n]) for n in structure.nodes)])

    beta0 = np.concatenate([
        (np.log(p.reshape(-1, p.shape[-1])[:, 1:]) - np.log(p.reshape(-1, p.shape[-1])[:, :1]))
        .ravel() for p in (np.asarray(fit.params[n]) for n in structure.nodes)])
    h = 1e-5
    hess = np.stack([(total_score(beta0 + h * e) - total_score(beta0 - h * e)) / (2 * h)
                     for e in np.eye(beta0.size)], axis=1)
    info, _, _ = information(structure, fit.params, data, "observed")
    np.testing.assert_allclose(info, -(hess + hess.T) / 2, rtol=1e-5,
                               atol=1e-5 * np.abs(hess).max())


def test_covariance_rows_respect_the_sum_to_one_constraint(small_models):
    structure, data, fit = small_models["hlc"]
    cov = covariance(structure, fit.params, data)
    rows = np.repeat(np.arange(sum(int(np.prod(np.shape(fit.params[n])[:-1]))
                                   for n in structure.nodes)),
                     [np.shape(fit.params[n])[-1] for n in structure.nodes
                      for _ in range(int(np.prod(np.shape(fit.params[n])[:-1])))])
    indicator = (rows[:, None] == np.arange(rows.max() + 1)).astype(float)
    np.testing.assert_allclose(cov @ indicator, 0, atol=1e-12)


@pytest.fixture(scope="module")
def separated():
    """Three well-separated classes, six binary items, N = 2000, and the EM fit."""
    cards = (2,) * 6
    base = lcb.Dataset.from_codes(np.tile([[0], [1]], (1, 6)), cardinalities=cards)
    structure = lcb.latent_class(base, 3)
    high = np.array([[1, 1, 1, 1, 1, 1], [0, 0, 0, 1, 1, 1], [1, 1, 1, 0, 0, 0]])
    truth = {"class": np.array([0.5, 0.3, 0.2])}
    for j, name in enumerate(structure.observed_names):
        p = np.where(high[:, j] == 1, 0.85, 0.15)
        truth[name] = np.stack([1 - p, p], axis=1)
    data = lcb.simulate(structure, truth, 2000, seed=1)
    fit = lcb.em(structure, data, restarts=5, seed=0, tol=1e-10)
    return structure, data, fit


def _summary(structure, params, order=None):
    """Class shares then every item's P(category 2 | class), classes in ``order``."""
    order = np.arange(3) if order is None else order
    return np.concatenate([np.asarray(params["class"])[order],
                           *(np.asarray(params[n])[order, 1] for n in structure.observed_names)])


@pytest.mark.slow  # a parametric bootstrap of EM fits: 10-15 s
def test_standard_errors_match_a_parametric_bootstrap(separated):
    """The SD of 60 parametric-bootstrap refits (classes matched to the fit's) against the
    empirical-information standard errors: within 10% on average, every entry within 35% (the
    Monte Carlo error of an SD from 60 draws is about 9%)."""
    structure, data, fit = separated
    se = _summary(structure, standard_errors(structure, fit.params, data))
    target = np.stack([np.asarray(fit.params[n])[:, 1] for n in structure.observed_names], 1)
    draws = []
    for b in range(60):
        boot = lcb.simulate(structure, fit.params, 2000, seed=100 + b)
        refit = lcb.em(structure, boot, restarts=0, init=fit.params, tol=1e-10)
        got = np.stack([np.asarray(refit.params[n])[:, 1] for n in structure.observed_names], 1)
        rows, cols = linear_sum_assignment(((got[:, None] - target[None]) ** 2).sum(-1))
        draws.append(_summary(structure, refit.params, rows[np.argsort(cols)]))
    ratio = np.std(draws, axis=0, ddof=1) / se
    assert abs(ratio.mean() - 1) < 0.10, ratio
    assert np.all(np.abs(ratio - 1) < 0.35), ratio


def test_empirical_and_observed_agree_on_a_large_well_specified_fit(separated):
    structure, data, fit = separated
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        empirical = _summary(structure, standard_errors(structure, fit.params, data))
        observed = _summary(structure, standard_errors(structure, fit.params, data,
                                                       method="observed"))
    np.testing.assert_allclose(observed, empirical, rtol=0.05)


# ---------------------------------------------------------------------------- bad input
def test_a_fit_that_did_not_converge_is_refused(separated):
    structure, data, _ = separated
    fit = lcb.em(structure, data, restarts=1, seed=0, max_iter=2)
    assert not fit.converged
    with pytest.raises(ArgumentError, match="converged"):
        fit_standard_errors(fit, data)


def test_an_estimate_off_the_maximum_warns(separated):
    structure, data, fit = separated
    moved = {n: np.asarray(v).copy() for n, v in fit.params.items()}
    moved["class"] = np.array([0.4, 0.35, 0.25])
    with pytest.warns(StandardErrorWarning, match="not a maximum"):
        standard_errors(structure, moved, data)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        standard_errors(structure, moved, data, warn=False)


def test_a_map_fit_warns(separated):
    structure, data, _ = separated
    fit = lcb.em(structure, data, restarts=1, seed=0, prior=2.0)
    with pytest.warns(StandardErrorWarning, match="MAP"):
        fit_standard_errors(fit, data)


def test_a_saddle_point_warns():
    """Two identical classes at the items' margins: a stationary point (zero score) that is not
    a maximum; the observed information says so."""
    data = lcb.Dataset.from_csv(data_csv("values.csv"))
    structure = lcb.latent_class(data, 2)
    params = {"class": np.array([0.5, 0.5])}
    for j, name in enumerate(structure.observed_names):
        seen = data.codes[data.codes[:, j] >= 0, j]
        params[name] = np.tile(np.bincount(seen, minlength=2) / seen.size, (2, 1))
    with pytest.warns(StandardErrorWarning, match="saddle point"):
        standard_errors(structure, params, data, method="observed")


def test_bad_arguments_are_clear(separated):
    structure, data, fit = separated
    with pytest.raises(ArgumentError, match="method"):
        standard_errors(structure, fit.params, data, method="sandwich")
    broken = dict(fit.params, **{"class": np.array([0.5, 0.5, 0.5])})
    with pytest.raises(ArgumentError, match="not a table of probabilities"):
        standard_errors(structure, broken, data)
