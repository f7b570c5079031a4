"""Learning the hidden tree of an HLC model (EAST): the operators with parameter reuse, local
EM, the search, its result and the command line.

The tests that run a whole search (recovery, the latent class bound, same seed, output, the
bottom-up build) are marked slow: a search compiles some 90 small programs (the latent class
search it runs as a bound, the local EMs, the full EM of each new tree); run them with
``pytest tests/test_learn_tree.py -m slow``."""

from __future__ import annotations

import json
from itertools import product

import numpy as np
import pytest

import lcbayes as lcb
from lcbayes.cli import main
from lcbayes.errors import StructureError
from lcbayes.learn.moves import Context
from lcbayes.learn.restarts import EMSettings
from lcbayes.learn.scoring import Scorer
from lcbayes.learn.tree_build import build_tree, islands, mutual_information
from lcbayes.learn.tree_drawing import (
    bipartitions,
    bracket,
    node_profiles,
    profiles_figure,
    robinson_foulds,
    same_tree,
    tree_text,
)
from lcbayes.learn.tree_local import local_em
from lcbayes.learn.tree_moves import walk
from lcbayes.learn.tree_operators import (
    add_node,
    add_state,
    regularity_problems,
    relocate,
    remove_node,
    remove_state,
)
from lcbayes.learn.tree_search import candidates
from lcbayes.learn.trees import TreeModel
from lcbayes.params import to_tables

TREE = {"H": ["H1", "D", "E", "F"], "H1": ["A", "B", "C"]}
COLUMNS = list("ABCDEF")


def tree_structure(cards=None) -> lcb.Structure:
    blank = lcb.Dataset.from_codes(np.tile([[0], [1]], (1, 6)), columns=COLUMNS)
    return lcb.hlc(blank, TREE, cards or {"H": 2, "H1": 2})


def tree_sample(n_rows: int, seed: int = 3) -> lcb.Dataset:
    """``n_rows`` rows from H (2 states) -> H1 (2 states) over six binary leaves: every item
    0.85 on one value per state."""
    truth = tree_structure()
    params = {}
    for i, name in enumerate(truth.nodes):
        q, r = truth.table_shapes[i]
        table = np.full((q, r), 0.15) if q > 1 else np.full((1, r), 1.0 / r)
        if q > 1:
            table[np.arange(q), (np.arange(q) + i) % r] = 0.85
        params[name] = table.reshape(truth.cpt_shape(i))
    return lcb.simulate(truth, params, n_rows, seed=seed)


@pytest.fixture(scope="module")
def data():
    """3000 rows of :func:`tree_sample`."""
    return tree_sample(3000)


@pytest.fixture(scope="module")
def small():
    """A model with H1 ternary and random tables, and 400 rows with 5% missing values."""
    truth = tree_structure({"H": 2, "H1": 3})
    params = lcb.random_params(truth, seed=1)
    model = TreeModel(truth, tuple(np.asarray(t) for t in to_tables(truth, params)))
    return model, lcb.simulate(truth, params, 400, seed=2, missing=0.05)


def _per_pattern(model: TreeModel, data) -> np.ndarray:
    """``ln p(y)`` of every pattern by enumerating the joint hidden states (independent of the
    sum-product code under test)."""
    s, t = model.structure, model.tables
    hidden = s.hidden_nodes
    total = np.zeros(data.n_patterns)
    for states in product(*(range(s.cardinalities[h]) for h in hidden)):
        x = dict(zip(hidden, states, strict=True))
        p = np.prod([t[h][x[s.parents[h][0]] if s.parents[h] else 0, x[h]] for h in hidden])
        for j, leaf in enumerate(s.observed_nodes):
            codes = data.patterns[:, j]
            row = t[leaf][x[s.parents[leaf][0]]]
            p = p * np.where(codes >= 0, row[np.maximum(codes, 0)], 1.0)
        total = total + p
    return np.log(total)


def test_node_introduction_keeps_the_distribution(small):
    model, data = small
    before = _per_pattern(model, data)
    for h, pair in [("H", ("D", "E")), ("H", ("H1", "F")), ("H1", ("A", "H"))]:
        cand = add_node(model, data, h, pair, "N")
        np.testing.assert_allclose(_per_pattern(cand.model, data), before, atol=1e-10)
        k = model.structure.cardinalities[model.structure.index(h)]
        assert cand.model.structure.n_parameters == model.structure.n_parameters + k * (k - 1)
        assert set(cand.model.structure.observed_names) == set(COLUMNS)
        kids = cand.model.structure.children[cand.model.structure.root]
        assert {cand.model.structure.nodes[c] for c in kids} == {h, *pair}


def test_state_introduction_and_deletion(small):
    model, data = small
    before = _per_pattern(model, data)
    rng = np.random.default_rng(0)
    grown = add_state(model, data, "H1", 1, 0.0, rng)
    np.testing.assert_allclose(_per_pattern(grown.model, data), before, atol=1e-10)
    # P(H1 | H): 2 rows of one more free entry; P(A | H1), P(B | H1), P(C | H1): a row each
    assert grown.model.structure.n_parameters == model.structure.n_parameters + 2 + 3
    back = remove_state(grown.model, data, "H1", 1, 3)      # the two halves of state 1
    np.testing.assert_allclose(_per_pattern(back.model, data), before, atol=1e-10)
    assert back.model.structure.n_parameters == model.structure.n_parameters
    moved = add_state(model, data, "H1", 1, 0.05, rng)
    assert np.max(np.abs(_per_pattern(moved.model, data) - before)) > 1e-6


def test_node_deletion_undoes_an_introduction(small):
    model, data = small
    before = _per_pattern(model, data)
    grown = add_node(model, data, "H", ("D", "E"), "N").model
    for h, g in [("H", "N"), ("N", "H")]:
        back = remove_node(grown, data, h, g).model
        np.testing.assert_allclose(_per_pattern(back, data), before, atol=1e-10)
        assert back.structure.n_parameters == model.structure.n_parameters
        assert robinson_foulds(back.structure, model.structure) == 0
    merged = remove_node(model, data, "H", "H1").model
    assert len(merged.structure.hidden_nodes) == 1
    assert merged.structure.n_parameters == 1 + 6 * 2


def test_relocation_keeps_the_leaves(small):
    model, data = small
    cand = relocate(model, data, "A", "H1", "H")
    s = cand.model.structure
    assert sorted(s.observed_names) == COLUMNS
    assert s.parents[s.index("A")] == (s.index("H"),)
    assert s.n_parameters == model.structure.n_parameters - 3 * 1 + 2 * 1
    # relocating onto a node that copies the old parent keeps the distribution
    star = remove_node(model, data, "H", "H1").model          # one hidden node, six leaves
    grown = add_node(star, data, "H", ("A", "B"), "N").model
    moved = relocate(grown, data, "C", "H", "N").model
    np.testing.assert_allclose(_per_pattern(moved, data), _per_pattern(star, data), atol=1e-10)
    assert moved.structure.n_parameters == grown.structure.n_parameters
    assert bipartitions(moved.structure) == {frozenset({"D", "E", "F"})}


@pytest.mark.parametrize(("move", "message"), [
    (lambda m, d: add_node(m, d, "H", ("A", "D"), "N"), "not a neighbour"),
    (lambda m, d: add_node(m, d, "H", ("D", "D"), "N"), "two different"),
    (lambda m, d: add_node(m, d, "A", ("B", "C"), "N"), "not a hidden node"),
    (lambda m, d: add_node(m, d, "H", ("D", "E"), "H1"), "already taken"),
    (lambda m, d: remove_node(m, d, "H", "D"), "not a hidden node"),
    (lambda m, d: relocate(m, d, "H1", "H", "H1"), "to itself"),
    (lambda m, d: remove_state(m, d, "H", 0, 0), "cannot be merged"),
])
def test_invalid_moves_are_refused(small, move, message):
    model, data = small
    with pytest.raises(StructureError, match=message):
        move(model, data)


def test_moves_that_break_regularity_are_refused(small):
    model, data = small
    lean = relocate(model, data, "A", "H1", "H").model       # H1 (3 states): H, B, C left
    assert not regularity_problems(lean.structure)
    with pytest.raises(StructureError, match="regularity needs < 2"):
        relocate(lean, data, "B", "H1", "H")                 # H, C: |H1| < min(2, 2) fails
    four = add_state(lean, data, "H1", 0, 0.0, np.random.default_rng(0)).model  # 4 <= 8 / 2
    with pytest.raises(StructureError, match="regularity needs <= 4"):
        add_state(four, data, "H1", 0, 0.0, np.random.default_rng(0))
    one = lean
    for _ in range(2):
        one = remove_state(one, data, "H1", 0, 1).model
    with pytest.raises(StructureError, match="at least two"):
        relocate(relocate(one, data, "B", "H1", "H").model, data, "C", "H1", "H")
    assert regularity_problems(lcb.hlc(data, {"Z": COLUMNS[:3]}, {"Z": 5}))
    assert not regularity_problems(lcb.hlc(data, {"Z": COLUMNS[:3]}, {"Z": 4}))


def test_local_em_gives_each_candidate_its_exact_loglik(small):
    model, data = small
    rng = np.random.default_rng(0)
    found = [c for phase in ("expand", "adjust", "simplify")
             for c in candidates(model, data, phase, rng, 0.05)]
    assert {c.operation for c in found} == {"add_node", "add_state", "relocate", "remove_node",
                                            "remove_state"}
    fits = local_em(model, data, found, tol=1e-6)
    for fit in fits:
        full = data.counts @ _per_pattern(fit.model, data)
        start = data.counts @ _per_pattern(fit.candidate.model, data)
        assert fit.loglik == pytest.approx(full, abs=1e-7)
        assert fit.loglik >= start - 1e-7


def test_bipartitions_and_robinson_foulds(small):
    model, _ = small
    s = model.structure
    assert bipartitions(s) == {frozenset({"D", "E", "F"})}
    lc = lcb.hlc(lcb.Dataset.from_codes(np.zeros((2, 6), dtype=int) + np.array([[0], [1]]),
                                        columns=COLUMNS), {"Z": COLUMNS}, {"Z": 2})
    assert robinson_foulds(s, lc) == 1 and not same_tree(s, lc)
    assert same_tree(s, s) and not same_tree(s, tree_structure())
    rerooted = walk(model, s.index("H1")).structure            # the same model, rooted at H1
    assert rerooted.root != s.root and same_tree(rerooted, s) and bipartitions(rerooted) == {
        frozenset({"D", "E", "F"})}
    assert bracket(s) == "H:2(H1:3(A,B,C),D,E,F)"
    assert tree_text(s).splitlines()[:3] == ["H (2 states)", "|-- H1 (3 states)", "|   |-- A"]


def _profiles_by_enumeration(model: TreeModel, node: str, leaves: list[str]):
    """``P(leaf | node)`` from the joint of every hidden configuration (no root walking)."""
    s, t = model.structure, model.tables
    hidden = s.hidden_nodes
    h = s.index(node)
    joint = {leaf: np.zeros((s.cardinalities[h], s.cardinalities[s.index(leaf)]))
             for leaf in leaves}
    for states in product(*(range(s.cardinalities[v]) for v in hidden)):
        x = dict(zip(hidden, states, strict=True))
        p = np.prod([t[v][x[s.parents[v][0]] if s.parents[v] else 0, x[v]] for v in hidden])
        for leaf in leaves:
            i = s.index(leaf)
            joint[leaf][x[h]] += p * t[i][x[s.parents[i][0]]]
    return {leaf: j / j.sum(axis=1, keepdims=True) for leaf, j in joint.items()}


def test_class_profiles_equal_the_joint_by_enumeration(small):
    model, _ = small
    profiles = node_profiles(model.structure, model.params)
    assert {h: sorted(p) for h, p in profiles.items()} == {"H": ["D", "E", "F"],
                                                         "H1": ["A", "B", "C"]}
    for node, items in profiles.items():
        truth = _profiles_by_enumeration(model, node, list(COLUMNS))
        for leaf, table in items.items():
            np.testing.assert_allclose(table, truth[leaf], atol=1e-12)
    # a node without leaves of its own shows every leaf below it
    blank = lcb.Dataset.from_codes(np.tile([[0], [1]], (1, 6)), columns=COLUMNS)
    deep = lcb.hlc(blank, {"R": ["G0", "G1"], "G0": list("ABC"), "G1": list("DEF")},
                   {"R": 2, "G0": 3, "G1": 2})
    params = lcb.random_params(deep, seed=4)
    tree = TreeModel(deep, tuple(np.asarray(t) for t in to_tables(deep, params)))
    profiles = node_profiles(deep, params)
    assert sorted(profiles["R"]) == COLUMNS and sorted(profiles["G1"]) == list("DEF")
    truth = _profiles_by_enumeration(tree, "R", COLUMNS)
    for leaf, table in profiles["R"].items():
        np.testing.assert_allclose(table, truth[leaf], atol=1e-12)
    fig = profiles_figure(deep, params)
    assert len([ax for ax in fig.axes if ax.images]) == 3


@pytest.fixture(scope="module")
def learned(data):
    return lcb.learn_tree(data, seed=0)


@pytest.mark.slow
def test_the_search_recovers_the_generating_tree(learned, data):
    assert same_tree(learned.structure, tree_structure())
    assert learned.method == "east" and learned.structure.kind == "hlc"
    assert learned.score == pytest.approx(learned.fit.bic)
    frame = learned.to_frame()
    assert frame["operation"].iloc[0] == "start" and frame["hidden"].iloc[0].startswith("H0:2(")
    accepted = frame[frame["accepted"] & (frame["operation"] != "latent_class")]
    assert np.all(np.diff(accepted["score"]) > 0)
    fit = lcb.em(learned.structure, data, init=learned.params, restarts=0)
    assert fit.loglik == pytest.approx(learned.fit.loglik, abs=1e-4)


@pytest.mark.slow
def test_the_tree_never_scores_below_the_best_latent_class_model(learned, data):
    classes = lcb.learn_classes(data, seed=0)
    assert learned.score >= classes.score - 1e-6


@pytest.mark.slow
def test_same_seed_same_result(learned, data):
    again = lcb.learn_tree(data, seed=0)
    a, b = (r.to_frame().drop(columns="seconds") for r in (learned, again))
    assert a[["operation", "hidden", "accepted"]].equals(b[["operation", "hidden", "accepted"]])
    np.testing.assert_allclose(a["score"], b["score"], rtol=0, atol=1e-8)
    assert again.structure == learned.structure


@pytest.mark.slow
def test_result_output(learned, tmp_path):
    text = learned.summary()
    assert "east" in text and tree_text(learned.structure) in text
    spec = learned.to_dict()
    assert spec["best"]["structure"]["kind"] == "hlc" and spec["method"] == "east"
    json.dumps(spec)
    page = learned.to_html(tmp_path / "tree.html").read_text()
    assert "<img alt='tree'" in page and "The chosen HLC tree" in page
    assert "<img alt='class_profiles'" in page


@pytest.mark.slow
def test_cli_learn_tree_json(data, tmp_path, capsys):
    csv = tmp_path / "d.csv"
    data.to_pandas().to_csv(csv, index=False)
    assert main(["learn", str(csv), "--tree", "--json", "--max-hidden", "1",
                 "--time-limit", "0.01"]) == 0
    spec = json.loads(capsys.readouterr().out)
    assert spec["best"]["structure"]["kind"] == "hlc" and spec["method"] == "east"
    assert len(spec["cardinalities"]) == 1
    assert spec["path"][-1]["operation"] == "latent_class" and spec["settings"]["lc_bound"]
    assert main(["learn", str(csv), "--tree=east", "--json", "--no-lc-bound"]) == 0
    spec = json.loads(capsys.readouterr().out)
    assert not spec["settings"]["lc_bound"] and spec["settings"]["lc_seconds"] is None
    assert "latent_class" not in {m["operation"] for m in spec["path"]}
    assert len(spec["cardinalities"]) == 2                  # the generating tree's two nodes


def test_cli_learn_tree_errors(data, tmp_path, capsys):
    csv = tmp_path / "d.csv"
    data.to_pandas().to_csv(csv, index=False)
    narrow = tmp_path / "two.csv"
    data.to_pandas()[["A", "B"]].to_csv(narrow, index=False)
    for args, message in [([str(csv), "--tree", "--time-limit", "0"], "--time-limit"),
                          ([str(csv), "--tree", "--time-limit", "-3"], "--time-limit"),
                          ([str(csv), "--tree", "--score", "nope"], "score"),
                          ([str(csv), "--tree", "--n-classes", "2"], "--tree"),
                          ([str(csv), "--tree", "dhc"], "method"),
                          ([str(narrow), "--tree"], "at least 3")]:
        assert main(["learn", *args]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0]
    with pytest.raises(lcb.LcbayesError, match="max_hidden"):
        lcb.learn_tree(data, max_hidden=0)
    with pytest.raises(lcb.LcbayesError, match="time_limit"):
        lcb.learn_tree(data, time_limit=0)


def test_mutual_information():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 2, size=4000)
    codes = np.column_stack([x, x, rng.integers(0, 3, size=4000)])
    codes[:10, 1] = -1                                        # missing: pairwise rows
    mi = mutual_information(lcb.Dataset.from_codes(codes, columns=list("ABC")))
    p = np.bincount(x[10:]) / 3990
    assert mi[0, 1] == pytest.approx(-(p * np.log(p)).sum(), abs=1e-12)
    assert 0 <= mi[0, 2] < 1e-3 and mi[0, 0] == 0 and mi[1, 0] == mi[0, 1]


def _grouped(n_groups: int, size: int, rows: int, seed: int):
    columns = [f"X{j}" for j in range(n_groups * size)]
    tree = {"R": [f"G{g}" for g in range(n_groups)]}
    tree.update({f"G{g}": columns[g * size:(g + 1) * size] for g in range(n_groups)})
    blank = lcb.Dataset.from_codes(np.tile([[0], [1]], (1, len(columns))), columns=columns)
    truth = lcb.hlc(blank, tree, {h: 2 for h in tree})
    params = {n: (np.array([0.5, 0.5]) if not truth.parents[i] else
                  np.array([[0.85, 0.15], [0.2, 0.8]])) for i, n in enumerate(truth.nodes)}
    return truth, lcb.simulate(truth, params, rows, seed=seed)


@pytest.mark.slow
def test_bottom_up_build_recovers_the_groups():
    truth, data = _grouped(3, 4, 2000, seed=5)
    ctx = Context(data=data, scorer=Scorer(data, "bic"), em=EMSettings(),
                  rng=np.random.default_rng(0))
    found, left = islands(ctx, data)
    assert sorted(sorted(members) for members, _ in found) == [
        ["X0", "X1", "X2", "X3"], ["X10", "X11", "X8", "X9"], ["X4", "X5", "X6", "X7"]]
    assert not left
    built = build_tree(ctx)
    assert same_tree(built.model.structure, truth)
