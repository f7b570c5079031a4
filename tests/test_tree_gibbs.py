"""Gibbs sampling of HLC trees (forward filtering, backward sampling) and DAGs (joint
enumeration): the sampling kernel against the exact joint posterior of the hidden values, the
whole sampler against importance sampling from the prior, and the result contract."""

from __future__ import annotations

import itertools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import lcbayes as lcb
from lcbayes.inference import flat, log_marginal, prepare
from lcbayes.samplers.network_gibbs import sample_tree_states, tree_conditionals

TREE = {"H": ["H1", "H2"], "H1": ["A", "B"], "H2": ["C", "D"]}
CARDS = {"H": 2, "H1": 2, "H2": 2}


def _data(n: int = 30, seed: int = 3) -> lcb.Dataset:
    template = lcb.Dataset.from_codes(np.array([[0, 0, 0, 0], [1, 1, 1, 1]]),
                                      columns=list("ABCD"), labels=[(0, 1)] * 4)
    truth = lcb.hlc(template, TREE, CARDS)
    data = lcb.simulate(truth, lcb.random_params(truth, seed=seed), n=n, seed=seed)
    codes = np.array(data.codes)
    codes[::7, 1] = -1     # missing values are summed out
    codes[3, 2] = -1
    return lcb.Dataset.from_codes(codes, columns=list("ABCD"), labels=[(0, 1)] * 4)


def _exact_joint(structure: lcb.Structure, params: dict, pattern: np.ndarray) -> np.ndarray:
    """``p(H, H1, H2 | y)`` (2 x 2 x 2) by brute-force enumeration."""
    joint = np.zeros((2, 2, 2))
    for h, h1, h2 in itertools.product(range(2), repeat=3):
        p = params["H"][h] * params["H1"][h, h1] * params["H2"][h, h2]
        for column, parent in zip("ABCD", (h1, h1, h2, h2), strict=True):
            y = pattern["ABCD".index(column)]
            if y >= 0:
                p *= params[column][parent, y]
        joint[h, h1, h2] = p
    return joint / joint.sum()


def test_backward_sampling_draws_the_exact_joint_posterior_of_the_hidden_values():
    data = _data()
    structure = lcb.hlc(data, TREE, CARDS)
    params = {k: np.asarray(v) for k, v in lcb.random_params(structure, seed=11).items()}
    log_tables = tuple(jnp.log(t) for t in lcb.params.to_tables(structure, params))
    patterns = np.asarray(data.patterns)
    conditionals = tree_conditionals(structure, log_tables,
                                     prepare(structure, jnp.asarray(patterns)))
    rows = jnp.arange(patterns.shape[0])
    draws = 20_000
    u = jax.random.uniform(jax.random.key(0), (draws, patterns.shape[0], 3))
    states = jax.vmap(lambda uu: sample_tree_states(structure, conditionals, rows, uu))(u)
    h, h1, h2 = (np.asarray(states[structure.index(v)]) for v in ("H", "H1", "H2"))
    for p, pattern in enumerate(patterns):
        exact = _exact_joint(structure, params, pattern)
        freq = np.zeros((2, 2, 2))
        np.add.at(freq, (h[:, p], h1[:, p], h2[:, p]), 1.0 / draws)
        sd = np.sqrt(exact * (1 - exact) / draws)
        assert np.all(np.abs(freq - exact) <= 5 * sd + 1e-3), (pattern, freq, exact)


def _importance_mean_loglik(structure: lcb.Structure, data: lcb.Dataset, n: int = 200_000
                            ) -> tuple[float, float]:
    """``E[ln p(y | theta) | y]`` by importance sampling from the Dirichlet(1) prior, with its
    delta-method standard error."""
    rng = np.random.default_rng(5)
    draws = [np.log(rng.dirichlet(np.ones(r), size=(n, q))) for q, r in structure.table_shapes]
    patterns, counts = jnp.asarray(data.patterns), jnp.asarray(data.counts)
    evidence = prepare(structure, patterns)

    @jax.jit
    def loglik(tables):
        return counts @ log_marginal(structure, tables, evidence)

    ll = np.concatenate([np.asarray(jax.vmap(loglik)(tuple(jnp.asarray(d[i:i + 20_000])
                                                          for d in draws)))
                         for i in range(0, n, 20_000)])
    w = np.exp(ll - ll.max())
    w /= w.sum()
    mean = float(w @ ll)
    return mean, float(np.sqrt(np.sum(w ** 2 * (ll - mean) ** 2)))


@pytest.mark.parametrize("kind", ["hlc", "dag"])
def test_posterior_mean_loglik_agrees_with_importance_sampling(kind):
    data = _data()
    if kind == "hlc":
        structure = lcb.hlc(data, TREE, CARDS)
    else:  # bipartite: both hidden nodes are parents of B and C
        structure = lcb.dag(data, {"A": ["s1"], "B": ["s1", "s2"], "C": ["s1", "s2"],
                                   "D": ["s2"]}, {"s1": 2, "s2": 2})
    res = lcb.gibbs(structure, data, draws=3000, warmup=300, chains=4, seed=1)
    ll = res.idata.sample_stats["log_likelihood"]
    az = pytest.importorskip("arviz")
    se_gibbs = float(np.std(ll.values) / np.sqrt(az.ess(ll.values)))
    truth, se_is = _importance_mean_loglik(structure, data)
    assert abs(float(ll.mean()) - truth) < 4 * np.hypot(se_gibbs, se_is) + 0.02, (
        float(ll.mean()), truth, se_gibbs, se_is)


def test_network_result_contract_and_round_trip():
    data = _data()
    structure = lcb.hlc(data, TREE, CARDS)
    res = lcb.gibbs(structure, data, draws=50, warmup=10, chains=2, seed=0)
    post = res.posterior
    assert set(post.data_vars) == {f"theta_{n}" for n in structure.nodes}
    assert post["theta_H"].dims == ("chain", "draw", "H")
    assert post["theta_H1"].dims == ("chain", "draw", "H", "H1")
    assert post["theta_A"].dims == ("chain", "draw", "H1", "A_category")
    np.testing.assert_allclose(post["theta_A"].sum("A_category"), 1.0)
    # the log-likelihood of each draw is that of its tables
    tables = {n: post[f"theta_{n}"].values[1, 7] for n in structure.nodes}
    log_tables = tuple(jnp.log(jnp.asarray(tables[n]).reshape(s))
                       for n, s in zip(structure.nodes, structure.table_shapes, strict=True))
    expected = float(jnp.asarray(data.counts) @ log_marginal(
        structure, log_tables, jnp.asarray(data.patterns)))
    assert float(res.idata.sample_stats["log_likelihood"][1, 7]) == pytest.approx(expected)
    assert "an HLC model" in res.summary() and res.n_classes is None
    back = lcb.GibbsResult.from_dict(json.loads(json.dumps(res.to_dict())))
    np.testing.assert_array_equal(back.posterior["theta_H2"].values,
                                  post["theta_H2"].values)
    assert back.structure == structure
    with pytest.raises(lcb.LcbayesError, match="relabels latent class draws"):
        res.predict_proba(data)
    again = lcb.gibbs(structure, data, draws=50, warmup=10, chains=2, seed=0)
    np.testing.assert_array_equal(again.posterior["theta_A"].values, post["theta_A"].values)
    assert flat.offsets(structure.table_shapes)[-1] == 2 + 4 + 4 + 4 * 4
