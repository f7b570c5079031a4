"""Latent class regression (one step): poLCA 1.6.0.2's printed numbers, invariants, round trips
and bad input. The poLCA numbers are in benchmarks/oracles (made by the R scripts there)."""

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import lcbayes as lcb
from lcbayes.errors import ArgumentError, DataError

ORACLES = Path(__file__).parents[1] / "benchmarks" / "oracles"
ELECTION = Path(__file__).parent / "data" / "election.csv"
RATINGS = ["MORALG", "CARESG", "KNOWG", "LEADG", "DISHONG", "INTELG",
           "MORALB", "CARESB", "KNOWB", "LEADB", "DISHONB", "INTELB"]


def _oracle(file: str, key: str) -> dict:
    return json.loads((ORACLES / file).read_text())[key]


@pytest.fixture(scope="module")
def cheating():
    frame = lcb.datasets.frame("cheating")
    data = lcb.datasets.load("cheating")
    with pytest.warns(UserWarning, match="4 of 319 rows lack a covariate"):
        fit = lcb.em(lcb.latent_class(data, 2), data, covariates=frame[["GPA"]], restarts=10,
                     seed=0, tol=1e-11, standard_errors="empirical")
    return frame, data, fit


@pytest.fixture(scope="module")
def election():
    frame = pd.read_csv(ELECTION)
    data = lcb.Dataset.from_pandas(frame[RATINGS])
    with pytest.warns(UserWarning, match="25 of 1785 rows"):
        fit = lcb.em(lcb.latent_class(data, 3), data, covariates=frame[["PARTY"]],
                     restarts=10, seed=0, tol=1e-11, standard_errors="empirical")
    return frame, data, fit


def _check_against_polca(fit, oracle, items):
    assert fit.loglik == pytest.approx(oracle["llik"], abs=1e-4)
    assert fit.n_parameters == oracle["npar"]
    assert fit.resid_df == oracle["resid.df"]
    assert fit.n_used_rows == oracle["N"]
    assert -2 * fit.aic == pytest.approx(oracle["aic"], abs=2e-4)
    assert -2 * fit.bic == pytest.approx(oracle["bic"], abs=2e-4)
    np.testing.assert_allclose(fit.class_weights, oracle["P"], rtol=1e-3)
    np.testing.assert_allclose(fit.standard_errors["params"][fit.structure.nodes[0]],
                               oracle["P.se"], rtol=1e-3)
    for item in items:
        np.testing.assert_allclose(fit.params[item], oracle["probs"][item], rtol=1e-3,
                                   atol=1e-6)
        np.testing.assert_allclose(fit.standard_errors["params"][item],
                                   oracle["probs.se"][item], rtol=1e-3, atol=1e-6)
    np.testing.assert_allclose(fit.coef[:, 1:], oracle["coeff"], rtol=1e-3)
    np.testing.assert_allclose(fit.standard_errors["coef"][:, 1:], oracle["coeff.se"],
                               rtol=1e-3)


def test_cheating_gpa_equals_polca(cheating):
    _, data, fit = cheating
    _check_against_polca(fit, _oracle("01_polca_cheating.json", "cheating_gpa"), data.columns)
    assert list(fit.covariates.names) == ["(Intercept)", "GPA"]
    table = fit.coefficients()
    gpa = table[table.term == "GPA"].iloc[0]
    assert gpa.z == pytest.approx(gpa.estimate / gpa.se)
    assert gpa.p == pytest.approx(2 * (1 - 0.5 * (1 + math.erf(abs(gpa.z) / math.sqrt(2)))))
    assert gpa.odds_ratio == pytest.approx(math.exp(gpa.estimate))
    assert fit.score_statistic < 1e-6


def test_election_party_equals_polca_with_missing_ratings(election):
    _, _, fit = election
    _check_against_polca(fit, _oracle("02_polca_election.json", "election_party"), RATINGS)
    assert fit.n_rows == 1785 and fit.n_used_rows == 1760


def test_loglik_recomputed_independently(cheating):
    """The log-likelihood from the estimate by a plain NumPy sum over rows (no cells, no JAX)."""
    frame, data, fit = cheating
    kept = frame["GPA"].notna().to_numpy()
    x = np.column_stack([np.ones(kept.sum()), frame["GPA"].to_numpy()[kept]])
    eta = x @ fit.coef
    prior = np.exp(eta - np.log(np.exp(eta).sum(axis=1, keepdims=True)))
    like = prior.copy()
    for j, item in enumerate(data.columns):
        codes = data.codes[kept, j]
        like *= np.asarray(fit.params[item]).T[codes]
    assert np.log(like.sum(axis=1)).sum() == pytest.approx(fit.loglik, abs=1e-9)
    np.testing.assert_allclose(fit.posteriors, like / like.sum(axis=1, keepdims=True),
                               atol=1e-10)
    # poLCA's P: the mean of the prior over the rows used
    np.testing.assert_allclose(fit.class_weights, prior.mean(axis=0), atol=1e-12)


def test_em_never_decreases_and_restarts_agree(election):
    _, _, fit = election
    assert np.all(np.diff(fit.history) >= -1e-8)
    assert fit.converged
    assert (fit.restart_logliks > fit.loglik - 1e-4).sum() >= 2


def test_one_class_is_the_independence_model(cheating):
    frame, data, _ = cheating
    kept = frame["GPA"].notna()
    with pytest.warns(UserWarning):
        fit = lcb.em(lcb.latent_class(data, 1), data, covariates=frame[["GPA"]], restarts=1)
    sub = lcb.Dataset.from_pandas(frame.loc[kept, list(data.columns)])
    expected = sum(np.sum(c * np.log(c / c.sum()))
                   for c in (np.bincount(sub.codes[:, j]) for j in range(4)))
    assert fit.loglik == pytest.approx(expected, abs=1e-9)
    assert fit.coef.shape == (2, 1) and fit.coefficients().empty


def test_observed_information_close_to_empirical(cheating):
    frame, data, fit = cheating
    with pytest.warns(UserWarning):
        obs = lcb.em(fit.structure, data, covariates=frame[["GPA"]], init=fit, restarts=0,
                     tol=1e-11, standard_errors="observed")
    assert obs.loglik == pytest.approx(fit.loglik, abs=1e-8)
    ratio = obs.standard_errors["coef"][:, 1] / fit.standard_errors["coef"][:, 1]
    assert np.all((ratio > 0.8) & (ratio < 1.25))


def test_predict_proba_and_json_round_trip(cheating):
    frame, data, fit = cheating
    kept = frame["GPA"].notna().to_numpy()
    proba = fit.predict_proba(frame[list(data.columns)], covariates=frame[["GPA"]])
    assert np.isnan(proba[~kept]).all()
    np.testing.assert_allclose(proba[kept], fit.posteriors, atol=1e-10)
    same = lcb.RegressionResult.from_dict(json.loads(json.dumps(fit.to_dict())))
    np.testing.assert_allclose(same.coef, fit.coef)
    again = same.predict_proba(frame[list(data.columns)], covariates=frame[["GPA"]])
    np.testing.assert_allclose(again, proba)
    assert same.summary() == fit.summary()
    assert "GPA" in fit.summary() and "odds_ratio" in fit.summary()
    frame_out = fit.to_frame()
    assert {"probability", "se"} <= set(frame_out.columns)


def test_categorical_covariate_indicators_and_simulation_recovers_coefficients():
    """Text covariates become indicators against the first level; a fit of data simulated from
    a fitted model recovers its coefficients within a few standard errors."""
    rng = np.random.default_rng(1)
    n = 3000
    covariates = pd.DataFrame({"age": rng.normal(0, 1, n),
                               "region": rng.choice(["north", "south", "west"], n)})
    design = lcb.covariate_design(covariates, ["age", "region"])
    assert design.names == ("(Intercept)", "age", "regionsouth", "regionwest")
    assert design.references == {"region": "north"}
    truth = np.array([[0.0, -0.5, 0.3], [0.0, 1.0, -0.8], [0.0, 0.7, 0.0], [0.0, -0.6, 0.9]])
    items = {f"Y{j}": np.array([[0.85, 0.15], [0.2, 0.8], [0.5, 0.5]])[:, ::(1 if j % 2 else -1)]
             for j in range(6)}
    template = pd.DataFrame({f"Y{j}": ["a", "b"] * 2 for j in range(6)})
    structure = lcb.latent_class(lcb.Dataset.from_pandas(template), 3)
    model = lcb.RegressionResult.from_dict({
        **_skeleton(structure, design), "coef": truth.tolist(),
        "params": {"class": [[1 / 3] * 3], **{k: v.tolist() for k, v in items.items()}}})
    drawn = model.simulate(covariates, seed=3)
    assert drawn.shape == (n, 7)
    data = lcb.Dataset.from_pandas(drawn[[f"Y{j}" for j in range(6)]])
    fit = lcb.em(lcb.latent_class(data, 3), data, covariates=covariates, restarts=10, seed=0,
                 standard_errors="empirical")
    # the classes come back ordered by size: match them to the truth by their item profiles
    order = [int(np.argmin([np.abs(fit.params["Y0"][k] - items["Y0"][t]).sum()
                            + np.abs(fit.params["Y1"][k] - items["Y1"][t]).sum()
                            for k in range(3)])) for t in range(3)]
    assert sorted(order) == [0, 1, 2]
    coef = fit.coef[:, order] - fit.coef[:, order[:1]]
    cov = fit.coef_cov
    assert cov.shape == (8, 8)
    z = (coef - truth)[:, 1:] / np.maximum(_reordered_se(fit, order), 1e-9)
    assert np.all(np.abs(z) < 4), z


def _reordered_se(fit, order):
    """Standard errors of ``beta_t - beta_{order[0]}`` from the fit's covariance (delta
    method: a linear map of the free coefficients)."""
    p, k = fit.coef.shape
    out = np.zeros((p, k - 1))
    for t in range(1, k):
        for d in range(p):
            a = np.zeros((p, k))
            a[d, order[t]] += 1
            a[d, order[0]] -= 1
            v = a[:, 1:].ravel()
            out[d, t - 1] = math.sqrt(max(v @ fit.coef_cov @ v, 0.0))
    return out


def _skeleton(structure, design):
    return {"structure": structure.to_dict(), "covariates": design.to_dict(), "loglik": 0.0,
            "restart_logliks": [0.0], "restart_n_iter": [0], "restart_converged": [True],
            "n_iter": 0, "converged": True, "history": [], "n_rows": 0, "n_used_rows": 0,
            "n_observed_rows": 0,
            "n_cells": 0, "posteriors": [], "entropy": 0.0, "standard_errors": None,
            "seconds": 0.0, "seed": 0, "restarts": 1, "tol": 1e-8, "max_iter": 1}


# ---------------------------------------------------------------------------- bad input
def test_bad_covariates_are_refused_with_the_column_named(cheating):
    frame, data, _ = cheating
    structure = lcb.latent_class(data, 2)
    with pytest.raises(DataError, match=r"\['AGE'\] are not columns"):
        lcb.em(structure, frame, covariates=["AGE"])
    ids = frame[["GPA"]].assign(ID=[f"id{i}" for i in range(len(frame))])
    with pytest.raises(DataError, match="'ID' is text with 319 levels"):
        lcb.em(structure, data, covariates=ids)
    double = frame[["GPA"]].assign(GPA2=2 * frame["GPA"])
    with pytest.raises(DataError, match="'GPA2' is a linear combination of"):
        lcb.em(structure, data, covariates=double)
    with pytest.raises(DataError, match="'ONE' is constant"):
        lcb.em(structure, data, covariates=frame[["GPA"]].assign(ONE=1.0))
    with pytest.raises(DataError, match="indicators of the model as well as covariates"):
        lcb.em(structure, data, covariates=frame[["GPA", "FRAUD"]])
    with pytest.raises(DataError, match="has 3 rows but data has 319"):
        lcb.em(structure, data, covariates=frame[["GPA"]].iloc[10:13])
    patterns = lcb.Dataset.from_patterns(data.patterns, data.counts, data.columns, data.labels)
    with pytest.raises(DataError, match="no row order"):
        lcb.em(structure, patterns, covariates=frame[["GPA"]])
    with pytest.raises(ArgumentError, match="prior cannot be given with covariates"):
        lcb.em(structure, data, covariates=frame[["GPA"]], prior="dirichlet")
    tree = lcb.hlc(data, {"H": ["H1", "FRAUD", "COPYEXAM"], "H1": ["LIEEXAM", "LIEPAPER"]},
                   {"H": 2, "H1": 2})
    with pytest.raises(ArgumentError, match="need a latent class structure"):
        lcb.em(tree, data, covariates=frame[["GPA"]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = lcb.em(structure, data, covariates=frame[["GPA"]], restarts=1)
    with pytest.raises(DataError, match="numeric when the model was fitted"):
        fit.covariates.transform(pd.DataFrame({"GPA": ["x"]}))


# ---------------------------------------------------------------------------- distal outcomes
def test_categorical_distal_is_one_more_class_dependent_item(cheating):
    """A categorical distal outcome without covariates is the latent class model with one more
    item: the same maximum as lcb.em on the augmented data, reported apart."""
    frame, data, _ = cheating
    outcome = frame["GPA"].map(lambda g: None if g != g else ("high" if g >= 3 else "low"))
    fit = lcb.em(lcb.latent_class(data, 2), data, distal=outcome.rename("GPA3"), restarts=10,
                 seed=1, tol=1e-11, standard_errors="empirical")
    augmented = lcb.Dataset.from_pandas(frame[list(data.columns)].assign(GPA3=outcome))
    plain = lcb.em(lcb.latent_class(augmented, 2), augmented, restarts=10, seed=1, tol=1e-11)
    assert fit.loglik == pytest.approx(plain.loglik, abs=1e-7)
    np.testing.assert_allclose(fit.distal["probabilities"], plain.params["GPA3"], atol=1e-5)
    np.testing.assert_allclose(fit.params["LIEEXAM"], plain.params["LIEEXAM"], atol=1e-5)
    assert fit.n_parameters == plain.n_parameters
    table = fit.distal_table()
    assert list(table.columns) == ["class", "category", "probability", "se"]
    assert np.all(table.se > 0)
    assert "Distal outcome 'GPA3' (categorical)" in fit.summary()


def test_continuous_distal_recovers_class_means_and_nests_the_common_mean():
    rng = np.random.default_rng(5)
    n = 1500
    classes = rng.choice(2, n, p=[0.6, 0.4])
    profiles = np.array([[0.9, 0.8, 0.85, 0.9, 0.8], [0.15, 0.2, 0.1, 0.25, 0.2]])
    items = pd.DataFrame((rng.random((n, 5)) < profiles[classes]).astype(int),
                         columns=[f"Y{j}" for j in range(5)])
    outcome = pd.Series(np.where(classes == 0, 1.0, 2.5) + rng.normal(0, 1.0, n), name="Z")
    outcome[rng.random(n) < 0.1] = np.nan                 # missing outcome: marginalised
    data = lcb.Dataset.from_pandas(items)
    fit = lcb.em(lcb.latent_class(data, 2), data, distal=outcome, restarts=3, seed=0,
                 standard_errors="empirical")
    table = fit.distal_table()
    np.testing.assert_allclose(table["mean"], [1.0, 2.5], atol=4 * table["se"].max())
    np.testing.assert_allclose(table["sd"], [1.0, 1.0], atol=0.12)
    assert table["p"].iloc[0] < 1e-10 and table["df"].iloc[0] == 1
    assert fit.n_used_rows == n and fit.resid_df is None
    # class-independent outcome (a special case) cannot beat the class-dependent maximum
    plain = lcb.em(lcb.latent_class(data, 2), data, restarts=3, seed=0)
    z = outcome.dropna().to_numpy()
    common = -0.5 * len(z) * (np.log(2 * np.pi * z.var()) + 1)
    assert fit.loglik >= plain.loglik + common - 1e-6
    # one class: the sample mean and the ML standard deviation, in closed form
    one = lcb.em(lcb.latent_class(data, 1), data, distal=outcome, restarts=1)
    assert one.distal["means"][0] == pytest.approx(z.mean(), abs=1e-8)
    assert one.distal["sds"][0] == pytest.approx(z.std(), abs=1e-8)
    assert one.loglik == pytest.approx(plain_one(data) + common, abs=1e-6)
    same = lcb.RegressionResult.from_dict(json.loads(json.dumps(fit.to_dict())))
    pd.testing.assert_frame_equal(same.distal_table(), table)
    drawn = fit.simulate(pd.DataFrame(index=range(20000)), seed=0)
    by_class = drawn.groupby("class")["Z"].mean()
    np.testing.assert_allclose(by_class, fit.distal["means"], atol=0.05)


def plain_one(data):
    return sum(np.sum(c[c > 0] * np.log(c[c > 0] / c.sum()))
               for c in (np.bincount(data.codes[:, j][data.codes[:, j] >= 0])
                         for j in range(data.n_columns)))


def test_distal_bad_input(cheating):
    frame, data, _ = cheating
    structure = lcb.latent_class(data, 2)
    with pytest.raises(DataError, match="'FRAUD' is also an indicator"):
        lcb.em(structure, data, distal=frame["FRAUD"])
    with pytest.raises(ArgumentError, match="one column"):
        lcb.em(structure, data, distal=frame[["GPA", "FRAUD"]])
    with pytest.raises(DataError, match="'NOPE' is not a column"):
        lcb.em(structure, frame, distal="NOPE")
