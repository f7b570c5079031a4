"""The alias (label-symmetry) count S of Beal & Ghahramani §3.2."""

from __future__ import annotations

import math

import numpy as np
import pytest

import lcbayes as lcb


def _data(cards):
    codes = np.array([[r - 1 for r in cards], [0] * len(cards)])
    return lcb.Dataset.from_codes(codes, cardinalities=list(cards))


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_latent_class_model_has_k_factorial_aliases(k):
    structure = lcb.latent_class(_data((2, 3, 2)), k)
    assert lcb.alias_count(structure) == math.factorial(k)
    assert lcb.log_alias(structure) == pytest.approx(math.log(math.factorial(k)))


def test_beal_worked_example_with_hidden_parents_of_cardinalities_3_3_4():
    """One observed node with hidden parents 3, 3, 4: S = 2! * 3! * 3! * 4! = 1728 (the two
    ternary parents are exchangeable; notes §3.3 erratum)."""
    data = _data((2,))
    structure = lcb.dag(data, {"X1": ["a", "b", "c"]}, {"a": 3, "b": 3, "c": 4})
    assert lcb.alias_count(structure) == 1728


def test_exchangeable_hidden_parents_need_the_same_children():
    data = _data((2, 2, 2))
    symmetric = lcb.dag(data, {"X1": ["s1", "s2"], "X2": ["s1", "s2"], "X3": []},
                        {"s1": 2, "s2": 2})
    asymmetric = lcb.dag(data, {"X1": ["s1"], "X2": ["s1", "s2"], "X3": ["s2"]},
                         {"s1": 2, "s2": 2})
    assert lcb.alias_count(symmetric) == 2 * 2 * 2
    assert lcb.alias_count(asymmetric) == 2 * 2
    different_sizes = lcb.dag(data, {"X1": ["s1", "s2"], "X2": ["s1", "s2"]}, {"s1": 2, "s2": 3})
    assert lcb.alias_count(different_sizes) == 2 * 6


def test_hidden_node_without_observed_descendants_adds_no_alias():
    data = _data((2, 2))
    structure = lcb.dag(data, {"X1": ["s1"], "X2": ["s1"]}, {"s1": 3, "s2": 2})
    assert lcb.alias_count(structure) == 6


def test_hlc_siblings_with_their_own_leaves_are_not_exchangeable():
    data = _data((2, 2, 2, 2))
    tree = lcb.hlc(data, {"H": ["A", "B"], "A": ["X1", "X2"], "B": ["X3", "X4"]},
                   {"H": 2, "A": 2, "B": 2})
    assert lcb.alias_count(tree) == 2 * 2 * 2


def test_beal_structures_follow_the_notes_children_rule():
    """Notes §3.3: ln 4 for the asymmetric true structure, ln 8 for swap-symmetric graphs whose
    two hidden nodes both have children, ln 2 when one has children, 0 for the empty graph."""
    from beal import ghahramani as bg

    swap = {0: 0, 1: 2, 2: 1, 3: 3}
    for codes in bg.parent_codes():
        used = {h for c in codes for h in bg.PARENT_SETS[c]}
        symmetric = tuple(swap[c] for c in codes) == tuple(codes)
        expected = 2 ** len(used) * (2 if len(used) == 2 and symmetric else 1)
        assert lcb.alias_count(bg.structure_from_codes(codes)) == expected, codes
    assert bg.log_alias(bg.TRUE_CODES) == pytest.approx(math.log(4))
    assert bg.log_alias((0, 0, 0, 0)) == 0.0
