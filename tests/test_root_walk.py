"""Root walking of HLC models (Karčiauskas 2005, §3.4.2): re-rooting keeps the model.

Reversing the edges from the root to a hidden node must leave the joint distribution of all
variables, ``ln p(y)`` of every data pattern (missing values included) and the standard
dimension unchanged, produce proper CPTs, and be undone by walking back.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import lcbayes as lcb
from lcbayes.errors import StructureError
from lcbayes.inference import log_marginal
from lcbayes.learn.root_walk import walk_root
from lcbayes.params import to_tables

try:
    from .brute_force import BruteForce
except ImportError:
    from brute_force import BruteForce

#: Root H over two hidden children, each with three binary leaves.
WIDE = ({"H": ["H1", "H2"], "H1": ["A", "B", "C"], "H2": ["D", "E", "F"]},
        {"H": 2, "H1": 3, "H2": 2})
#: Root H -> H1 -> H3 -> leaves: walking to H3 reverses two edges.
DEEP = ({"H": ["H1", "A"], "H1": ["H3", "B"], "H3": ["C", "D", "E", "F"]},
        {"H": 3, "H1": 2, "H3": 3})
COLUMNS = ("A", "B", "C", "D", "E", "F")
#: Per-pattern ``ln p(y)`` from the inference core (jitted: one compile per structure).
LOG_MARGINAL = jax.jit(log_marginal, static_argnums=0)


def _hlc(spec) -> lcb.Structure:
    """The HLC structure of ``spec`` over six binary columns."""
    codes = np.random.default_rng(0).integers(0, 2, size=(20, len(COLUMNS)))
    return lcb.hlc(lcb.Dataset.from_codes(codes, columns=COLUMNS), *spec)


def _model(spec, seed: int, missing: float = 0.0, n: int = 300):
    """Structure, random parameters and data simulated from them."""
    structure = _hlc(spec)
    params = lcb.random_params(structure, seed=seed)
    data = lcb.simulate(structure, params, n, seed=seed, missing=missing)
    return structure, params, data


def _pattern_log_marginals(structure, params, data) -> np.ndarray:
    log_tables = tuple(jnp.log(t) for t in to_tables(structure, params))
    return np.asarray(LOG_MARGINAL(structure, log_tables, jnp.asarray(data.patterns)))


def _parent_names(structure) -> dict[str, tuple[str, ...]]:
    return {n: tuple(structure.nodes[p] for p in pa)
            for n, pa in zip(structure.nodes, structure.parents, strict=True)}


@pytest.mark.parametrize(("spec", "node", "missing"),
                         [(WIDE, "H1", 0.2), (WIDE, "H2", 0.0), (DEEP, "H1", 0.1),
                          (DEEP, "H3", 0.2)])
def test_walking_keeps_every_pattern_probability(spec, node, missing):
    structure, params, data = _model(spec, seed=3, missing=missing)
    assert (data.codes < 0).any() == (missing > 0)
    walked, new_params = walk_root(structure, params, node)
    assert walked.nodes[walked.root] == node and walked.kind == "hlc"
    before = _pattern_log_marginals(structure, params, data)
    after = _pattern_log_marginals(walked, new_params, data)
    np.testing.assert_allclose(after, before, rtol=0, atol=1e-10)


def test_walking_keeps_the_log_likelihood():
    structure, params, data = _model(DEEP, seed=8, missing=0.2)
    walked, new_params = walk_root(structure, params, "H3")
    assert lcb.log_likelihood(walked, new_params, data) == pytest.approx(
        lcb.log_likelihood(structure, params, data), rel=0, abs=1e-9)


@pytest.mark.parametrize(("spec", "node"), [(WIDE, "H2"), (DEEP, "H3")])
def test_walking_keeps_the_joint_of_all_variables(spec, node):
    """Brute-force enumeration, independent of the inference core: the joint over hidden and
    observed nodes is the same, so ``P'(X | Y)`` is Bayes' rule and nothing else moved."""
    structure, params, _ = _model(spec, seed=5)
    walked, new_params = walk_root(structure, params, node)
    np.testing.assert_allclose(BruteForce(walked, new_params).joint,
                               BruteForce(structure, params).joint, rtol=1e-12, atol=1e-15)


def test_the_walked_structure_is_the_same_model_rerooted():
    structure, params, _ = _model(DEEP, seed=1)
    walked, new_params = walk_root(structure, params, "H3")
    assert walked.nodes == structure.nodes
    assert walked.cardinalities == structure.cardinalities
    assert walked.hidden == structure.hidden
    assert walked.labels == structure.labels
    assert walked.n_parameters == structure.n_parameters
    assert _parent_names(walked) == {**_parent_names(structure),
                                     "H3": (), "H1": ("H3",), "H": ("H1",)}
    assert set(new_params) == set(structure.nodes)
    for i, name in enumerate(walked.nodes):
        table = new_params[name]
        assert table.shape == walked.cpt_shape(i) and table.dtype == np.float64
        np.testing.assert_allclose(table.sum(axis=-1), 1.0, rtol=0, atol=1e-12)
    for name in ("A", "B", "C", "D", "E", "F"):  # CPTs off the path are untouched
        np.testing.assert_array_equal(new_params[name], params[name])


@pytest.mark.parametrize(("spec", "node"), [(WIDE, "H1"), (DEEP, "H3"), (DEEP, "H1")])
def test_walking_back_restores_the_original_parameters(spec, node):
    structure, params, _ = _model(spec, seed=7)
    walked, new_params = walk_root(structure, params, node)
    back, back_params = walk_root(walked, new_params, "H")
    assert back == structure
    for name in structure.nodes:
        np.testing.assert_allclose(back_params[name], params[name], rtol=0, atol=1e-10)


def test_walking_between_siblings_goes_through_the_root():
    structure, params, data = _model(WIDE, seed=2, missing=0.1)
    at_h1, params_h1 = walk_root(structure, params, "H1")
    at_h2, params_h2 = walk_root(at_h1, params_h1, "H2")
    assert _parent_names(at_h2) == {**_parent_names(structure), "H": ("H2",), "H2": ()}
    direct = walk_root(structure, params, "H2")[1]
    for name in structure.nodes:
        np.testing.assert_allclose(params_h2[name], direct[name], rtol=0, atol=1e-12)
    np.testing.assert_allclose(_pattern_log_marginals(at_h2, params_h2, data),
                               _pattern_log_marginals(structure, params, data), atol=1e-10)


def test_walking_to_the_root_is_a_no_op():
    structure, params, _ = _model(WIDE, seed=0)
    walked, new_params = walk_root(structure, params, "H")
    assert walked is structure and new_params is params


def test_an_unreachable_state_gets_the_old_root_distribution():
    """Where ``P'(y) = 0`` Bayes' rule is undefined; the row is ``P(X)`` (any would do)."""
    structure, params, data = _model(WIDE, seed=4, missing=0.1)
    params = dict(params)
    params["H1"] = params["H1"].copy()
    params["H1"][:, 1] = 0.0
    params["H1"] /= params["H1"].sum(axis=1, keepdims=True)
    walked, new_params = walk_root(structure, params, "H1")
    assert new_params["H1"][1] == 0.0
    np.testing.assert_array_equal(new_params["H"][1], params["H"])
    np.testing.assert_allclose(new_params["H"].sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(_pattern_log_marginals(walked, new_params, data),
                               _pattern_log_marginals(structure, params, data), atol=1e-10)


def test_errors_name_the_problem():
    structure, params, data = _model(WIDE, seed=0)
    lc = lcb.latent_class(data, 2)
    with pytest.raises(StructureError, match=r"needs an HLC structure.*one hidden node"):
        walk_root(lc, lcb.random_params(lc), "class")
    with pytest.raises(StructureError, match="no node 'Z'"):
        walk_root(structure, params, "Z")
    with pytest.raises(StructureError, match=r"'A' is an observed node.*\['H', 'H1', 'H2'\]"):
        walk_root(structure, params, "A")
    with pytest.raises(StructureError, match="lack the CPT of node 'H2'"):
        walk_root(structure, {k: v for k, v in params.items() if k != "H2"}, "H1")
    with pytest.raises(StructureError, match=r"CPT of 'H1' has shape \(3, 2\)"):
        walk_root(structure, {**params, "H1": params["H1"].T}, "H1")


def test_em_fits_a_walked_structure():
    """The engines take a re-rooted structure (its nodes are not in parents-first order), and
    EM started from walked parameters stays at the walked optimum."""
    structure, _, data = _model(DEEP, seed=6, missing=0.1)
    fit = lcb.em(structure, data, restarts=1, seed=0)
    walked, walked_params = walk_root(structure, fit.params, "H3")
    refit = lcb.em(walked, data, restarts=0, init=walked_params)
    assert refit.n_parameters == fit.n_parameters
    assert refit.loglik == pytest.approx(fit.loglik, abs=1e-4)
    fresh = lcb.em(walked, data, restarts=1, seed=0)
    assert np.isfinite(fresh.loglik) and fresh.n_parameters == structure.n_parameters
