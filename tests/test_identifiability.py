"""Generic local identifiability from the Jacobian rank (Whiley 1999 ch. 3): his theorems for
naive Bayes networks with a binary root, and the digest's reconstructed rank table including
the counterexample to Conjecture 3.8."""

from __future__ import annotations

import json

import numpy as np
import pytest

import lcbayes as lcb


def naive_bayes(n_items: int, n_classes: int, cards: int = 2) -> lcb.Structure:
    template = lcb.Dataset.from_codes(np.array([[0] * n_items, [cards - 1] * n_items]),
                                      cardinalities=[cards] * n_items)
    return lcb.latent_class(template, n_classes)


@pytest.mark.parametrize("n", [3, 4, 5, 6, 7])
def test_a_binary_root_with_three_or_more_binary_items_has_rank_2n_plus_1(n):
    # Whiley Thms 3.4-3.7 (Geiger, Heckerman & Meek's conjecture)
    result = lcb.identifiable(naive_bayes(n, 2))
    assert result.rank == 2 * n + 1 == result.n_parameters
    assert result and result.deficiency == 0


def test_two_binary_items_are_not_identifiable():
    # Whiley §3.1: 5 parameters, 3 observed degrees of freedom
    result = lcb.identifiable(naive_bayes(2, 2))
    assert not result
    assert (result.rank, result.n_parameters, result.observed_dof) == (3, 5, 3)
    assert not result.necessary_condition and result.deficiency == 2


@pytest.mark.parametrize(("n", "k", "rank"), [(4, 3, 13), (5, 3, 17), (6, 4, 27), (8, 4, 35),
                                              (5, 6, 31), (6, 9, 62), (7, 3, 23)])
def test_the_reconstructed_rank_table(n, k, rank):
    # digest §3: min(k (n + 1) - 1, 2^n - 1) everywhere except (n=4, k=3)
    result = lcb.identifiable(naive_bayes(n, k))
    assert result.rank == rank
    assert bool(result) == (rank == k * (n + 1) - 1)


def test_four_items_three_classes_fail_although_the_necessary_condition_holds():
    # the counterexample to Whiley's Conjecture 3.8: 14 parameters, 15 observed degrees of
    # freedom, rank 13
    result = lcb.identifiable(naive_bayes(4, 3))
    assert result.necessary_condition and not result
    assert result.deficiency == 1
    assert "NOT identifiable" in result.summary()
    assert "although the necessary condition holds" in result.summary()


def test_polytomous_items_and_json_round_trip():
    # Conjecture 3.9 (no counterexample known): 3 ternary items, 2 classes: 1 + 2*3*2 = 13
    # parameters, 26 observed degrees of freedom
    result = lcb.identifiable(naive_bayes(3, 2, cards=3))
    assert result and result.rank == 13
    back = lcb.IdentifiabilityResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert back == result


def test_bad_arguments_are_refused():
    with pytest.raises(TypeError, match="structure"):
        lcb.identifiable({"class": 2})
    with pytest.raises(lcb.ArgumentError, match="n_points"):
        lcb.identifiable(naive_bayes(3, 2), n_points=0)
