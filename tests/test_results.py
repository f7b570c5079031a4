"""Every engine's result keeps the contract: a JSON round trip (``to_dict`` -> ``json`` ->
``from_dict``) gives back the same numbers and the same predictions; ``to_frame`` and
``summary`` describe it; fitted models classify new rows (``predict_proba``) by Bayes' rule,
missing values summed out; samplers give their draws to ArviZ."""

from __future__ import annotations

import dataclasses
import json

import arviz as az
import numpy as np
import pandas as pd
import pytest

import lcbayes as lcb

TRUE_SHARES = np.array([0.6, 0.4])
P_YES = np.array([[0.85, 0.8, 0.9, 0.2], [0.15, 0.2, 0.1, 0.75]])  # (class, item)
ITEMS = ("Q1", "Q2", "Q3", "Q4")


@pytest.fixture(scope="module")
def data() -> lcb.Dataset:
    template = lcb.Dataset.from_codes(np.array([[0] * 4, [1] * 4]), columns=ITEMS,
                                      labels=[("no", "yes")] * 4)
    truth = lcb.latent_class(template, 2)
    params = {"class": TRUE_SHARES,
              **{c: np.stack([1 - P_YES[:, j], P_YES[:, j]], axis=1) for j, c in enumerate(ITEMS)}}
    return lcb.simulate(truth, params, 200, seed=4, missing=0.1)


@pytest.fixture(scope="module")
def new_rows() -> pd.DataFrame:
    """Rows to classify: complete, with missing values, one entirely missing."""
    return pd.DataFrame({"Q1": ["yes", "no", None, None], "Q2": ["yes", "no", "no", None],
                         "Q3": ["yes", None, "no", None], "Q4": ["no", "yes", "yes", None]})


def _round_trip(result):
    return type(result).from_dict(json.loads(json.dumps(result.to_dict())))


def _bayes_rule(weights: np.ndarray, tables: dict, frame: pd.DataFrame) -> np.ndarray:
    """``p(class | row)`` by hand: weights times the observed items' probabilities."""
    out = []
    for _, row in frame.iterrows():
        p = np.array(weights, dtype=float)
        for c in ITEMS:
            if row[c] is not None and not pd.isna(row[c]):
                p = p * tables[c][:, ("no", "yes").index(row[c])]
        out.append(p / p.sum())
    return np.array(out)


def _same_fields(a, b):
    for field in dataclasses.fields(a):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if isinstance(x, dict):
            assert x.keys() == y.keys(), field.name
            for k in x:
                np.testing.assert_array_equal(x[k], y[k], err_msg=f"{field.name}[{k}]")
        elif isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y, err_msg=field.name)
        else:
            assert x == y, field.name


# ---------------------------------------------------------------------- EM
@pytest.fixture(scope="module")
def em_fit(data) -> lcb.EMResult:
    return lcb.em(lcb.latent_class(data, 2), data, restarts=3, seed=0)


def test_em_round_trip_gives_the_same_fit_and_predictions(em_fit, new_rows):
    again = _round_trip(em_fit)
    _same_fields(em_fit, again)
    for score in ("loglik", "bic", "aic", "icl", "cs", "bicp", "bic_e"):
        assert getattr(again, score) == getattr(em_fit, score), score
    np.testing.assert_array_equal(again.predict_proba(new_rows),
                                  em_fit.predict_proba(new_rows))
    assert again.summary() == em_fit.summary()


def test_em_predict_proba_is_bayes_rule_with_missing_values_summed_out(em_fit, new_rows):
    tables = {c: em_fit.params[c] for c in ITEMS}
    expected = _bayes_rule(em_fit.class_weights, tables, new_rows)
    probs = em_fit.predict_proba(new_rows)
    np.testing.assert_allclose(probs, expected, rtol=1e-10)
    np.testing.assert_allclose(probs[3], em_fit.class_weights)  # nothing observed: the prior
    np.testing.assert_array_equal(em_fit.predict(new_rows), expected.argmax(axis=1))


def test_em_predict_proba_of_the_training_rows_is_the_class_posterior(em_fit, data):
    np.testing.assert_allclose(em_fit.predict_proba(data), em_fit.class_posteriors, atol=1e-12)


def test_em_to_frame_lists_every_probability(em_fit):
    frame = em_fit.to_frame()
    assert list(frame.columns) == ["node", "parents", "category", "probability"]
    assert len(frame) == 2 + 2 * 2 * len(ITEMS)
    q1 = frame[(frame["node"] == "Q1") & (frame["parents"] == "class 2")]
    np.testing.assert_allclose(q1["probability"], em_fit.params["Q1"][1])
    sums = frame.groupby(["node", "parents"])["probability"].sum()
    np.testing.assert_allclose(sums, 1.0)


def test_predict_proba_asks_which_hidden_node_of_a_dag(data):
    dag = lcb.dag(data, {"Q1": ["s1"], "Q2": ["s1", "s2"], "Q3": ["s2"], "Q4": ["s2"]},
                  {"s1": 2, "s2": 2})
    fit = lcb.em(dag, data, restarts=2, seed=0)
    with pytest.raises(lcb.ArgumentError, match=r"node must name a hidden node.*\['s1', 's2'\]"):
        fit.predict_proba(data)
    assert fit.predict_proba(data, node="s2").shape == (data.n_rows, 2)


# ---------------------------------------------------------------------- VB, AIS, exact
def test_vb_round_trip_and_predictions(data, new_rows):
    vb = lcb.vbem(lcb.latent_class(data, 2), data, seed=0)
    again = _round_trip(vb)
    _same_fields(vb, again)
    assert again.elbo == vb.elbo and again.elbo_corrected == vb.elbo_corrected
    np.testing.assert_array_equal(again.predict_proba(new_rows), vb.predict_proba(new_rows))
    np.testing.assert_allclose(vb.predict_proba(data), vb.class_posteriors, atol=1e-10)
    frame = vb.to_frame()
    assert {"mean", "sd", "alpha", "prior"} <= set(frame.columns)
    np.testing.assert_allclose(frame.groupby(["node", "parents"])["mean"].sum(), 1.0)


def test_ais_and_exact_round_trips(data):
    small = data.select(["Q1", "Q2"])
    structure = lcb.latent_class(small, 2)
    run = lcb.ais(structure, small, chains=4, temperatures=32, seed=1)
    again = _round_trip(run)
    _same_fields(run, again)
    assert run.to_frame().shape[0] == 4 and "log_weight" in run.to_frame()
    ex = lcb.exact_evidence(lcb.latent_class(small, 1), small)
    assert _round_trip(ex) == ex
    assert ex.to_frame().loc[0, "log_evidence"] == ex.log_evidence


# ---------------------------------------------------------------------- samplers
@pytest.fixture(scope="module")
def gibbs_run(data) -> lcb.GibbsResult:
    return lcb.gibbs(lcb.latent_class(data, 2), data, draws=150, warmup=100, chains=2, seed=0)


def test_gibbs_round_trip_keeps_every_draw_and_prediction(gibbs_run, new_rows):
    again = _round_trip(gibbs_run)
    for group in gibbs_run.to_inference_data().groups():
        xa, xb = gibbs_run.to_inference_data()[group], again.to_inference_data()[group]
        assert set(xa.data_vars) == set(xb.data_vars)
        for name in xa.data_vars:
            np.testing.assert_array_equal(xa[name].values, xb[name].values)
    assert again.settings == json.loads(json.dumps(gibbs_run.settings))
    np.testing.assert_array_equal(again.predict_proba(new_rows),
                                  gibbs_run.predict_proba(new_rows))


def test_gibbs_predict_proba_averages_bayes_rule_over_relabelled_draws(gibbs_run, new_rows):
    relabelled = lcb.relabel(gibbs_run, method="stephens").idata.posterior
    weights = relabelled["class_weights"].values.reshape(-1, 2)
    thetas = {c: relabelled[f"theta_{c}"].values.reshape(-1, 2, 2) for c in ITEMS}
    expected = np.mean([_bayes_rule(weights[s], {c: thetas[c][s] for c in ITEMS}, new_rows)
                        for s in range(weights.shape[0])], axis=0)
    np.testing.assert_allclose(gibbs_run.predict_proba(new_rows), expected, rtol=1e-9)


def test_gibbs_result_contract(gibbs_run):
    idata = gibbs_run.to_inference_data()
    assert isinstance(idata, az.InferenceData) and gibbs_run.n_classes == 2
    frame = gibbs_run.to_frame()
    assert len(frame) == 2 * 150 and {"chain", "draw", "log_likelihood",
                                      "class_weights[1]", "theta_Q1[2, yes]"} <= set(frame)
    np.testing.assert_allclose(frame["theta_Q1[2, yes]"],
                               idata.posterior["theta_Q1"].values[:, :, 1, 1].ravel())
    assert "2 classes" in gibbs_run.summary() and "lcb.diagnostics" in gibbs_run.summary()
    with pytest.raises(dataclasses.FrozenInstanceError):
        gibbs_run.seconds = 0.0


def test_rjmcmc_round_trip_and_posterior_of_k(data, new_rows):
    with pytest.warns(lcb.KMixingWarning, match="max_classes=6") as caught:  # a short run
        res = lcb.rjmcmc(data, max_classes=3, draws=200, warmup=100, chains=2, seed=0)
    assert [str(w.message) for w in caught] == [res.mixing_warning()]
    again = _round_trip(res)
    assert again.posterior_k == res.posterior_k == lcb.posterior_k(res.to_inference_data())
    assert again.acceptance == res.acceptance and again.prior_k == res.prior_k
    k = res.modal_k
    np.testing.assert_array_equal(again.predict_proba(new_rows), res.predict_proba(new_rows))
    assert res.predict_proba(new_rows).shape == (len(new_rows), k)
    assert f"K = {k:>2}" in res.summary()
    with pytest.raises(lcb.ArgumentError, match="gibbs result"):
        lcb.GibbsResult.from_dict(res.to_dict())
