"""Posterior predictive checks (lcbayes/checking/ppc.py, replicates.py): replicates keep the
observed missingness and follow the draws' probabilities; carcinoma's pattern table rejects one
class and not three; a direct dependence between two items is found; ArviZ plots the result."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import lcbayes as lcb
from lcbayes.checking.replicates import pair_probes, replicate
from lcbayes.errors import ArgumentTypeError
from lcbayes.samplers.pointwise import draws_log_likelihood


@pytest.fixture(scope="module")
def carcinoma():
    return lcb.datasets.load("carcinoma")


def _gibbs(structure, data, seed=0):
    return lcb.gibbs(structure, data, draws=400, warmup=300, chains=2, seed=seed)


@pytest.fixture(scope="module")
def checks(carcinoma):
    return {k: lcb.posterior_predictive_check(_gibbs(lcb.latent_class(carcinoma, k), carcinoma),
                                              carcinoma, seed=0) for k in (1, 3)}


def test_carcinoma_rejects_one_class_and_not_three(checks):
    assert checks[1].g2_ppp < 0.001 and checks[1].x2_ppp < 0.001
    assert checks[3].g2_ppp > 0.05
    assert len(checks[1].misfitting_pairs()) > 10     # one class explains no association
    assert checks[1].g2 > checks[3].g2


def _dependent_items(n: int, rng: np.random.Generator, copy: float) -> lcb.Dataset:
    """Two classes of six binary items; item 2 copies item 1 in a share ``copy`` of rows."""
    z = rng.random(n) < 0.4
    y = (rng.random((n, 6)) < np.where(z[:, None], 0.9, 0.1)).astype(int)
    copied = rng.random(n) < copy
    y[copied, 1] = y[copied, 0]
    return lcb.Dataset.from_codes(y, columns=[f"i{j + 1}" for j in range(6)])


def test_a_direct_dependence_between_two_items_is_found():
    data = _dependent_items(1000, np.random.default_rng(1), copy=0.4)
    check = lcb.posterior_predictive_check(_gibbs(lcb.latent_class(data, 2), data), data)
    table = check.pair_table()
    assert (table.loc[0, "item_1"], table.loc[0, "item_2"]) == ("i1", "i2")
    assert table.loc[0, "ppp"] < 0.01
    assert ("i1", "i2") in check.misfitting_pairs()
    assert "i1 x i2" in check.pairs_figure().axes[0].get_title()


def test_replicates_keep_the_missing_entries_and_follow_the_draws(carcinoma):
    structure = lcb.latent_class(carcinoma, 2)
    weights = np.array([[[0.3, 0.7]]])
    items = np.array([[[0.2, 0.8], [0.9, 0.1]]])
    tables = [np.repeat(weights, 4, axis=0)] + [np.repeat(items, 4, axis=0)] * 7
    observed = np.zeros((20000, 7), dtype=np.int32)
    observed[::3, 2] = -1
    rep = replicate(structure, tables, observed, np.random.default_rng(0))
    assert rep.shape == (4, 20000, 7)
    assert np.array_equal(rep < 0, np.broadcast_to(observed < 0, rep.shape))
    # P(item = 1) = 0.3 * 0.8 + 0.7 * 0.1; pairs as the exact inference core says
    assert rep[:, :, 0].mean() == pytest.approx(0.31, abs=0.01)
    probes, keys = pair_probes(carcinoma.cardinalities)
    exact = np.exp(draws_log_likelihood(structure, [t[:1] for t in tables], probes))[0]
    both = rep[:, :, 0] + 2 * rep[:, :, 1]
    for (i, j, a, b), p in zip(keys, exact, strict=True):
        if (i, j) == (0, 1):
            assert (both == a + 2 * b).mean() == pytest.approx(p, abs=0.01)


def test_arviz_plots_the_pattern_counts(checks):
    import arviz as az
    import matplotlib
    matplotlib.use("Agg")
    idata = checks[3].to_inference_data()
    assert set(idata.groups()) == {"posterior_predictive", "observed_data"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        axes = az.plot_ppc(idata, var_names=["pattern_count"], num_pp_samples=50)
    assert axes is not None
    table = checks[3].pattern_table()
    assert table["observed"].iloc[0] == 34 and (table["low"] <= table["high"]).all()


def test_the_result_round_trips_and_prints(checks):
    res = checks[3]
    back = lcb.PPCResult.from_dict(json.loads(json.dumps(res.to_dict())))
    np.testing.assert_array_equal(back.pair_ppp, res.pair_ppp)
    assert back.columns == res.columns and back.n_replicates == res.n_replicates == 500
    assert "G^2" in res.summary() and len(res.to_frame()) == 2 + 7 + 21


def test_an_hlc_tree_is_checked_through_the_same_path():
    template = lcb.Dataset.from_codes(np.array([[0] * 5, [1] * 5]), columns=list("ABCDE"))
    tree = lcb.hlc(template, {"H": ["A", "B", "G"], "G": ["C", "D", "E"]},
                   cardinalities={"H": 2, "G": 2})
    params = lcb.random_params(tree, seed=3)
    data = lcb.simulate(tree, params, 400, seed=4, missing=0.05)
    check = lcb.posterior_predictive_check(_gibbs(tree, data), data, draws=200)
    assert check.n_classes is None and len(check.pairs) == 10
    assert 0.0 <= check.g2_ppp <= 1.0 and check.g2_ppp > 0.001   # the true structure fits


def test_wrong_results_are_refused(carcinoma):
    with pytest.raises(ArgumentTypeError, match=r"lcb\.gibbs"):
        lcb.posterior_predictive_check(lcb.em(lcb.latent_class(carcinoma, 2), carcinoma),
                                       carcinoma)


@pytest.mark.slow
def test_pairs_are_calibrated_on_data_from_the_model():
    """Over 50 data sets simulated from two classes with no dependence, each pair's ppp falls
    below 0.05 in at most 10% of them."""
    rng = np.random.default_rng(7)
    below = np.zeros(15)
    for _ in range(50):
        data = _dependent_items(1000, rng, copy=0.0)
        check = lcb.posterior_predictive_check(_gibbs(lcb.latent_class(data, 2), data,
                                                      seed=int(rng.integers(1 << 30))),
                                               data, draws=400, seed=int(rng.integers(1 << 30)))
        below += check.pair_ppp < 0.05
    assert below.max() <= 5, below


def test_a_dag_with_two_hidden_parents_is_checked_and_cross_validated():
    template = lcb.Dataset.from_codes(np.array([[0] * 4, [1] * 4]),
                                      columns=["y1", "y2", "y3", "y4"])
    bipartite = lcb.dag(template, {"y1": ["s1"], "y2": ["s1", "s2"], "y3": ["s1", "s2"],
                                   "y4": ["s2"]}, hidden={"s1": 2, "s2": 2})
    data = lcb.simulate(bipartite, lcb.random_params(bipartite, seed=5), 300, seed=6)
    draws = _gibbs(bipartite, data)
    check = lcb.posterior_predictive_check(draws, data, draws=200)
    assert len(check.pairs) == 6 and check.g2_ppp > 0.001
    assert np.isfinite(lcb.loo(draws, data, refit="none").elpd_loo)
