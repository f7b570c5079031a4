"""Bridge sampling from Gibbs chains (lcb.bridge_sampling): within its error of the exact
evidence, a mode found twice counted once (the partition of unity over strata), the warp
density's symmetrisation equal to the sum over relabellings, the result's JSON form and
refused structures."""

from __future__ import annotations

import itertools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import logsumexp

import lcbayes as lcb
from lcbayes.samplers.gibbs_bridge import BridgeResult
from lcbayes.samplers.mode_density import ModeDensity, draw, log_density
from lcbayes.samplers.reference import default_restarts


def _small(n_rows: int = 40, seed: int = 2) -> lcb.Dataset:
    template = lcb.Dataset.from_codes(np.array([[0, 0, 0, 0], [1, 1, 1, 1]]))
    model = lcb.latent_class(template, 2)
    return lcb.simulate(model, lcb.random_params(model, seed=seed), n_rows, seed=seed)


def test_bridge_sampling_agrees_with_the_exact_evidence_and_round_trips():
    data = _small()
    structure = lcb.latent_class(data, 2)
    exact = lcb.exact_evidence(structure, data).log_evidence
    res = lcb.bridge_sampling(structure, data, seed=0, draws=400, warmup=100)
    assert abs(res.log_evidence - exact) <= 3 * res.stderr + 0.03, (res.log_evidence, exact)
    # every run's strata add up to its estimate
    totals = logsumexp(np.nan_to_num(res.run_mode_log_evidence, nan=-np.inf), axis=1)
    assert np.allclose(totals, res.run_log_evidence)
    back = BridgeResult.from_dict(json.loads(json.dumps(res.to_dict())))
    assert back.log_evidence == res.log_evidence and back.runs == res.runs
    assert "ln p(y | m)" in res.summary() and len(res.to_frame()) == res.runs
    assert res.settings["restarts"] == default_restarts(2)


def test_the_warp_density_is_symmetric_and_sums_over_the_relabellings():
    rng = np.random.default_rng(0)
    k, categories = 3, np.array([[True, True, False], [True, True, True]])
    d = 3
    chol = np.stack([np.eye(d) * (0.5 + 0.1 * c) for c in range(k)])
    q = ModeDensity(jnp.array([2.0, 3.0, 4.0]), jnp.asarray(rng.normal(size=(k, d))),
                    jnp.asarray(chol), jnp.asarray(np.linalg.inv(chol)),
                    jnp.asarray(np.where(categories, 1.5 + rng.random((k, 2, 3)), 1.0)),
                    jnp.array([0, 1, 1]), jnp.array([0, 0, 1]), jnp.array([1, 2, 2]))
    log_w, log_t = draw(jax.random.PRNGKey(1), q, jnp.asarray(categories), k)
    value = float(log_density(q, jnp.asarray(categories), k, log_w, log_t))
    for perm in itertools.permutations(range(k)):
        p = np.array(perm)
        assert float(log_density(q, jnp.asarray(categories), k, log_w[p], log_t[p])) == \
            pytest.approx(value, abs=1e-9)


def test_bridge_sampling_takes_latent_class_models_only():
    data = _small(20)
    tree = lcb.hlc(data, {"H": ["H1", data.columns[2], data.columns[3]],
                          "H1": [data.columns[0], data.columns[1]]}, {"H": 2, "H1": 2})
    with pytest.raises(lcb.ArgumentError, match="latent class"):
        lcb.bridge_sampling(tree, data)
    with pytest.raises(lcb.ArgumentError, match="runs"):
        lcb.bridge_sampling(lcb.latent_class(data, 2), data, runs=1)
