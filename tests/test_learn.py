"""Structure learning of the number of classes (Karčiauskas 2005, Ch. 6): the split and merge
operations, multiple-restart EM on lanes, the searches and their result."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import lcbayes as lcb
from lcbayes.cli import main
from lcbayes.learn.merge_screen import merge_log_likelihoods, screen_merges
from lcbayes.learn.mixture import ClassModel, independence_model, random_model
from lcbayes.learn.operations import EDGE, merge, split_perturbation, split_starts, substitute
from lcbayes.learn.restarts import (
    EMSettings,
    class_posteriors,
    log_likelihoods,
    multiple_restart_em,
)


def _truth(n_classes=3, n_items=8, separation=0.85, seed=0):
    """A well separated latent class model: every class has its own high-probability items."""
    rng = np.random.default_rng(seed)
    codes = np.tile([[0], [1]], (1, n_items))
    structure = lcb.latent_class(lcb.Dataset.from_codes(codes), n_classes)
    params = {"class": np.full(n_classes, 1.0 / n_classes)}
    for j, name in enumerate(structure.observed_names):
        high = rng.permutation(n_classes) == (j % n_classes)
        p = np.where(high, separation, 1 - separation)
        params[name] = np.stack([1 - p, p], axis=1)
    return structure, params


@pytest.fixture(scope="module")
def simulated():
    structure, params = _truth()
    return lcb.simulate(structure, params, 3000, seed=1)


@pytest.fixture(scope="module")
def small():
    structure, params = _truth(n_classes=2, n_items=5)
    return lcb.simulate(structure, params, 400, seed=2, missing=0.1)


def _loglik(data, model):
    s = lcb.latent_class(data, model.n_classes)
    return lcb.log_likelihood(s, model.params(s), data)


# ---------------------------------------------------------------------- operations
def test_split_perturbation_sums_to_zero_and_reaches_p():
    rng = np.random.default_rng(0)
    for r in (2, 3, 5):
        probs = rng.dirichlet(np.ones(r)) * 0.9 + 0.1 / r
        pert = split_perturbation(probs, 0.001, rng)
        assert abs(pert.sum()) < 1e-15
        assert np.isclose(np.abs(pert).max(), 0.001)


def test_split_perturbation_scaled_down_near_the_edge_and_off_outside():
    rng = np.random.default_rng(1)
    probs = np.array([2e-6, 0.5, 0.5 - 2e-6])
    pert = split_perturbation(probs, 0.1, rng)
    assert np.all(probs + pert >= EDGE - 1e-18) and np.all(probs - pert >= EDGE - 1e-18)
    assert 0 < np.abs(pert).max() < 0.1
    assert np.all(split_perturbation(np.array([1e-9, 1 - 1e-9]), 0.1, rng) == 0)


def test_split_with_no_perturbation_keeps_the_distribution_and_merge_undoes_it(small):
    model = random_model(small, 3, np.random.default_rng(3))
    halves = ClassModel(np.full(2, 0.5), tuple(np.stack([t[1], t[1]]) for t in model.items))
    split = substitute(model, 1, halves)
    assert split.n_classes == 4 and np.isclose(split.weights.sum(), 1.0)
    assert np.isclose(_loglik(small, split), _loglik(small, model), rtol=0, atol=1e-9)
    back = merge(split, 1, 3)
    np.testing.assert_allclose(back.weights, model.weights, atol=1e-15)
    for a, b in zip(back.items, model.items, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-15)


def test_split_starts_are_small_perturbations_of_the_component(small):
    model = random_model(small, 2, np.random.default_rng(4))
    starts = split_starts(model, 0, 16, 0.001, np.random.default_rng(5))
    assert len(starts) == 16
    for start in starts:
        np.testing.assert_allclose(start.weights, [0.5, 0.5])
        for kids, table in zip(start.items, model.items, strict=True):
            np.testing.assert_allclose(kids.sum(axis=1), 1.0)
            assert np.abs(kids - table[0]).max() <= 0.001 + 1e-15
    assert not np.allclose(starts[0].items[0], starts[1].items[0])


def test_merge_is_the_weighted_average():
    model = ClassModel(np.array([0.2, 0.3, 0.5]),
                       (np.array([[0.1, 0.9], [0.6, 0.4], [0.5, 0.5]]),))
    merged = merge(model, 2, 0)
    np.testing.assert_allclose(merged.weights, [0.7, 0.3])
    np.testing.assert_allclose(merged.items[0][0], (0.2 * np.array([0.1, 0.9]) +
                                                    0.5 * np.array([0.5, 0.5])) / 0.7)


def test_merge_log_likelihoods_are_those_of_the_merged_models(small):
    rng = np.random.default_rng(3)
    for m in (2, 3, 6):
        model = random_model(small, m, rng)
        model.items[0][1] = [1.0, 0.0]                       # a zero probability
        pairs = [(a, b) for a in range(m) for b in range(m) if a != b]
        np.testing.assert_allclose(merge_log_likelihoods(small, model, pairs),
                                   [_loglik(small, merge(model, a, b)) for a, b in pairs],
                                   rtol=1e-12)


def test_screen_merges_keeps_the_best_in_their_order(small):
    rng = np.random.default_rng(4)
    base = [random_model(small, 4, rng) for _ in range(2)]
    merges = [(model, a, b) for model in base for a in range(4) for b in range(a + 1, 4)]
    every = screen_merges(small, merges, keep=len(merges))
    assert len(every) == 12 and all(
        np.array_equal(s.weights, merge(*m).weights) for s, m in zip(every, merges, strict=True))
    logliks = np.array([_loglik(small, s) for s in every])
    kept = screen_merges(small, merges, keep=5)
    best = np.sort(np.argsort(-logliks)[:5])
    assert [_loglik(small, s) for s in kept] == pytest.approx(logliks[best].tolist(), rel=1e-12)


# ---------------------------------------------------------------------- EM on lanes
def test_lane_log_likelihoods_and_posteriors_match_the_inference_core(small):
    rng = np.random.default_rng(6)
    for m in (1, 2, 3, 5):
        models = [random_model(small, m, rng) for _ in range(3)]
        np.testing.assert_allclose(log_likelihoods(small, models),
                                   [_loglik(small, s) for s in models], rtol=1e-12)
    s = lcb.latent_class(small, 3)
    model = random_model(small, 3, rng)
    direct = lcb.hidden_posteriors(s, model.params(s), small)["class"]
    np.testing.assert_allclose(class_posteriors(small, model).T[small.pattern_index], direct,
                               atol=1e-12)


def test_one_lane_is_em_from_that_start(small):
    start = random_model(small, 3, np.random.default_rng(7))
    fitted = multiple_restart_em(small, [start], 1, EMSettings(tol=1e-9, max_iter=500))[0]
    s = lcb.latent_class(small, 3)
    fit = lcb.em(s, small, restarts=0, init=start.params(s), tol=1e-9 / small.n_observed_rows,
                 max_iter=500)
    assert np.isclose(fitted.loglik, fit.loglik, rtol=0, atol=1e-6)
    assert fitted.loglik >= _loglik(small, start)


def test_pruning_keeps_the_best_of_each_group_and_never_loses_ground(small):
    rng = np.random.default_rng(8)
    starts = [random_model(small, 2, rng) for _ in range(12)]
    weights = np.stack([small.counts, 2 * small.counts])
    groups = np.repeat([0, 1], 6)
    out = multiple_restart_em(small, starts, 2, EMSettings(), weights=weights, groups=groups)
    assert len(out) == 2
    single = multiple_restart_em(small, starts[:6], 2, EMSettings())[0]
    assert np.isclose(out[0].loglik, single.loglik)        # groups do not mix
    assert np.isclose(out[1].loglik, 2 * out[0].loglik, rtol=1e-3)  # doubled data, same fit
    one_iteration = multiple_restart_em(small, starts[:6], 6, EMSettings(max_iter=1))[0]
    assert single.loglik >= one_iteration.loglik - 1e-9


# ---------------------------------------------------------------------- the searches
@pytest.mark.parametrize("method", ["splitmerge", "standard3"])
def test_search_recovers_the_true_number_of_classes(simulated, method):
    res = lcb.learn_classes(simulated, method=method, seed=0)
    assert res.n_classes == 3
    assert res.stopped == "converged"
    truth = lcb.em(lcb.latent_class(simulated, 3), simulated, restarts=5, seed=0)
    assert res.fit.loglik >= truth.loglik - 0.05
    accepted = res.to_frame().query("accepted")["score"].to_numpy()
    assert np.all(np.diff(accepted) > 0)
    assert res.score == pytest.approx(res.fit.bic)


def test_same_seed_same_path(small):
    a = lcb.learn_classes(small, seed=3).to_frame().drop(columns="seconds")
    b = lcb.learn_classes(small, seed=3).to_frame().drop(columns="seconds")
    assert a.equals(b)


def test_standard_fixed_fits_the_given_classes(small):
    res = lcb.learn_classes(small, method="fixed", n_classes=2, seed=0)
    assert res.n_classes == 2 and len(res.path) == 5
    assert list(res.path[0]._asdict())[:2] == ["step", "operation"]


def test_other_scores_and_the_time_limit(small):
    aic = lcb.learn_classes(small, score="aic", seed=0)
    assert aic.score == pytest.approx(aic.fit.aic)
    icl = lcb.learn_classes(small, score="icl", seed=0, max_classes=2)
    assert icl.n_classes <= 2 and icl.score == pytest.approx(icl.fit.icl, abs=1e-4)
    quick = lcb.learn_classes(small, seed=0, time_limit=1e-6)
    assert quick.stopped == "time_limit" and quick.n_classes == 1


def test_vbem_score_is_the_corrected_bound(small):
    res = lcb.learn_classes(small, score="vbem", seed=0, max_classes=2)
    s = res.structure
    vb = lcb.vbem(s, small, restarts=0, init=lcb.em(s, small, restarts=0, init=res.params,
                                                       max_iter=1))
    assert res.score == pytest.approx(vb.elbo_corrected, abs=1e-6)


@pytest.mark.slow  # an SMC evidence per candidate of the search: 30-45 s
def test_smc_score_is_lcb_smc_at_seed_0(small):
    res = lcb.learn_classes(small, score="smc", seed=0, max_classes=2)
    again = lcb.smc(res.structure, small, seed=0)
    assert np.isfinite(res.score) and res.score == again.log_evidence


def test_result_round_trips_and_is_a_compare_candidate(small, tmp_path):
    res = lcb.learn_classes(small, seed=0)
    spec = json.loads(json.dumps(res.to_dict()))
    assert spec["best"]["n_classes"] == res.n_classes
    assert lcb.Structure.from_dict(spec["best"]["structure"]) == res.structure
    assert len(spec["path"]) == len(res.path)
    comp = lcb.compare(small, candidates=[res.structure, lcb.latent_class(small, 1)],
                       methods=["bic"])
    assert comp.to_frame()["bic"].iloc[0] == pytest.approx(res.fit.bic, abs=1e-3)
    page = res.to_html(tmp_path / "learn.html").read_text()
    assert page.count("<img") == 2 and "Path of moves" in page


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"score": "bics"}, "unknown score"),
    ({"method": "greedy"}, "unknown method"),
    ({"time_limit": 0}, "time_limit"),
    ({"method": "fixed"}, "needs n_classes"),
    ({"n_classes": 3}, "leave it out"),
])
def test_bad_arguments(small, kwargs, message):
    with pytest.raises(lcb.LcbayesError, match=message):
        lcb.learn_classes(small, **kwargs)


def test_independence_model_is_the_observed_frequencies(small):
    model = independence_model(small)
    codes = small.codes[:, 0]
    seen = codes[codes >= 0]
    np.testing.assert_allclose(model.items[0][0], np.bincount(seen) / seen.size)


# ---------------------------------------------------------------------- the command line
def _write(data, path):
    data.to_pandas().to_csv(path, index=False)
    return str(path)


def test_cli_learn_json(small, tmp_path, capsys):
    path = _write(small, tmp_path / "d.csv")
    report = tmp_path / "r.html"
    assert main(["learn", path, "--json", "--report", str(report)]) == 0
    spec = json.loads(capsys.readouterr().out)
    assert spec["best"]["structure"]["kind"] == "latent_class"
    best = spec["best"]   # the score is the chosen model's BIC: ln L - d/2 ln N, recomputed
    bic = best["loglik"] - best["n_parameters"] / 2 * math.log(best["n_observed_rows"])
    assert spec["score_name"] == "bic" and spec["score"] == pytest.approx(bic, abs=1e-9)
    assert report.exists()


@pytest.mark.parametrize(("args", "message"), [
    (["--time-limit", "0"], "--time-limit"),
    (["--score", "bics"], "unknown score 'bics'; choose from bic, bic_e"),
    (["--method", "greedy"], "unknown method 'greedy'"),
    (["--time-limit", "-3"], "--time-limit"),
    (["--method", "fixed"], "needs n_classes"),
])
def test_cli_learn_bad_input(small, tmp_path, capsys, args, message):
    path = _write(small, tmp_path / "d.csv")
    report = tmp_path / "r.html"
    assert main(["learn", path, "--report", str(report), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and "Traceback" not in err[0]
    assert not report.exists()
