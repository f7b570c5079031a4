"""Label switching: every method recovers known labels of switched synthetic posteriors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lcbayes.errors import LcbayesError
from lcbayes.samplers.idata import condition_on_k
from lcbayes.samplers.relabelling import METHODS, allocation_probabilities, relabel

try:  # tests/ as a package
    from .switched_posterior import ITEMS, rjmcmc_like, switched
except ImportError:  # tests/ on sys.path
    from switched_posterior import ITEMS, rjmcmc_like, switched

#: Posterior means must lie within this many Monte Carlo standard errors of the exact mean.
MC_Z = 4.5


@pytest.fixture(scope="module")
def random_switch():
    """4 chains x 250 draws, every draw under an independent random labelling."""
    return switched(seed=1, mode="random")


@pytest.fixture(scope="module")
def results(random_switch):
    """Every method's relabelling of ``random_switch``."""
    return {method: relabel(random_switch.idata, method=method) for method in METHODS}


@pytest.fixture(scope="module")
def rj():
    """4 chains x 300 padded draws (max 5 classes), k in {2, 3, 4}, about 60% with k = 3."""
    return rjmcmc_like(seed=2)


def _true_labels(sigma_of_draws: np.ndarray, perms: np.ndarray) -> np.ndarray:
    """Per output draw, the true class of every relabelled class: ``sigma[perm[j]]``."""
    return np.take_along_axis(sigma_of_draws, perms, axis=-1).reshape(-1, perms.shape[-1])


def _agreement(tau: np.ndarray) -> tuple[np.ndarray, float]:
    """The most common labelling and the fraction of draws that have it."""
    values, counts = np.unique(tau, axis=0, return_counts=True)
    return values[np.argmax(counts)], counts.max() / counts.sum()


def _max_z(res, sw, tau: np.ndarray) -> float:
    """Largest |relabelled posterior mean - exact mean| / MC standard error over every
    class weight and item-response probability (relabelled class j is true class tau[j])."""
    post = res.idata.posterior
    n = post.sizes["chain"] * post.sizes["draw"]
    pairs = [(post["class_weights"].mean(("chain", "draw")).values,
              sw.mean_weights[tau], sw.sd_weights[tau])]
    pairs += [(post[f"theta_{c}"].mean(("chain", "draw")).values, sw.mean_thetas[c][tau],
               sw.sd_thetas[c][tau]) for c in ITEMS]
    return max(float(np.max(np.abs(m - exact) / (sd / np.sqrt(n)))) for m, exact, sd in pairs)


def test_switched_draws_disagree_before_relabelling(random_switch):
    _, share = _agreement(random_switch.sigma.reshape(-1, 3))
    assert share < 0.25  # about 1/6 of the draws share one of the 3! labellings


@pytest.mark.parametrize("method", METHODS)
def test_every_method_recovers_the_true_labelling_in_over_99_percent_of_draws(
        random_switch, results, method):
    res = results[method]
    tau, share = _agreement(_true_labels(random_switch.sigma, res.permutations))
    assert share > 0.99, (method, share)
    if method == "constraint":  # the true weights 0.5 > 0.3 > 0.2 are in decreasing order
        np.testing.assert_array_equal(tau, [0, 1, 2])


@pytest.mark.parametrize("method", METHODS)
def test_relabelled_posterior_means_match_the_truth_within_mc_error(random_switch, results,
                                                                   method):
    res = results[method]
    tau, _ = _agreement(_true_labels(random_switch.sigma, res.permutations))
    assert _max_z(res, random_switch, tau) < MC_Z


def test_raw_posterior_means_of_switched_draws_are_far_from_the_truth(random_switch, results):
    """The check above can fail: without relabelling the class means are blurred together."""
    res = results["constraint"]
    raw = random_switch.idata.posterior["class_weights"].mean(("chain", "draw")).values
    n = random_switch.sigma.shape[0] * random_switch.sigma.shape[1]
    z = np.abs(raw - random_switch.mean_weights) / (random_switch.sd_weights / np.sqrt(n))
    assert z.max() > 100
    assert _max_z(res, random_switch, np.arange(3)) < MC_Z


@pytest.mark.parametrize("method", METHODS)
def test_permutations_are_valid_and_reproduce_the_relabelled_draws(random_switch, results,
                                                                   method):
    res = results[method]
    assert res.permutations.shape == (4, 250, 3)
    np.testing.assert_array_equal(np.sort(res.permutations, axis=-1),
                                  np.broadcast_to(np.arange(3), res.permutations.shape))
    for name in ["class_weights", *(f"theta_{c}" for c in ITEMS)]:
        original = random_switch.idata.posterior[name].values
        index = res.permutations.reshape(res.permutations.shape + (1,) * (original.ndim - 3))
        np.testing.assert_array_equal(np.take_along_axis(original, index, axis=2),
                                      res.idata.posterior[name].values)
    for group in ("sample_stats", "observed_data"):
        assert res.idata[group].equals(random_switch.idata[group])
    assert res.idata.posterior.attrs["relabel_method"] == method
    assert "relabel_method" not in random_switch.idata.posterior.attrs


@pytest.mark.parametrize("method", ["stephens", "ecr", "pivot"])
def test_the_pivot_is_the_draw_of_highest_log_joint_and_keeps_its_labels(random_switch,
                                                                          results, method):
    res = results[method]
    log_joint = random_switch.idata.sample_stats["log_joint"].values
    assert res.pivot == np.unravel_index(np.argmax(log_joint), log_joint.shape)
    np.testing.assert_array_equal(res.permutations[res.pivot], [0, 1, 2])


def test_constraint_orders_the_classes_by_decreasing_weight(results):
    weights = results["constraint"].idata.posterior["class_weights"].values
    assert np.all(np.diff(weights, axis=-1) <= 0)


def test_stephens_iterates_to_a_fixed_point(random_switch, results):
    res = results["stephens"]
    assert 2 <= res.iterations < 100
    again = relabel(random_switch.idata, method="stephens", max_iter=res.iterations)
    np.testing.assert_array_equal(again.permutations, res.permutations)


def test_allocation_probabilities_are_bayes_rule_per_row_with_missing_values(random_switch):
    post = random_switch.idata.posterior
    y = random_switch.idata.observed_data["y"].values
    draws = [(0, 0), (2, 17), (3, 249)]
    weights = np.stack([post["class_weights"].values[d] for d in draws])
    thetas = [np.stack([post[f"theta_{c}"].values[d] for d in draws]) for c in ITEMS]
    observed = (y >= 0).any(axis=1)
    patterns = np.unique(y[observed], axis=0)
    probs = allocation_probabilities(weights, thetas, patterns)
    for i, row in enumerate(patterns):
        for s in range(len(draws)):
            numerator = weights[s].copy()
            for m, value in enumerate(row):
                if value >= 0:
                    numerator *= thetas[m][s][:, value]
            np.testing.assert_allclose(probs[i, s], numerator / numerator.sum(), rtol=1e-10)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("chains", ["keep", "flatten"])
def test_rjmcmc_draws_with_k_classes_are_selected_and_relabelled(rj, method, chains):
    k = rj.idata.posterior["k"].values
    res = relabel(rj.idata, method=method, n_classes=3, chains=chains)
    post = res.idata.posterior
    if chains == "keep":
        assert post.sizes["chain"] == 4 and post.sizes["draw"] == (k == 3).sum(axis=1).min()
    else:
        assert post.sizes["chain"] == 1 and post.sizes["draw"] == (k == 3).sum()
    assert post.sizes["class"] == 3 and "k" not in post and post.attrs["relabel_k"] == 3
    assert np.all(k[res.source_chain, res.source_draw] == 3)
    for name in ["class_weights", *(f"theta_{c}" for c in ITEMS)]:
        original = rj.idata.posterior[name].values[res.source_chain, res.source_draw, :3]
        index = res.permutations.reshape(res.permutations.shape + (1,) * (original.ndim - 3))
        np.testing.assert_array_equal(np.take_along_axis(original, index, axis=2),
                                      post[name].values)
    np.testing.assert_array_equal(
        res.idata.sample_stats["log_joint"].values,
        rj.idata.sample_stats["log_joint"].values[res.source_chain, res.source_draw])
    tau, share = _agreement(_true_labels(rj.sigma[res.source_chain, res.source_draw],
                                         res.permutations))
    assert share > 0.99
    assert _max_z(res, rj, tau) < MC_Z


def test_condition_on_k_selects_without_relabelling(rj):
    chosen = condition_on_k(rj.idata, 2, chains="flatten")
    k = rj.idata.posterior["k"].values
    weights = rj.idata.posterior["class_weights"].values[k == 2][:, :2]
    np.testing.assert_array_equal(chosen.posterior["class_weights"].values[0], weights)


def test_summary_and_to_dict_are_readable(results):
    res = results["ecr"]
    d = json.loads(json.dumps(res.to_dict()))
    assert d["method"] == "ecr" and d["draws"] == 250 and d["n_classes"] == 3
    assert sorted(d["class_weights"]) == pytest.approx([0.2, 0.3, 0.5], abs=0.01)
    assert "Relabelled by ecr" in res.summary() and "ecr" in repr(res)


# ---------------------------------------------------------------------- bad input
def _without(idata, name: str):
    out = idata.copy()
    out.posterior = out.posterior.drop_vars(name)
    return out


def _all_k(idata, k: int):
    """Every draw claims ``k`` classes although only its first ``k_true`` slots are set."""
    out = idata.copy()
    out.posterior["k"] = out.posterior["k"] * 0 + k
    return out


@pytest.mark.parametrize(("call", "message"), [
    (lambda sw, rj: relabel(sw.idata, method="kmeans"), "unknown method 'kmeans'"),
    (lambda sw, rj: relabel(sw.idata, chains="stack"), "unknown chains 'stack'"),
    (lambda sw, rj: relabel(_without(sw.idata, "theta_C")), "posterior lacks theta_C"),
    (lambda sw, rj: relabel(_without(sw.idata, "class_weights")), "no variable 'class_weights'"),
    (lambda sw, rj: relabel(sw.idata, n_classes=2), "posterior has no variable 'k'"),
    (lambda sw, rj: relabel(rj.idata), "pass n_classes=K"),
    (lambda sw, rj: relabel(rj.idata, n_classes=5),
     "no draw has n_classes=5; the draws visit K=2"),
    (lambda sw, rj: relabel(_all_k(rj.idata, 5), n_classes=5), "non-finite class parameters"),
])
def test_bad_input_raises_lcbayes_error(random_switch, rj, call, message):
    with pytest.raises(LcbayesError, match=message):
        call(random_switch, rj)


def test_a_pivot_method_needs_log_joint_but_the_constraint_does_not(random_switch):
    idata = random_switch.idata.copy()
    idata.sample_stats = idata.sample_stats.drop_vars("log_joint")
    with pytest.raises(LcbayesError, match="log_joint"):
        relabel(idata, method="stephens")
    assert relabel(idata, method="constraint").permutations.shape == (4, 250, 3)



# ------------------------------------------------------------- real sampler output, end to end
@pytest.fixture(scope="module")
def gibbs_run():
    """``lcb.gibbs`` on 500 rows simulated from the well-separated truth: 4 short chains, each
    from its own random start, so the chains hold the classes under different labels."""
    import lcbayes as lcb
    from lcbayes.samplers.gibbs import gibbs

    try:  # tests/ as a package
        from .switched_posterior import LABELS, simulate
    except ImportError:  # tests/ on sys.path
        from switched_posterior import LABELS, simulate

    y = simulate(np.random.default_rng(11))
    data = lcb.Dataset.from_codes(y, columns=ITEMS, labels=[LABELS[c] for c in ITEMS])
    return gibbs(lcb.latent_class(data, 3), data, draws=150, warmup=100, chains=4, seed=3)


def _labelling_against_truth(idata) -> np.ndarray:
    """Per draw, the permutation ``tau`` with ``stored[j] ~ true[tau[j]]`` (Hungarian match of the
    item tables to the true ones): identity means the draw carries the true labels."""
    from scipy.optimize import linear_sum_assignment

    try:  # tests/ as a package
        from .switched_posterior import THETAS
    except ImportError:  # tests/ on sys.path
        from switched_posterior import THETAS

    post = idata.posterior
    stored = np.concatenate([post[f"theta_{c}"].values for c in ITEMS], axis=-1)  # (C, D, K, L)
    truth = np.concatenate([np.asarray(THETAS[c]) for c in ITEMS], axis=-1)        # (K, L)
    cost = ((stored[..., :, None, :] - truth[None, None, None, :, :]) ** 2).sum(-1)
    out = np.empty(stored.shape[:3], dtype=int)
    for c in range(stored.shape[0]):
        for d in range(stored.shape[1]):
            out[c, d] = linear_sum_assignment(cost[c, d])[1]
    return out


def test_gibbs_chains_disagree_on_labels_before_relabelling(gibbs_run):
    tau = _labelling_against_truth(gibbs_run)
    per_chain = {tuple(tau[c, 0]) for c in range(tau.shape[0])}
    assert len(per_chain) > 1, "all chains started under one labelling: the test shows nothing"


@pytest.mark.parametrize("method", METHODS)
def test_every_method_relabels_real_gibbs_output_consistently(gibbs_run, method):
    """After relabelling, > 99% of the draws of all chains carry one common labelling (the
    same permutation of the true classes), and the relabelled class means lie near the truth
    under that labelling."""
    try:  # tests/ as a package
        from .switched_posterior import THETAS, WEIGHTS
    except ImportError:  # tests/ on sys.path
        from switched_posterior import THETAS, WEIGHTS

    res = relabel(gibbs_run, method=method)
    tau = _labelling_against_truth(res.idata).reshape(-1, 3)
    labellings, counts = np.unique(tau, axis=0, return_counts=True)
    common = labellings[np.argmax(counts)]
    assert counts.max() / len(tau) > 0.99, dict(zip(map(tuple, labellings), counts, strict=True))
    weights = res.idata.posterior["class_weights"].values.mean(axis=(0, 1))
    np.testing.assert_allclose(weights, WEIGHTS[common], atol=0.06)
    for c in ITEMS:
        mean = res.idata.posterior[f"theta_{c}"].values.mean(axis=(0, 1))
        np.testing.assert_allclose(mean, np.asarray(THETAS[c])[common], atol=0.1)
    if method == "constraint":  # decreasing weights: the true order, as the truth's are sorted
        assert np.array_equal(common, np.argsort(-WEIGHTS))
