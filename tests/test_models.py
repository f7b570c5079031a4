"""The NumPyro model's log density is the engine's log prior plus log likelihood."""

from __future__ import annotations

import numpy as np
import numpyro
import pytest
from numpyro.infer.util import log_density

import lcbayes as lcb


def _data(seed=0, n=80):
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, c, n) for c in (2, 3, 2, 4, 2)], axis=1)
    codes = np.where(rng.random(codes.shape) < 0.15, -1, codes)
    return lcb.Dataset.from_codes(codes, cardinalities=(2, 3, 2, 4, 2))


def _structures(data):
    a, b, c, d, e = data.columns
    return {
        "lc": lcb.latent_class(data, 3),
        "hlc": lcb.hlc(data, {"H": ["H1", a, b], "H1": [c, d, e]}, {"H": 2, "H1": 3}),
        "dag": lcb.dag(data, {a: ["s1"], b: ["s1", "s2"], c: ["s2", a], d: ["s2"], e: [d]},
                       {"s1": 2, "s2": 3}),
    }


@pytest.mark.parametrize("kind", ["lc", "hlc", "dag"])
@pytest.mark.parametrize("prior", ["dirichlet", 0.7, {"H": 3.0, "s1": 2.5, "class": 1.5}])
def test_log_density_equals_log_prior_plus_log_likelihood(kind, prior):
    data = _data()
    structure = _structures(data)[kind]
    if isinstance(prior, dict):
        prior = {k: v for k, v in prior.items() if k in structure.nodes}
    model = lcb.numpyro_model(structure, prior=prior)
    for seed in range(3):
        params = lcb.random_params(structure, seed=seed)
        value, _ = log_density(model, (data,), {}, params)
        expected = lcb.log_prior(structure, params, prior=prior) + lcb.log_likelihood(
            structure, params, data
        )
        assert float(value) == pytest.approx(expected, rel=1e-12, abs=1e-9)


def test_model_without_data_is_the_prior():
    data = _data()
    structure = _structures(data)["lc"]
    params = lcb.random_params(structure, seed=1)
    value, _ = log_density(lcb.numpyro_model(structure), (None,), {}, params)
    assert float(value) == pytest.approx(lcb.log_prior(structure, params, prior="dirichlet"))


def test_sites_have_cpt_shapes():
    data = _data()
    structure = _structures(data)["dag"]
    params = lcb.random_params(structure, seed=2)
    model = numpyro.handlers.substitute(lcb.numpyro_model(structure), data=params)
    trace = numpyro.handlers.trace(model).get_trace(data)
    for i, name in enumerate(structure.nodes):
        assert trace[name]["value"].shape == structure.cpt_shape(i)
    expected = lcb.log_likelihood(structure, params, data)
    assert float(trace["log_likelihood"]["fn"].log_factor) == pytest.approx(expected)

