"""Specification tests for :mod:`lcbayes.structure` (discrete DAGs with hidden nodes).

The standard dimension is ``d = sum_i q_i (r_i - 1)`` (Beal & Ghahramani eq. 23): a latent class
model with ``K`` classes has ``(K - 1) + K sum_j (r_j - 1)`` free parameters; Beal & Ghahramani's
bipartite structures on two binary hidden and four five-valued observed nodes have 50 (true
structure), 66 (fully connected) and 18 (no links).
"""

from __future__ import annotations

import dataclasses
import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from lcbayes import Dataset, Structure, StructureError, dag, datasets, hlc, latent_class
from lcbayes.structure import MAX_ENUMERATED_STATES

BG_TRUE = {"y1": ["s1"], "y2": ["s1", "s2"], "y3": ["s1", "s2"], "y4": ["s2"]}
BG_HIDDEN = {"s1": 2, "s2": 2}
HLC_TREE = {"H": ["H1", "y4"], "H1": ["y1", "y2", "y3"]}
HLC_CARDS = {"H": 2, "H1": 3}
STRUCTURE_FIELDS = {
    "nodes": ("h", "a"),
    "cardinalities": (2, 3),
    "hidden": (True, False),
    "parents": ((), (0,)),
    "kind": "dag",
}


# ---------------------------------------------------------------------- data helpers
def make_data(cardinalities: dict[str, int], n: int = 40, seed: int = 0) -> Dataset:
    """Random complete codes in which every category of every column occurs."""
    rng = np.random.default_rng(seed)
    cols = []
    for r in cardinalities.values():
        col = rng.integers(0, r, size=n)
        col[:r] = np.arange(r)
        cols.append(col)
    return Dataset.from_codes(np.stack(cols, axis=1), columns=list(cardinalities))


@pytest.fixture(scope="module")
def binary7() -> Dataset:
    """Seven binary items A..G (the shape of the carcinoma data)."""
    return make_data(dict.fromkeys("ABCDEFG", 2))


@pytest.fixture(scope="module")
def bg_data() -> Dataset:
    """Four five-valued observed variables y1..y4 (Beal & Ghahramani's example)."""
    return make_data(dict.fromkeys(["y1", "y2", "y3", "y4"], 5))


@pytest.fixture(scope="module")
def abcd() -> Dataset:
    """Data for A -> B <- H -> C <- D (H hidden); cardinalities 2, 3, 2, 4."""
    return make_data({"A": 2, "B": 3, "C": 2, "D": 4})


def names(s: Structure, indices) -> set[str]:
    return {s.nodes[i] for i in indices}


def dimension_by_hand(s: Structure) -> int:
    """sum_i q_i (r_i - 1) from the CPT shapes."""
    return sum(
        math.prod(s.cpt_shape(i)[:-1]) * (s.cpt_shape(i)[-1] - 1) for i in range(s.n_nodes)
    )


def check_invariants(s: Structure) -> None:
    order = s.topological_order
    assert sorted(order) == list(range(s.n_nodes))
    position = {i: k for k, i in enumerate(order)}
    for i, pa in enumerate(s.parents):
        for p in pa:
            assert position[p] < position[i]
            assert i in s.children[p]
    for p, kids in enumerate(s.children):
        for c in kids:
            assert p in s.parents[c]
    for i in range(s.n_nodes):
        assert s.cpt_shape(i) == (*(s.cardinalities[p] for p in s.parents[i]), s.cardinalities[i])
        assert s.n_configs(i) == math.prod(s.cpt_shape(i)[:-1])
        for p in s.parents[i]:
            assert p in s.enumerated_nodes
    assert set(s.hidden_nodes) <= set(s.enumerated_nodes)
    assert s.n_parameters == dimension_by_hand(s)
    assert s.hidden_nodes == tuple(i for i in range(s.n_nodes) if s.hidden[i])
    assert s.hidden_nodes + s.observed_nodes == tuple(range(s.n_nodes))  # hidden first


# ====================================================================== latent class
class TestLatentClass:
    def test_layout(self, binary7):
        s = latent_class(binary7, 3)
        assert s.kind == "latent_class"
        assert s.nodes == ("class", *"ABCDEFG")
        assert s.cardinalities == (3, *(2,) * 7)
        assert s.hidden == (True, *(False,) * 7)
        assert s.parents == ((), *((0,),) * 7)
        assert s.children[0] == tuple(range(1, 8))
        assert s.observed_names == tuple("ABCDEFG")
        assert s.root == 0
        assert s.n_classes == 3
        assert s.enumerated_nodes == (0,)
        assert s.n_enumerated_states == 3
        assert s.labels[0] == (0, 1, 2)
        assert s.labels[1:] == binary7.labels
        check_invariants(s)

    @pytest.mark.parametrize(("k", "d"), [(1, 7), (2, 15), (3, 23), (4, 31)])
    def test_dimension_carcinoma_shape(self, binary7, k, d):
        assert latent_class(binary7, k).n_parameters == d

    @pytest.mark.parametrize("k", [1, 2, 3, 5])
    @pytest.mark.parametrize("cards", [[2, 3, 4], [5], [2, 2, 2, 6, 3]])
    def test_dimension_formula(self, k, cards):
        data = make_data({f"v{j}": r for j, r in enumerate(cards)})
        s = latent_class(data, k)
        assert s.n_parameters == (k - 1) + k * sum(r - 1 for r in cards)
        check_invariants(s)

    def test_carcinoma(self):
        data = datasets.load("carcinoma")
        dims = [latent_class(data, k).n_parameters for k in (1, 2, 3, 4)]
        assert dims == [7, 15, 23, 31]

    def test_cpt_shapes(self, binary7):
        s = latent_class(binary7, 3)
        assert s.cpt_shape(0) == (3,)
        assert all(s.cpt_shape(i) == (3, 2) for i in range(1, 8))

    def test_custom_class_name(self):
        data = make_data({"class": 2, "b": 3})
        with pytest.raises(StructureError, match=r"'class'.*also a data column.*name="):
            latent_class(data, 2)
        s = latent_class(data, 2, name="Z")
        assert s.nodes == ("Z", "class", "b")

    @pytest.mark.parametrize("k", [0, -1, 2.0, 2.5, "2", True, None])
    def test_bad_number_of_classes(self, binary7, k):
        with pytest.raises(StructureError, match=r"n_classes.*integer >= 1"):
            latent_class(binary7, k)

    def test_numpy_integer_classes(self, binary7):
        assert latent_class(binary7, np.int64(3)) == latent_class(binary7, 3)


# ====================================================================== Beal & Ghahramani DAGs
class TestBealGhahramani:
    def test_true_structure(self, bg_data):
        s = dag(bg_data, BG_TRUE, BG_HIDDEN)
        assert s.kind == "dag"
        assert s.nodes == ("s1", "s2", "y1", "y2", "y3", "y4")
        assert s.hidden == (True, True, False, False, False, False)
        assert s.parents == ((), (), (0,), (0, 1), (0, 1), (1,))
        assert s.n_parameters == 50
        check_invariants(s)

    def test_fully_connected(self, bg_data):
        s = dag(bg_data, {y: ["s1", "s2"] for y in bg_data.columns}, BG_HIDDEN)
        assert s.n_parameters == 66
        check_invariants(s)

    def test_no_links(self, bg_data):
        s = dag(bg_data, {y: [] for y in bg_data.columns}, BG_HIDDEN)
        assert s.n_parameters == 18
        assert s.nodes == ("s1", "s2", "y1", "y2", "y3", "y4")
        assert all(not pa for pa in s.parents)
        check_invariants(s)

    def test_cpt_shapes_follow_parent_order(self, bg_data):
        s = dag(bg_data, {"y1": ["s1"], "y2": ["s2", "s1"]}, {"s1": 2, "s2": 3})
        assert s.cpt_shape(s.index("s1")) == (2,)
        assert s.cpt_shape(s.index("y1")) == (2, 5)
        assert s.cpt_shape(s.index("y2")) == (3, 2, 5)
        assert s.parent_cardinalities(s.index("y2")) == (3, 2)
        assert s.n_configs(s.index("y2")) == 6

    def test_children_and_topological_order(self, bg_data):
        s = dag(bg_data, BG_TRUE, BG_HIDDEN)
        kids = {s.nodes[i]: names(s, k) for i, k in enumerate(s.children)}
        assert kids == {
            "s1": {"y1", "y2", "y3"},
            "s2": {"y2", "y3", "y4"},
            "y1": set(), "y2": set(), "y3": set(), "y4": set(),
        }  # fmt: skip
        order = [s.nodes[i] for i in s.topological_order]
        assert set(order[:2]) == {"s1", "s2"}

    def test_enumerated_nodes_are_the_hidden_ones(self, bg_data):
        s = dag(bg_data, BG_TRUE, BG_HIDDEN)
        assert names(s, s.enumerated_nodes) == {"s1", "s2"}
        assert s.n_enumerated_states == 4

    def test_only_named_columns_are_modelled(self, bg_data):
        s = dag(bg_data, {"y3": ["s1"]}, {"s1": 2})
        assert s.nodes == ("s1", "y3")
        assert s.observed_names == ("y3",)
        assert s.n_parameters == 1 + 2 * 4

    def test_hidden_parent_of_hidden(self, bg_data):
        s = dag(bg_data, {"s2": ["s1"], "y1": ["s2"], "y2": ["s1", "s2"]}, {"s1": 2, "s2": 3})
        assert s.parents[s.index("s2")] == (s.index("s1"),)
        assert s.n_parameters == 1 + 2 * 2 + 3 * 4 + 6 * 4
        check_invariants(s)


# ====================================================================== observed parents
class TestObservedParents:
    def test_v_structures(self, abcd):
        s = dag(abcd, {"B": ["A", "H"], "C": ["H", "D"]}, {"H": 2})
        assert s.nodes == ("H", "A", "B", "C", "D")
        assert names(s, s.enumerated_nodes) == {"H", "A", "D"}
        assert "B" not in names(s, s.enumerated_nodes)
        assert s.n_enumerated_states == 2 * 2 * 4
        # H: 1, A: 1, D: 3, B: q = 2*2 -> 4*2, C: q = 2*4 -> 8*1
        assert s.n_parameters == 1 + 1 + 3 + 8 + 8
        assert s.cpt_shape(s.index("B")) == (2, 2, 3)
        assert s.cpt_shape(s.index("C")) == (2, 4, 2)
        check_invariants(s)

    def test_observed_chain_without_hidden_node(self, abcd):
        s = dag(abcd, {"B": ["A"], "C": ["B"]}, {})
        assert s.hidden_nodes == ()
        assert names(s, s.enumerated_nodes) == {"A", "B"}
        assert s.n_parameters == 1 + 2 * 2 + 3 * 1
        check_invariants(s)

    def test_too_many_enumerated_states(self, bg_data):
        big = {"s1": 300, "s2": 300}
        assert 300 * 300 > MAX_ENUMERATED_STATES
        with pytest.raises(StructureError, match=r"90000 joint states.*limit"):
            dag(bg_data, {"y1": ["s1", "s2"]}, big)


# ====================================================================== HLC
class TestHlc:
    def test_layout(self, bg_data):
        s = hlc(bg_data, HLC_TREE, HLC_CARDS)
        assert s.kind == "hlc"
        assert s.nodes == ("H", "H1", "y1", "y2", "y3", "y4")
        assert s.hidden == (True, True, False, False, False, False)
        assert s.parents == ((), (0,), (1,), (1,), (1,), (0,))
        assert s.root == 0
        assert s.n_classes is None
        # H: 1; H1: 2 * 2; y4: 2 * 4; y1..y3: 3 * 3 * 4
        assert s.n_parameters == 1 + 4 + 8 + 36
        check_invariants(s)

    def test_tree_given_children_first(self, bg_data):
        tree = {"H1": ["y1", "y2", "y3"], "H": ["H1", "y4"]}
        s = hlc(bg_data, tree, HLC_CARDS)
        assert s.nodes[s.root] == "H"
        assert s == hlc(bg_data, HLC_TREE, HLC_CARDS)
        check_invariants(s)

    def test_deeper_tree(self):
        data = make_data({c: 2 for c in "ABCDEF"})
        tree = {"R": ["H1", "H2"], "H1": ["A", "B", "H3"], "H2": ["C", "D"], "H3": ["E", "F"]}
        s = hlc(data, tree, {"R": 2, "H1": 2, "H2": 3, "H3": 1})
        assert names(s, s.hidden_nodes) == {"R", "H1", "H2", "H3"}
        assert s.observed_names == tuple("ABCDEF")
        assert s.n_parameters == dimension_by_hand(s)
        check_invariants(s)

    def test_single_hidden_node_matches_latent_class_dimension(self, bg_data):
        s = hlc(bg_data, {"class": list(bg_data.columns)}, {"class": 3})
        assert s.n_parameters == latent_class(bg_data, 3).n_parameters

    def test_two_parents(self, bg_data):
        tree = {"H": ["H1", "y1", "y4"], "H1": ["y1", "y2", "y3"]}
        with pytest.raises(StructureError, match=r"'y1' has two parents.*tree"):
            hlc(bg_data, tree, HLC_CARDS)

    def test_hidden_node_with_two_parents(self, bg_data):
        tree = {"R": ["H", "G"], "G": ["H", "y1"], "H": ["y2"]}
        with pytest.raises(StructureError, match=r"'H' has two parents"):
            hlc(bg_data, tree, {"R": 2, "G": 2, "H": 2})

    def test_observed_internal_node(self, bg_data):
        with pytest.raises(StructureError, match=r"'y1' is a data column.*leaves"):
            hlc(bg_data, {"H": ["y1"], "y1": ["y2"]}, {"H": 2, "y1": 2})

    def test_two_roots(self, bg_data):
        with pytest.raises(StructureError, match=r"exactly one root.*'H'.*'G'"):
            hlc(bg_data, {"H": ["y1", "y2"], "G": ["y3"]}, {"H": 2, "G": 2})

    def test_cycle_has_no_root(self, bg_data):
        with pytest.raises(StructureError, match=r"exactly one root.*cycle"):
            hlc(bg_data, {"H": ["G", "y1"], "G": ["H", "y2"]}, {"H": 2, "G": 2})

    def test_unknown_leaf(self, bg_data):
        with pytest.raises(StructureError, match=r"leaf 'zz' is not a data column"):
            hlc(bg_data, {"H": ["y1", "zz"]}, {"H": 2})

    def test_missing_cardinality(self, bg_data):
        with pytest.raises(StructureError, match=r"'H1' has no entry in cardinalities"):
            hlc(bg_data, HLC_TREE, {"H": 2})

    def test_cardinality_of_unknown_node(self, bg_data):
        with pytest.raises(StructureError, match=r"\['Q'\]"):
            hlc(bg_data, HLC_TREE, {**HLC_CARDS, "Q": 2})

    def test_hidden_node_without_children(self, bg_data):
        with pytest.raises(StructureError, match=r"'H' has no children"):
            hlc(bg_data, {"H": []}, {"H": 2})

    @pytest.mark.parametrize("card", [0, -2, 1.5, 2.0, "3", True])
    def test_bad_cardinality(self, bg_data, card):
        with pytest.raises(StructureError, match=r"'H1' must be an integer >= 1"):
            hlc(bg_data, HLC_TREE, {"H": 2, "H1": card})

    def test_cardinality_one_allowed(self, bg_data):
        s = hlc(bg_data, HLC_TREE, {"H": 1, "H1": 1})
        assert s.n_parameters == 4 * 4


# ====================================================================== DAG errors
class TestDagErrors:
    def test_cycle_between_observed_nodes(self, bg_data):
        with pytest.raises(StructureError, match=r"cycle: (y1 -> y2 -> y1|y2 -> y1 -> y2)"):
            dag(bg_data, {"y1": ["y2"], "y2": ["y1"]}, {})

    def test_longer_cycle_through_hidden_nodes(self, bg_data):
        parents = {"h1": ["h3"], "h2": ["h1"], "h3": ["h2"], "y1": ["h1"]}
        with pytest.raises(StructureError, match=r"cycle: (h\d) -> h\d -> h\d -> \1$"):
            dag(bg_data, parents, {"h1": 2, "h2": 2, "h3": 2})

    def test_self_loop(self, bg_data):
        with pytest.raises(StructureError, match=r"'y1' is its own parent"):
            dag(bg_data, {"y1": ["y1"]}, {})

    def test_parent_listed_twice(self, bg_data):
        with pytest.raises(StructureError, match=r"'y1' lists a parent twice"):
            dag(bg_data, {"y1": ["s1", "s1"]}, {"s1": 2})

    @pytest.mark.parametrize(
        "parents", [{"y1": ["ghost"]}, {"ghost": ["s1"]}], ids=["as-parent", "as-child"]
    )
    def test_observed_node_not_a_data_column(self, bg_data, parents):
        with pytest.raises(StructureError, match=r"'ghost'.*neither data columns nor hidden"):
            dag(bg_data, parents, {"s1": 2})

    @pytest.mark.parametrize("card", [0, -1, 2.0, 1.5, "2", True, None])
    def test_bad_cardinality(self, bg_data, card):
        with pytest.raises(StructureError, match=r"'s1' must be an integer >= 1"):
            dag(bg_data, {"y1": ["s1"]}, {"s1": card})

    def test_hidden_node_with_observed_parent(self, bg_data):
        with pytest.raises(StructureError, match=r"hidden node 's1' has observed parent.*'y1'"):
            dag(bg_data, {"s1": ["y1"], "y2": ["s1"]}, {"s1": 2})

    def test_hidden_name_clashes_with_column(self, bg_data):
        with pytest.raises(StructureError, match=r"'y2' has the name of a data column"):
            dag(bg_data, {"y1": ["y2"]}, {"y2": 2})

    def test_no_observed_node(self, bg_data):
        with pytest.raises(StructureError, match="no observed node"):
            dag(bg_data, {}, {"s1": 2})


# ====================================================================== Structure itself
class TestStructureValidation:
    def make(self, **changes) -> Structure:
        return Structure(**{**STRUCTURE_FIELDS, **changes})

    def test_valid(self):
        s = self.make()
        assert s.n_parameters == 1 + 2 * 2
        assert s.labels == ((0, 1), (0, 1, 2))  # default labels

    @pytest.mark.parametrize(
        ("changes", "match"),
        [
            ({"cardinalities": (0, 3)}, r"'h' has cardinality 0"),
            ({"cardinalities": (2.0, 3)}, r"'h' has cardinality 2.0"),
            ({"cardinalities": (True, 3)}, r"'h' has cardinality True"),
            ({"cardinalities": (2,)}, "equal length"),
            ({"kind": "bn"}, "kind must be one of"),
            ({"nodes": ("a", "a")}, "unique"),
            ({"parents": ((), (5,))}, r"'a' has invalid parents"),
            ({"parents": ((0,), ())}, r"'h' has invalid parents"),
            ({"parents": ((), (0, 0))}, r"'a' has invalid parents"),
            ({"parents": ((1,), ())}, r"hidden node 'h' has observed parent"),
            ({"hidden": (True, True)}, "no observed node"),
        ],
    )
    def test_errors(self, changes, match):
        with pytest.raises(StructureError, match=match):
            self.make(**changes)

    def test_cycle(self):
        with pytest.raises(StructureError, match=r"cycle: .*a.*b"):
            Structure(
                nodes=("a", "b", "c"),
                cardinalities=(2, 2, 2),
                hidden=(False, False, False),
                parents=((1,), (0,), ()),
                kind="dag",
            )

    def test_index_and_root(self, bg_data):
        s = dag(bg_data, BG_TRUE, BG_HIDDEN)
        assert s.index("y3") == 4
        with pytest.raises(StructureError, match=r"no node 'nope'"):
            s.index("nope")
        with pytest.raises(StructureError, match="no single hidden root"):
            _ = s.root
        assert s.n_classes is None

    def test_frozen(self, binary7):
        s = latent_class(binary7, 2)
        with pytest.raises(dataclasses.FrozenInstanceError):
            s.kind = "dag"


# ====================================================================== check_data
class TestCheckData:
    def test_selects_observed_columns_in_order(self, bg_data):
        s = dag(bg_data, {"y3": ["s1"], "y1": ["s1"]}, {"s1": 2})
        out = s.check_data(bg_data)
        assert out.columns == ("y1", "y3")
        np.testing.assert_array_equal(out.codes, bg_data.codes[:, [0, 2]])

    def test_reorders_columns(self, bg_data):
        s = latent_class(bg_data, 2)
        shuffled = bg_data.select(["y4", "y2", "y1", "y3"])
        out = s.check_data(shuffled)
        assert out.columns == bg_data.columns
        np.testing.assert_array_equal(out.codes, bg_data.codes)

    def test_same_data_returned_unchanged(self, binary7):
        assert latent_class(binary7, 2).check_data(binary7) is binary7

    def test_missing_column(self, bg_data):
        s = latent_class(bg_data, 2)
        with pytest.raises(StructureError, match=r"lack column.*'y4'"):
            s.check_data(bg_data.select(["y1", "y2", "y3"]))

    def test_different_labels(self):
        codes = [[0, 1], [1, 0], [1, 1]]
        numbers = Dataset.from_codes(codes, columns=["a", "b"], labels=[[1, 2], [1, 2]])
        words = Dataset.from_codes(codes, columns=["a", "b"], labels=[["no", "yes"], [1, 2]])
        s = latent_class(numbers, 2)
        assert s.check_data(numbers) is numbers
        with pytest.raises(StructureError, match=r"column 'a' has value.*build the structure"):
            s.check_data(words)

    def test_rows_lacking_a_category_are_recoded_to_the_structure_labels(self):
        full = Dataset.from_codes([[0, 1], [1, 0], [2, 1]], columns=["a", "b"],
                                  labels=[["x", "y", "z"], [1, 2]])
        with pytest.warns(UserWarning, match="'b' is constant"):
            part = Dataset.from_pandas(pd.DataFrame({"a": ["z", "x"], "b": [1, None]}))
        assert part.labels[0] == ("x", "z")
        out = latent_class(full, 2).check_data(part)
        assert out.labels == full.labels
        np.testing.assert_array_equal(out.codes, [[2, 0], [0, -1]])

    def test_different_number_of_categories(self):
        two = Dataset.from_codes([[0, 1], [1, 0]], columns=["a", "b"])
        three = Dataset.from_codes([[0, 1], [2, 0]], columns=["a", "b"])
        with pytest.raises(StructureError, match=r"'a'"):
            latent_class(two, 2).check_data(three)

    def test_observed_parent_columns_required(self, abcd):
        s = dag(abcd, {"B": ["A", "H"]}, {"H": 2})
        with pytest.raises(StructureError, match=r"'A'"):
            s.check_data(abcd.select(["B", "C"]))


# ====================================================================== hashing and jax.jit
class TestHashing:
    def test_equal_when_built_the_same_way(self, bg_data):
        again = make_data(dict.fromkeys(["y1", "y2", "y3", "y4"], 5), seed=0)
        assert again is not bg_data
        for build in (
            lambda d: latent_class(d, 3),
            lambda d: dag(d, BG_TRUE, BG_HIDDEN),
            lambda d: hlc(d, HLC_TREE, HLC_CARDS),
        ):
            a, b = build(bg_data), build(again)
            assert a is not b
            assert a == b
            assert hash(a) == hash(b)
            assert len({a, b}) == 1
            assert {a: "x"}[b] == "x"

    def test_equal_regardless_of_data_rows(self):
        a = make_data({"p": 2, "q": 3}, n=10, seed=1)
        b = make_data({"p": 2, "q": 3}, n=50, seed=2)
        assert latent_class(a, 2) == latent_class(b, 2)

    def test_different_structures_differ(self, bg_data):
        variants = [
            latent_class(bg_data, 2),
            latent_class(bg_data, 3),
            latent_class(bg_data, 2, name="Z"),
            dag(bg_data, BG_TRUE, BG_HIDDEN),
            dag(bg_data, {y: ["s1", "s2"] for y in bg_data.columns}, BG_HIDDEN),
            dag(bg_data, BG_TRUE, {"s1": 2, "s2": 3}),
            hlc(bg_data, {"class": list(bg_data.columns)}, {"class": 2}),  # kind differs
        ]
        assert len(set(variants)) == len(variants)

    def test_labels_are_not_part_of_equality(self):
        codes = [[0, 1], [1, 0]]
        a = Dataset.from_codes(codes, columns=["a", "b"], labels=[[1, 2], [1, 2]])
        b = Dataset.from_codes(codes, columns=["a", "b"], labels=[["n", "y"], [1, 2]])
        assert latent_class(a, 2) == latent_class(b, 2)
        assert hash(latent_class(a, 2)) == hash(latent_class(b, 2))

    def test_static_argument_of_jit(self, bg_data):
        traces = []

        def f(structure: Structure, x):
            traces.append(structure)
            shape = structure.cpt_shape(structure.n_nodes - 1)  # Python ints at trace time
            return jnp.sum(x) * structure.n_parameters + jnp.zeros(shape).size

        jf = jax.jit(f, static_argnums=0)
        s1 = dag(bg_data, BG_TRUE, BG_HIDDEN)
        s2 = dag(make_data(dict.fromkeys(["y1", "y2", "y3", "y4"], 5), seed=3), BG_TRUE, BG_HIDDEN)
        x = jnp.ones(3)
        assert float(jf(s1, x)) == 3 * 50 + 10
        assert float(jf(s2, 2 * x)) == 6 * 50 + 10
        assert len(traces) == 1  # equal structures share one compiled function
        other = latent_class(bg_data, 2)
        assert float(jf(other, x)) == 3 * other.n_parameters + 10
        assert len(traces) == 2


# ====================================================================== to_dict and describe
class TestDescriptions:
    def test_to_dict(self, bg_data):
        s = dag(bg_data, BG_TRUE, BG_HIDDEN)
        d = s.to_dict()
        assert json.loads(json.dumps(d)) == d
        assert d["kind"] == "dag"
        assert d["n_parameters"] == 50
        assert [n["name"] for n in d["nodes"]] == list(s.nodes)
        assert d["nodes"][3] == {
            "name": "y2", "cardinality": 5, "hidden": False, "parents": ["s1", "s2"],
            "labels": list(bg_data.labels[1]),
        }  # fmt: skip
        assert d["nodes"][0] == {"name": "s1", "cardinality": 2, "hidden": True, "parents": [],
                                 "labels": [0, 1]}

    def test_from_dict_reads_to_dict_back_with_labels(self, bg_data):
        for s in (dag(bg_data, BG_TRUE, BG_HIDDEN), hlc(bg_data, HLC_TREE, HLC_CARDS),
                  latent_class(bg_data, 3)):
            again = Structure.from_dict(json.loads(json.dumps(s.to_dict())))
            assert again == s and again.labels == s.labels and again.kind == s.kind
        words = Dataset.from_codes([[0, 1], [1, 0]], columns=["a", "b"],
                                   labels=[["no", "yes"], [1, 2]])
        s = latent_class(words, 2)
        assert Structure.from_dict(json.loads(json.dumps(s.to_dict()))).labels == s.labels

    def test_from_dict_refuses_a_malformed_description(self):
        with pytest.raises(StructureError, match="not a structure description"):
            Structure.from_dict({"kind": "dag"})

    def test_to_dict_is_json_ready_with_numpy_cardinalities(self, binary7):
        d = latent_class(binary7, np.int64(2)).to_dict()
        json.dumps(d)
        assert d["n_parameters"] == 15

    def test_describe(self, bg_data):
        s = dag(bg_data, BG_TRUE, BG_HIDDEN)
        lines = s.describe().splitlines()
        assert len(lines) == s.n_nodes
        assert "s1 (hidden, 2 states) <- -" in lines
        assert "y2 (observed, 5 states) <- s1, s2" in lines
        described = [line.split(" ")[0] for line in lines]
        assert described == [s.nodes[i] for i in s.topological_order]

    def test_describe_hlc_parents_before_children(self, bg_data):
        s = hlc(bg_data, {"H1": ["y1", "y2", "y3"], "H": ["H1", "y4"]}, HLC_CARDS)
        described = [line.split(" ")[0] for line in s.describe().splitlines()]
        assert described.index("H") < described.index("H1") < described.index("y1")
