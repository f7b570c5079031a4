"""The bias-adjusted three-step approach (lcb.three_step): the classification-error matrix D
against a computation by hand, the estimators at the maxima of their objectives (checked by
the objective itself), recovery of known coefficients and class means on simulated data where
the uncorrected estimate is attenuated, distal outcomes, proportional assignment, the JSON
round trip and bad input."""

from __future__ import annotations

import dataclasses
import json
import warnings

import numpy as np
import pandas as pd
import pytest

import lcbayes as lcb
from lcbayes.errors import ArgumentError, ConvergenceWarning, DataError

#: The simulation's truth: 3 classes, membership ~ X (class 1 the reference), 6 binary items.
BETA = np.array([[0.0, -0.7, -1.4], [0.0, 1.0, -1.0]])
Q = 0.8
PROFILES = np.array([[Q] * 6, [Q] * 3 + [1 - Q] * 3, [1 - Q] * 6])
MEANS, SDS = np.array([0.0, 1.0, 2.0]), np.array([1.0, 1.5, 0.7])
LEVELS = np.array([[0.7, 0.2, 0.1], [0.2, 0.6, 0.2], [0.1, 0.2, 0.7]])
ITEMS = [f"Y{j + 1}" for j in range(6)]


def _draw(rng, probabilities: np.ndarray) -> np.ndarray:
    return (rng.random((len(probabilities), 1)) > probabilities.cumsum(axis=1)).sum(axis=1)


@pytest.fixture(scope="module")
def simulated():
    """4000 rows: items, a covariate X, a continuous outcome Z and a categorical one C."""
    rng = np.random.default_rng(11)
    n = 4000
    x = rng.normal(size=n)
    eta = np.c_[np.ones(n), x] @ BETA
    prob = np.exp(eta - eta.max(axis=1, keepdims=True))
    classes = _draw(rng, prob / prob.sum(axis=1, keepdims=True))
    frame = pd.DataFrame((rng.random((n, 6)) < PROFILES[classes]).astype(int), columns=ITEMS)
    frame["X"] = x
    frame["Z"] = MEANS[classes] + SDS[classes] * rng.normal(size=n)
    frame["C"] = np.array(["a", "b", "c"])[_draw(rng, LEVELS[classes])]
    structure = lcb.latent_class(lcb.Dataset.from_pandas(frame[ITEMS]), 3)
    return frame, structure


@pytest.fixture(scope="module")
def covariate_fits(simulated):
    frame, structure = simulated
    return {c: lcb.three_step(structure, frame, covariates=["X"], correction=c)
            for c in ("none", "bch", "ml")}


@pytest.fixture(scope="module")
def cheating():
    frame = lcb.datasets.frame("cheating")
    structure = lcb.latent_class(lcb.datasets.load("cheating"), 2)
    fits = {}
    for correction in ("none", "bch", "ml"):
        with pytest.warns(UserWarning, match="4 of 319 rows lack a covariate among"):
            fits[correction] = lcb.three_step(structure, frame, covariates=frame[["GPA"]],
                                              correction=correction, standard_errors=None)
    return frame, structure, fits


def _d_by_hand(post: np.ndarray, assigned: np.ndarray) -> np.ndarray:
    k = post.shape[1]
    d = np.zeros((k, k))
    for t in range(k):
        for s in range(k):
            d[t, s] = sum(post[i, t] * assigned[i, s] for i in range(len(post))) / sum(
                post[i, t] for i in range(len(post)))
    return d


def _softmax(eta: np.ndarray) -> np.ndarray:
    z = np.exp(eta - eta.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def test_classification_matrix_by_hand(cheating):
    frame, structure, fits = cheating
    res = fits["none"]
    post = res.measurement.class_posteriors
    assert post.shape == (315, 2) and res.n_used_rows == 315 and res.n_rows == 319
    modal = np.eye(2)[post.argmax(axis=1)]
    np.testing.assert_allclose(res.classification_matrix, _d_by_hand(post, modal), atol=1e-10)
    np.testing.assert_allclose(res.classification_matrix.sum(axis=1), 1.0, atol=1e-12)
    assert res.classification_error == pytest.approx(1 - (post * modal).sum() / 315, abs=1e-10)
    with pytest.warns(UserWarning, match="4 of 319"):
        soft = lcb.three_step(structure, frame, covariates=["GPA"], assignment="proportional",
                              correction="none", standard_errors=None)
    np.testing.assert_allclose(soft.classification_matrix, _d_by_hand(post, post), atol=1e-10)


def test_cheating_estimates_are_the_maxima_of_their_objectives(cheating):
    frame, _, fits = cheating
    post = fits["bch"].measurement.class_posteriors
    gpa = frame["GPA"].to_numpy()
    design = np.c_[np.ones(315), gpa[~np.isnan(gpa)]]
    modal = np.eye(2)[post.argmax(axis=1)]
    d = fits["bch"].classification_matrix

    def bch(coef):
        return float((modal @ np.linalg.inv(d) * np.log(_softmax(design @ coef))).sum())

    def ml(coef):
        return float((modal * np.log(_softmax(design @ coef) @ d)).sum())

    for name, objective in (("bch", bch), ("ml", ml)):
        res = fits[name]
        assert res.converged and res.max_gradient < 1e-8
        assert objective(res.coef) == pytest.approx(res.objective, abs=1e-9)
        for step in np.eye(2):
            for sign in (1e-4, -1e-4):
                moved = res.coef.copy()
                moved[:, 1] += sign * step
                assert objective(moved) < res.objective
    # the uncorrected slope is attenuated toward zero; BCH's is StepMix's converged -0.71
    slopes = {c: fits[c].coef[1, 1] for c in fits}
    assert slopes["none"] > slopes["ml"] and slopes["none"] > slopes["bch"]
    assert slopes["bch"] == pytest.approx(-0.714, abs=2e-3)
    table = fits["ml"].coefficients()
    assert list(table.columns) == ["class", "term", "estimate", "se", "z", "p", "odds_ratio"]
    assert list(table.term) == ["(Intercept)", "GPA"]


def _aligned(res) -> None:
    yes = np.stack([res.measurement.params[item][:, 1] for item in ITEMS], axis=1)
    assert np.abs(yes - PROFILES).max() < 0.06, "classes not in the simulation's order"


def test_bch_and_ml_recover_the_coefficients_that_no_correction_attenuates(covariate_fits):
    for res in covariate_fits.values():
        _aligned(res)
        assert res.converged
    none, bch, ml = (covariate_fits[c] for c in ("none", "bch", "ml"))
    for res in (bch, ml):
        se = res.standard_errors["coef"][:, 1:]
        assert (np.abs(res.coef[:, 1:] - BETA[:, 1:]) < 3 * se).all(), (res.coef, se)
    assert (np.abs(none.coef[1, 1:]) < np.abs(BETA[1, 1:]) - 0.15).all()
    assert (np.abs(none.coef[1, 1:]) < np.abs(ml.coef[1, 1:])).all()
    assert bch.se_method == "corrected" and "Bakk, Oberski & Vermunt 2014" in bch.se_description
    assert "sandwich" in bch.se_description and "information" in ml.se_description


@pytest.mark.slow  # CI time; run before closing
def test_standard_errors_with_and_without_step_one(simulated, covariate_fits):
    frame, structure = simulated
    step3 = lcb.three_step(structure, frame, covariates=["X"], standard_errors="step3")
    corrected = covariate_fits["ml"]
    np.testing.assert_allclose(step3.coef, corrected.coef, atol=1e-12)
    a, b = np.diag(step3.covariance), np.diag(corrected.covariance)
    assert (b >= a - 1e-12).all() and (b > a).any()
    assert "information of step 3" in step3.se_description
    assert "Bakk, Oberski" not in step3.se_description


@pytest.mark.slow  # CI time; run before closing
def test_proportional_assignment(simulated):
    frame, structure = simulated
    fits = {c: lcb.three_step(structure, frame, covariates=["X"], correction=c,
                              assignment="proportional") for c in ("none", "bch", "ml")}
    post = fits["ml"].measurement.class_posteriors
    d = post.T @ post / post.sum(axis=0)[:, None]
    np.testing.assert_allclose(fits["ml"].classification_matrix, d, atol=1e-10)
    for c in ("bch", "ml"):
        se = fits[c].standard_errors["coef"][:, 1:]
        assert (np.abs(fits[c].coef[:, 1:] - BETA[:, 1:]) < 3 * se).all()
        assert "sandwich" in fits[c].se_description
    assert (np.abs(fits["none"].coef[1, 1:]) < np.abs(fits["ml"].coef[1, 1:])).all()


def test_continuous_distal_outcome(simulated):
    frame, structure = simulated
    frame = frame.copy()
    frame.loc[:2, "Z"] = np.nan
    fits = {}
    for c in ("none", "bch", "ml"):
        with pytest.warns(UserWarning, match="3 of 4000 rows lack the outcome 'Z'"):
            fits[c] = lcb.three_step(structure, frame, distal="Z", correction=c)
    for res in fits.values():
        _aligned(res)
        assert res.distal_type == "continuous" and res.distal_estimate.shape == (3, 2)
    bch = fits["bch"]
    post = bch.measurement.class_posteriors
    modal = np.eye(3)[post.argmax(axis=1)]
    weights = modal @ np.linalg.inv(bch.classification_matrix)
    z = frame["Z"].to_numpy()[3:]
    means = weights.T @ z / weights.sum(axis=0)
    np.testing.assert_allclose(bch.distal_estimate[:, 0], means, atol=1e-10)
    np.testing.assert_allclose(bch.distal_estimate[:, 1],
                               (weights * (z[:, None] - means) ** 2).sum(0) / weights.sum(0),
                               atol=1e-10)
    for c in ("bch", "ml"):
        se = fits[c].standard_errors["distal"][:, 0]
        assert (np.abs(fits[c].distal_estimate[:, 0] - MEANS) < 3 * se).all()
    spread = {c: np.ptp(fits[c].distal_estimate[:, 0]) for c in fits}
    assert spread["none"] < spread["bch"] and spread["none"] < spread["ml"]
    table = fits["ml"].distal_table()
    assert list(table.columns) == ["class", "statistic", "estimate", "se"] and len(table) == 6
    test = fits["ml"].distal_test()
    assert test["df"] == 2 and test["p"] < 1e-10


@pytest.mark.slow  # CI time; run before closing
def test_categorical_distal_outcome_and_covariates_together(simulated):
    frame, structure = simulated
    fits = {c: lcb.three_step(structure, frame, distal="C", correction=c,
                              standard_errors="corrected" if c == "ml" else None)
            for c in ("none", "bch", "ml")}
    assert fits["ml"].distal_labels == ("a", "b", "c")
    np.testing.assert_allclose(fits["ml"].distal_estimate.sum(axis=1), 1.0, atol=1e-12)
    # a categorical outcome alone is saturated: ML reproduces BCH's inversion of the table
    np.testing.assert_allclose(fits["ml"].distal_estimate, fits["bch"].distal_estimate,
                               atol=1e-6)
    se = fits["ml"].standard_errors["distal"]  # 9 entries: 4 s.e. (the sample's own truth
    assert (np.abs(fits["ml"].distal_estimate - LEVELS) < 4 * se).all()  # is off by chance)
    assert np.diag(fits["none"].distal_estimate).min() < np.diag(LEVELS).min() - 0.03
    joint = lcb.three_step(structure, frame, covariates=["X"], distal="C", correction="ml")
    se = joint.standard_errors["coef"][:, 1:]
    assert (np.abs(joint.coef[:, 1:] - BETA[:, 1:]) < 3 * se).all()
    assert "membership ~ X and categorical distal outcome 'C'" in joint.summary()


def test_json_round_trip(covariate_fits, cheating):
    for res in (covariate_fits["ml"], cheating[2]["bch"]):
        text = json.dumps(res.to_dict(), allow_nan=False)
        again = lcb.ThreeStepResult.from_dict(json.loads(text))
        assert json.dumps(again.to_dict(), allow_nan=False) == text
        for field in dataclasses.fields(res):
            a, b = getattr(res, field.name), getattr(again, field.name)
            if isinstance(a, np.ndarray):
                np.testing.assert_array_equal(a, b)
            elif field.name not in ("measurement", "structure", "covariates"):
                assert a == b, field.name
        pd.testing.assert_frame_equal(res.coefficients(), again.coefficients())
        assert again.summary() == res.summary() and len(again.to_frame()) > 0
    assert "D[t, s] = P(assigned s | class t)" in res.summary()


def test_bad_input(cheating):
    frame, structure, _ = cheating
    with pytest.raises(ArgumentError, match="correction 'BCH'; choose from none, bch, ml"):
        lcb.three_step(structure, frame, covariates=["GPA"], correction="BCH")
    with pytest.raises(ArgumentError, match="assignment"):
        lcb.three_step(structure, frame, covariates=["GPA"], assignment="soft")
    with pytest.raises(ArgumentError, match=r"covariates= or distal="):
        lcb.three_step(structure, frame)
    with pytest.raises(DataError, match="distal 'FRAUD' is also an indicator"):
        lcb.three_step(structure, frame, distal="FRAUD")
    with pytest.raises(DataError, match="not columns"):
        lcb.three_step(structure, frame, covariates=["AGE"])
    with pytest.raises(DataError, match="distal 'AGE' is not a column"):
        lcb.three_step(structure, frame, distal="AGE")
    with pytest.raises(ArgumentError, match="standard_errors"):
        lcb.three_step(structure, frame, distal="GPA", standard_errors="robust")

@pytest.mark.slow  # CI time; run before closing
def test_outcome_alone_without_standard_errors(simulated):
    frame, structure = simulated
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = lcb.three_step(structure, frame, distal="Z", correction="none",
                             standard_errors=None)
    assert res.covariates is None and res.terms == ("(Intercept)",)
    assert res.standard_errors is None and np.isnan(res.coefficients().se).all()
