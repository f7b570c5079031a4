"""Effective dimension: published test vectors (Geiger, Heckerman & Meek 1996; notes A.5-A.6),
bounds, models without hidden variables, reproducibility and the row-subset method."""

from __future__ import annotations

import math

import numpy as np
import pytest

import lcbayes as lcb


def _codes_data(cards, n=40, seed=0, columns=None):
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, c, n) for c in cards], axis=1)
    return lcb.Dataset.from_codes(codes, columns=columns, cardinalities=cards)


def _latent_class(cards, n_classes):
    return lcb.latent_class(_codes_data(cards), n_classes)


def _w_structure(n_hidden_states):
    """A -> B <- H -> C <- D with H hidden and A, B, C, D binary (GHM's example)."""
    data = _codes_data((2, 2, 2, 2), columns=("A", "B", "C", "D"))
    return lcb.dag(data, parents={"B": ["A", "H"], "C": ["H", "D"]},
                   hidden={"H": n_hidden_states})


def _standard_dimension(structure):
    """``sum_i q_i (r_i - 1)`` from the plain cardinalities and parents."""
    cards = structure.cardinalities
    return sum(math.prod(cards[p] for p in pa) * (cards[i] - 1)
               for i, pa in enumerate(structure.parents))


def _observed_simplex_dimension(structure):
    """``prod_j r_j - 1`` over the observed nodes."""
    return math.prod(c for c, h in zip(structure.cardinalities, structure.hidden, strict=True)
                     if not h) - 1


# ---------------------------------------------------------------------- published test vectors
@pytest.mark.parametrize(("n_items", "expected"),
                         [(1, 1), (2, 3), (3, 7), (4, 9), (5, 11), (6, 13), (7, 15)])
def test_naive_bayes_with_binary_hidden_root_has_ghm_dimension(n_items, expected):
    """GHM's table: min(2n + 1, 2^n - 1) for n binary children (notes A.5.1, A.6 table A)."""
    assert lcb.effective_dimension(_latent_class((2,) * n_items, 2)) == expected


def test_three_classes_on_four_binary_items_is_defective_13_not_14():
    """The defective secant sigma_3((P^1)^4) (notes A.6 table B): 14 parameters, dimension 13,
    although the observed simplex has dimension 15."""
    structure = _latent_class((2, 2, 2, 2), 3)
    assert structure.n_parameters == 14
    assert lcb.effective_dimension(structure) == 13


def test_four_classes_on_three_ternary_items_is_defective_25():
    """Rank-4 3x3x3 tensors form a hypersurface (notes A.5.3, A.6 table C): 27 parameters,
    observed simplex of dimension 26, effective dimension 25."""
    structure = _latent_class((3, 3, 3), 4)
    assert (structure.n_parameters, _observed_simplex_dimension(structure)) == (27, 26)
    assert lcb.effective_dimension(structure) == 25


@pytest.mark.parametrize(("n_hidden_states", "n_parameters", "expected"),
                         [(2, 11, 9), (3, 16, 10)])
def test_w_structure_has_ghm_dimension(n_hidden_states, n_parameters, expected):
    """A -> B <- H -> C <- D: 9 with |H| = 2 (GHM: two network parameters locally redundant),
    10 with |H| = 3 (notes A.5.2; the d-separation ceiling 15 - 5 = 10)."""
    structure = _w_structure(n_hidden_states)
    assert structure.n_parameters == n_parameters
    assert lcb.effective_dimension(structure) == expected


def test_hlc_tree_has_the_dimension_of_its_decomposition():
    """Root Y1 (3 states, 2 binary leaves) with child Y2 (3 states, 2 binary leaves): 20
    parameters but dimension 14 (notes A.6 table E; Kocka-Zhang: 11 + 11 - (3 * 3 - 1))."""
    data = _codes_data((2, 2, 2, 2), columns=("A", "B", "C", "D"))
    structure = lcb.hlc(data, {"Y1": ["A", "B", "Y2"], "Y2": ["C", "D"]}, {"Y1": 3, "Y2": 3})
    assert structure.n_parameters == 20
    assert lcb.effective_dimension(structure) == 14


# ---------------------------------------------------------------------- no hidden variables
def test_without_hidden_variables_dimension_equals_number_of_parameters():
    data = _codes_data((2, 3, 2, 4), columns=("A", "B", "C", "D"))
    observed_only = lcb.dag(data, parents={"B": ["A"], "C": ["A", "B"], "D": ["C"]}, hidden={})
    # A: 1, B|A: 2 * 2, C|A,B: 6 * 1, D|C: 2 * 3
    assert _standard_dimension(observed_only) == observed_only.n_parameters == 17
    assert lcb.effective_dimension(observed_only) == 17

    independence = lcb.latent_class(data, 1)  # a hidden node with one state hides nothing
    assert lcb.effective_dimension(independence) == 1 + 2 + 1 + 3


# ---------------------------------------------------------------------- bounds
@pytest.mark.parametrize(("cards", "n_classes", "expected"), [
    ((3, 3), 2, 7),       # rank-2 3x3 matrices: k (r1 + r2 - k) - 1
    ((3, 3), 3, 8),       # the whole simplex, below 14 parameters
    ((2, 2, 3), 4, 11),   # the whole simplex, below 19 parameters
    ((2, 3, 4), 2, 13),   # every parameter counts
])
def test_dimension_never_exceeds_parameters_nor_observed_simplex(cards, n_classes, expected):
    """Notes A.6 table C; the bounds are computed from the definitions."""
    structure = _latent_class(cards, n_classes)
    details = lcb.effective_dimension_details(structure)
    parameters = _standard_dimension(structure)
    simplex = math.prod(cards) - 1
    assert details.dimension == expected
    assert details.dimension <= parameters == structure.n_parameters
    assert details.dimension <= simplex == details.n_configurations - 1
    assert details.upper_bound == min(parameters, simplex)
    assert details.method == "full" and details.n_rows == math.prod(cards)
    # the rank is the count of singular values above the reported threshold
    assert np.sum(details.singular_values > details.threshold) >= details.dimension


# ---------------------------------------------------------------------- reproducibility
def test_same_seed_gives_same_answer_and_every_seed_finds_the_regular_rank():
    structure = _w_structure(2)
    first = lcb.effective_dimension_details(structure, seed=3)
    again = lcb.effective_dimension_details(structure, seed=3)
    assert first.dimension == again.dimension
    assert first.ranks == again.ranks
    np.testing.assert_array_equal(first.singular_values, again.singular_values)
    # the regular rank is attained for almost every point, so any single point finds it
    for seed in range(4):
        assert lcb.effective_dimension(structure, seed=seed, n_points=1) == 9


# ---------------------------------------------------------------------- subset method
def test_row_subset_method_agrees_with_every_configuration():
    """LC with 12 binary items and 3 classes: min(k (n + 1) - 1, 2^n - 1) = 38 (notes A.6 B),
    from all 4096 configurations and from a random subset of them."""
    structure = _latent_class((2,) * 12, 3)
    full = lcb.effective_dimension_details(structure)
    subset = lcb.effective_dimension_details(structure, max_rows=256)
    assert (full.method, full.n_rows) == ("full", 4096)
    assert subset.method == "subset" and subset.n_rows < 4096
    assert full.dimension == subset.dimension == 38


@pytest.mark.parametrize(("cards", "n_classes"), [((2,) * 7, 1), ((2,) * 5, 3),
                                                  ((3, 2, 4, 3), 4)])
def test_latent_class_jacobian_is_the_autodiff_one(cards, n_classes):
    """The closed-form latent class Jacobian (module docstring) equals ``jax.jacfwd`` of the
    inference core's ``2 sqrt(p(y))`` at a random point, row for row, column for column."""
    from lcbayes import dimension

    structure = _latent_class(cards, n_classes)
    theta = dimension._random_point(structure, 5)
    configs = np.indices(cards).reshape(len(cards), -1).T
    closed = dimension._latent_class_jacobian(structure, theta, configs)
    autodiff = dimension._jacobian_rows(structure, theta, configs,
                                        dimension._chunk_rows(structure, len(configs)))
    assert closed.shape == (len(configs), structure.n_parameters)
    np.testing.assert_allclose(closed, autodiff, rtol=0, atol=1e-12)
