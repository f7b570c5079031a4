"""Fit indices and classification quality (lcbayes.indices) against printed poLCA, Mplus and LEM
output, hand computations and an independent NumPy implementation of poLCA's formulas.

Printed references (the fitted model is the same maximum: its log-likelihood is checked too):

* carcinoma, K = 2 and 3: poLCA 1.6 output reproduced in the reference page of
  ``poLCA_result`` of the R package kamaken (GitHub Sickle-Sword/kamaken);
* values, K = 2: poLCA output in broom's ``glance.poLCA`` reference
  (https://broom.tidymodels.org/reference/glance.poLCA.html); K = 3: poLCA's example output
  quoted in https://stats.stackexchange.com/questions/287812;
* gss82: K = 1, Mplus 4.2 (same G^2, X^2 and df as poLCA for complete data) on the UCLA page
  https://stats.oarc.ucla.edu/mplus/examples/alca/ (McCutcheon 1987, Table 3.2); K = 3:
  poLCA 1.6.0.2 run here (R 4.2.2, Debian's r-base-core, poLCA built from its CRAN sources,
  ``nrep = 30, tol = 1e-12``): llik -2754.545405, Gsq 21.89202012, Chisq 23.53220512, df 15;
* Dayton's pleural thickening table (2 classes, saturated): Mplus' entropy 0.949, AIC, BIC and
  sample-size-adjusted BIC and LEM's estimates, X^2 = L^2 = 0, df = 0, on the UCLA pages
  http://www.ats.ucla.edu/stat/MPlus/examples/lc_scaling_analysis/mplus.htm and
  http://www.ats.ucla.edu/stat/lem/examples/lc_scaling_analysis/lem.htm.
"""

from __future__ import annotations

import itertools
import json
import math
import warnings

import numpy as np
import pytest

import lcbayes as lcb
from lcbayes.errors import ArgumentError
from lcbayes.indices import (
    bivariate_residuals,
    classification_quality,
    fit_indices,
    goodness_of_fit,
    information_criteria,
)

from .conftest import data_csv

#: (file, K): (loglik, G^2, X^2, df) as printed.
PRINTED = {
    ("carcinoma.csv", 2): (-317.2568, 62.36543, 92.64814, 103),
    ("carcinoma.csv", 3): (-293.705, 15.26171, 20.50335, 95),
    ("values.csv", 2): (-504.4677, 2.719922, 2.719764, 6),
    ("values.csv", 3): (-503.3011, 0.3868563, 0.4225484, 1),
    ("gss82.csv", 1): (-2872.230, 257.260, 368.666, 29),  # Mplus
    ("gss82.csv", 3): (-2754.545, 21.89202, 23.53221, 15),  # poLCA run here
}

_FITS: dict = {}


def _fit(name: str, k: int):
    if (name, k) not in _FITS:
        data = lcb.Dataset.from_csv(data_csv(name))
        _FITS[name, k] = data, lcb.em(lcb.latent_class(data, k), data, restarts=20, seed=0,
                                      tol=1e-12, max_iter=20000)
    return _FITS[name, k]


def _polca_statistics(structure, params, data) -> tuple[float, float, float, int]:
    """poLCA's ``Gsq``, ``Chisq`` and ``resid.df`` (R/poLCA.R) recomputed from the parameters
    with plain NumPy, plus Pearson's statistic summed over every cell of the full table."""
    pi = np.asarray(params[structure.nodes[structure.root]])
    thetas = [np.asarray(params[c]) for c in data.columns]
    cards = [t.shape[1] for t in thetas]

    def prob(cell):
        return sum(pi[c] * math.prod(t[c, y] for t, y in zip(thetas, cell, strict=True))
                   for c in range(pi.size))

    complete = data.codes[(data.codes >= 0).all(axis=1)]
    cells, freq = np.unique(complete, axis=0, return_counts=True)
    n_c = complete.shape[0]
    fit = n_c * np.array([prob(cell) for cell in cells])
    gsq = 2.0 * np.sum(freq * np.log(freq / fit))
    chisq = np.sum((freq - fit) ** 2 / fit) + (n_c - fit.sum())
    seen = {tuple(c): f for c, f in zip(cells.tolist(), freq, strict=True)}
    full = sum((seen.get(cell, 0) - n_c * prob(cell)) ** 2 / (n_c * prob(cell))
               for cell in itertools.product(*(range(r) for r in cards)) if prob(cell) > 0)
    npar = pi.size * sum(r - 1 for r in cards) + pi.size - 1
    n = int((data.codes >= 0).any(axis=1).sum())
    return gsq, chisq, full, min(n, math.prod(cards) - 1) - npar


def _rowwise_quality(post: np.ndarray):
    """Relative entropy, modal counts and the mean-posterior table from ``(n, K)`` posteriors."""
    n, k = post.shape
    entropy = -np.sum(post * np.log(np.where(post > 0, post, 1.0)))
    modal = post.argmax(axis=1)
    table = np.array([post[modal == c].mean(axis=0) if (modal == c).any() else np.full(k, np.nan)
                      for c in range(k)])
    return 1.0 - entropy / (n * math.log(k)), np.bincount(modal, minlength=k), table


def _lc_params(pi, thetas) -> dict:
    return {"class": np.asarray(pi, dtype=float),
            **{f"X{j + 1}": np.asarray(t, dtype=float) for j, t in enumerate(thetas)}}


# ---------------------------------------------------------------------- printed references
@pytest.mark.parametrize(("name", "k"), list(PRINTED))
def test_g2_chi2_and_df_equal_the_printed_values(name, k):
    data, fit = _fit(name, k)
    loglik, g2, chi2, df = PRINTED[name, k]
    assert fit.loglik == pytest.approx(loglik, abs=1e-3)
    gsq, chisq, full, resid_df = _polca_statistics(fit.structure, fit.params, data)
    assert chisq == pytest.approx(full, rel=1e-10)  # poLCA's X^2 is Pearson's over all cells
    assert resid_df == df
    assert gsq == pytest.approx(g2, abs=1e-3)
    assert chisq == pytest.approx(chi2, abs=1e-3)
    gof = goodness_of_fit(fit.structure, fit.params, data)
    assert gof.g2 == pytest.approx(gsq, rel=1e-9, abs=1e-9)
    assert gof.chi2 == pytest.approx(chisq, rel=1e-9, abs=1e-9)
    assert gof.df == df and gof.n_complete_rows == gof.n_rows == data.n_rows
    assert gof.n_cells == math.prod(data.cardinalities)
    assert gof.n_observed_cells == data.n_patterns


def test_sparse_tables_are_noted():
    data, fit = _fit("carcinoma.csv", 2)
    gof = goodness_of_fit(fit.structure, fit.params, data)
    assert gof.share_is_exact and gof.share_expected_below_5 > 0.9  # 118 rows in 128 cells
    assert "expect fewer than 5" in gof.note and "unreliable" in gof.note
    assert 0.0 <= gof.p_value_g2 <= 1.0 and 0.0 <= gof.p_value_chi2 <= 1.0


def test_pleural_thickening_matches_mplus_and_lem():
    counts = [1513, 23, 59, 12, 21, 19, 11, 34]  # A, B, C = 1/2, the last varying fastest
    rows = [cell for cell, c in zip(itertools.product((0, 1), repeat=3), counts, strict=True)
            for _ in range(c)]
    data = lcb.Dataset.from_codes(np.array(rows), columns=["A", "B", "C"], labels=[(1, 2)] * 3)
    fit = lcb.em(lcb.latent_class(data, 2), data, restarts=10, seed=0, tol=1e-12,
                 max_iter=20000)
    assert fit.loglik == pytest.approx(-891.14280, abs=1e-4)  # LEM
    big = int(np.argmax(fit.params["class"]))
    assert fit.params["class"][big] == pytest.approx(0.9455, abs=1e-4)
    assert fit.params["A"][big, 0] == pytest.approx(0.9900, abs=1e-4)
    assert fit.params["C"][1 - big, 0] == pytest.approx(0.2350, abs=1e-4)
    quality = classification_quality(fit.structure, fit.params, data)
    assert quality.entropy_r2 == pytest.approx(0.949, abs=5e-4)  # Mplus "Entropy"
    ic = information_criteria(fit.loglik, fit.n_parameters, data.n_rows)
    assert -2 * ic["aic"] == pytest.approx(1796.286, abs=1e-3)
    assert -2 * ic["bic"] == pytest.approx(1834.321, abs=1e-3)
    assert -2 * ic["abic"] == pytest.approx(1812.083, abs=1e-3)  # Mplus, n* = (n + 2) / 24
    gof = goodness_of_fit(fit.structure, fit.params, data)  # saturated: reproduces the data
    assert gof.g2 == pytest.approx(0.0, abs=1e-6) and gof.chi2 == pytest.approx(0.0, abs=1e-6)
    assert gof.df == 0 and math.isnan(gof.p_value_g2) and "df = 0" in gof.note


# ---------------------------------------------------------------------- formulas by hand
def test_information_criteria_by_hand():
    ic = information_criteria(-100.0, 5, 46)
    assert ic["abic"] == pytest.approx(-100.0 - 2.5 * math.log(2.0))  # n* = 48 / 24
    assert ic["caic"] == pytest.approx(-100.0 - 2.5 * (math.log(46) + 1.0))
    assert ic["bic"] == pytest.approx(-100.0 - 2.5 * math.log(46))
    assert ic["aic"] == pytest.approx(-105.0)
    mplus = information_criteria(-2872.230, 6, 1202)  # gss82, one class (Mplus, UCLA)
    assert -2 * mplus["abic"] == pytest.approx(5767.951, abs=2e-3)
    assert -2 * mplus["bic"] == pytest.approx(5787.010, abs=2e-3)
    for bad in ({"n_rows": 0}, {"n_rows": 2.5}, {"n_parameters": -1}):
        args = {"loglik": -1.0, "n_parameters": 1, "n_rows": 10, **bad}
        with pytest.raises(ArgumentError, match=next(iter(bad))):
            information_criteria(**args)


def test_g2_and_chi2_vanish_when_the_model_reproduces_the_counts():
    # pi = (1/2, 1/2), class 1 uniform, class 2 P(second category) = 3/4 on three items:
    # 128 P(cell) = 8 + 3^m with m items in their second category, an integer table.
    pi, thetas = [0.5, 0.5], [[[0.5, 0.5], [0.25, 0.75]]] * 3
    rows = [cell for cell in itertools.product((0, 1), repeat=3) for _ in range(8 + 3 ** sum(cell))]
    data = lcb.Dataset.from_codes(np.array(rows))
    structure = lcb.latent_class(data, 2)
    gof = goodness_of_fit(structure, _lc_params(pi, thetas), data)
    assert data.n_rows == 128
    assert gof.g2 == pytest.approx(0.0, abs=1e-10) and gof.chi2 == pytest.approx(0.0, abs=1e-10)
    assert gof.df == 7 - 7 and gof.share_expected_below_5 == 0.0


# ---------------------------------------------------------------------- classification
def test_entropy_r2_is_one_for_separated_classes_and_zero_for_identical_ones():
    data = lcb.Dataset.from_codes(np.array([[0, 0, 0]] * 30 + [[1, 1, 1]] * 10))
    structure = lcb.latent_class(data, 2)
    separated = _lc_params([0.75, 0.25], [[[1.0, 0.0], [0.0, 1.0]]] * 3)
    q = classification_quality(structure, separated, data)
    assert q.entropy == pytest.approx(0.0, abs=1e-12) and q.entropy_r2 == pytest.approx(1.0)
    np.testing.assert_allclose(q.classification_table, np.eye(2), atol=1e-12)
    np.testing.assert_allclose(q.average_posterior, [1.0, 1.0])
    assert q.modal_counts.tolist() == [30, 10] and q.smallest_modal_share == pytest.approx(0.25)
    identical = _lc_params([0.5, 0.5], [[[0.7, 0.3], [0.7, 0.3]]] * 3)
    q = classification_quality(structure, identical, data)
    assert q.entropy_r2 == pytest.approx(0.0, abs=1e-12)
    assert q.modal_counts.tolist() == [40, 0]  # ties go to the first class, as in poLCA
    assert np.isnan(q.average_posterior[1]) and np.isnan(q.classification_table[1]).all()
    assert q.smallest_class_share == 0.5 and q.smallest_modal_share == 0.0
    one = classification_quality(lcb.latent_class(data, 1), _lc_params([1.0], [[[0.75, 0.25]]] * 3),
                                 data)
    assert one.entropy_r2 == 1.0


def test_classification_quality_matches_row_by_row_posteriors():
    data, fit = _fit("carcinoma.csv", 3)
    post = lcb.hidden_posteriors(fit.structure, fit.params, data)["class"]
    r2, modal_counts, table = _rowwise_quality(post)
    q = classification_quality(fit.structure, fit.params, data)
    assert q.entropy == pytest.approx(fit.entropy, rel=1e-9)
    assert q.entropy_r2 == pytest.approx(r2, rel=1e-9)
    assert q.modal_counts.tolist() == modal_counts.tolist()
    np.testing.assert_allclose(q.classification_table, table, atol=1e-12)
    np.testing.assert_allclose(q.classification_counts.sum(axis=1), modal_counts)
    np.testing.assert_allclose(q.classification_counts.sum(axis=0), post.sum(axis=0))
    # poLCA prints "predicted class memberships" 0.4322 0.3729 0.1949 (classes by share)
    np.testing.assert_allclose(q.modal_shares, [0.4322, 0.3729, 0.1949], atol=1e-4)
    assert q.smallest_class_share == pytest.approx(0.1817, abs=1e-4)


# ---------------------------------------------------------------------- missing values
def test_missing_values_complete_rows_for_g2_every_row_elsewhere():
    rng = np.random.default_rng(5)
    pi, thetas = [0.6, 0.4], [[[0.8, 0.2], [0.3, 0.7]], [[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]],
                              [[0.9, 0.1], [0.4, 0.6]], [[0.6, 0.4], [0.2, 0.8]]]
    classes = rng.random(400) < pi[1]
    codes = np.stack([(rng.random((400, 1)) > np.cumsum(np.asarray(t)[classes.astype(int)],
                                                        axis=1)).sum(axis=1)
                      for t in thetas], axis=1)
    codes[rng.random(codes.shape) < 0.15] = -1
    codes[0] = -1  # a row with nothing observed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = lcb.Dataset.from_codes(codes, cardinalities=[2, 3, 2, 2])
    params = _lc_params(pi, thetas)
    structure = lcb.latent_class(data, 2)
    complete = (codes >= 0).all(axis=1)
    only_complete = lcb.Dataset.from_codes(codes[complete], cardinalities=[2, 3, 2, 2])
    gof = goodness_of_fit(structure, params, data)
    ref = goodness_of_fit(structure, params, only_complete)
    n_obs = int((codes >= 0).any(axis=1).sum())
    assert data.n_observed_rows == n_obs < data.n_rows
    assert gof.n_complete_rows == ref.n_rows == complete.sum() < gof.n_rows == n_obs
    assert gof.g2 == pytest.approx(ref.g2, rel=1e-12) and gof.chi2 == pytest.approx(ref.chi2)
    gsq, chisq, _, df = _polca_statistics(structure, params, data)
    assert gof.g2 == pytest.approx(gsq) and gof.chi2 == pytest.approx(chisq) and gof.df == df
    assert f"use the {complete.sum()} complete rows of {n_obs}" in gof.note
    q = classification_quality(structure, params, data)
    post = lcb.hidden_posteriors(structure, params, data)["class"][(codes >= 0).any(axis=1)]
    r2, _, table = _rowwise_quality(post)
    assert q.n_rows == n_obs and q.entropy_r2 == pytest.approx(r2)
    np.testing.assert_allclose(q.classification_table, table, atol=1e-12)
    frame = bivariate_residuals(structure, params, data)
    pair = frame[(frame.item_a == "X2") & (frame.item_b == "X4")].iloc[0]
    both = (codes[:, 1] >= 0) & (codes[:, 3] >= 0)
    observed = np.zeros((3, 2))
    np.add.at(observed, (codes[both, 1], codes[both, 3]), 1)
    joint = sum(p * np.outer(thetas[1][c], thetas[3][c]) for c, p in enumerate(pi))
    expected = both.sum() * joint
    assert pair.n_rows == both.sum() and pair.df == 2
    assert pair.chi2 == pytest.approx(np.sum((observed - expected) ** 2 / expected))
    assert pair.bvr == pytest.approx(pair.chi2 / 2)


# ---------------------------------------------------------------------- bivariate residuals
def test_bivariate_residuals_small_under_the_model_large_for_a_dependent_pair():
    data = lcb.Dataset.from_codes(np.array([[0] * 5, [1] * 5]))
    structure = lcb.latent_class(data, 2)
    params = _lc_params([0.4, 0.6], [[[0.85, 0.15], [0.2, 0.8]]] * 5)
    sim = lcb.simulate(structure, params, 20_000, seed=1)
    frame = bivariate_residuals(structure, params, sim)
    assert len(frame) == 10 and (frame.df == 1).all() and (frame.n_rows == 20_000).all()
    assert frame.bvr.max() < 12 and 0.1 < frame.bvr.mean() < 3  # about chi-squared(1)
    assert (frame.chi2 / frame.n_rows).max() < 1e-3
    codes = np.array(sim.codes)
    copy = np.random.default_rng(0).random(20_000) < 0.5
    codes[copy, 4] = codes[copy, 0]  # X5 copies X1 half of the time
    dependent = bivariate_residuals(structure, params, lcb.Dataset.from_codes(codes))
    worst = dependent.loc[dependent.bvr.idxmax()]
    assert (worst.item_a, worst.item_b) == ("X1", "X5") and worst.bvr > 100


# ---------------------------------------------------------------------- other structures, API
def test_hlc_fit_indices_through_the_inference_core():
    data, _ = _fit("carcinoma.csv", 2)
    structure = lcb.hlc(data, {"H": ["H1", "A", "B", "C"], "H1": ["D", "E", "F", "G"]},
                        {"H": 2, "H1": 2})
    params = lcb.random_params(structure, seed=3)
    gof = goodness_of_fit(structure, params, data)
    saturated = float(data.counts @ np.log(data.counts / data.n_rows))
    loglik = lcb.log_likelihood(structure, params, data)
    assert gof.g2 == pytest.approx(2 * (saturated - loglik), rel=1e-9)
    assert gof.df == min(118, 127) - structure.n_parameters
    q = classification_quality(structure, params, data)
    post = lcb.hidden_posteriors(structure, params, data)["H"]
    r2, modal_counts, _ = _rowwise_quality(post)
    assert q.entropy_r2 == pytest.approx(r2) and q.modal_counts.tolist() == modal_counts.tolist()
    with pytest.raises(ArgumentError, match="hidden node"):
        classification_quality(structure, params, data, node="A")


def test_fit_indices_are_json_ready():
    data, fit = _fit("values.csv", 2)
    out = json.loads(json.dumps(fit_indices(fit, data)))
    assert set(out) == {"aic", "bic", "abic", "caic", "goodness_of_fit", "classification",
                        "bivariate_residuals"}
    assert out["bic"] == pytest.approx(fit.bic)
    assert out["goodness_of_fit"]["g2"] == pytest.approx(2.719922, abs=1e-5)
    assert len(out["classification"]["classification_table"]) == 2
    assert len(out["bivariate_residuals"]) == 6
