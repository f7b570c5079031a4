"""Learning the hidden cardinalities of an HLC model on a fixed skeleton (Karčiauskas 2005,
Ch. 7): the capacity layout, partial EM with held tables, the searches and the command line."""

from __future__ import annotations

import json

import numpy as np
import pytest

import lcbayes as lcb
from lcbayes.cli import main
from lcbayes.learn.moves import Context
from lcbayes.learn.restarts import EMSettings
from lcbayes.learn.scoring import Scorer
from lcbayes.learn.tree_moves import fit_trees, walk
from lcbayes.learn.trees import (
    TreeModel,
    lc_part,
    padded_structure,
    random_tree,
    with_cardinalities,
    with_lc_part,
)
from lcbayes.params import to_tables

TREE = {"H": ["H1", "D", "E"], "H1": ["A", "B", "C"]}


@pytest.fixture(scope="module")
def data():
    """Data from H (2 states) -> H1 (2 states): every table has a dominant entry."""
    blank = lcb.Dataset.from_codes(np.tile([[0], [1]], (1, 5)), columns=list("ABCDE"))
    truth = lcb.hlc(blank, TREE, {"H": 2, "H1": 2})
    params = {}
    for i, name in enumerate(truth.nodes):
        q, r = truth.table_shapes[i]
        table = np.full((q, r), 0.1 / (r - 1)) if q > 1 else np.full((1, r), 1.0 / r)
        if q > 1:
            table[np.arange(q), (np.arange(q) + i) % r] = 0.9
        params[name] = table.reshape(truth.cpt_shape(i))
    return lcb.simulate(truth, params, 3000, seed=3, missing=0.05)


def _ctx(data):
    return Context(data=data, scorer=Scorer(data, "bic"), em=EMSettings(),
                   rng=np.random.default_rng(0))


def _model(data, cards, seed=0):
    s = lcb.hlc(data, TREE, cards)
    return TreeModel(s, tuple(np.asarray(t) for t in
                              to_tables(s, lcb.random_params(s, seed=seed))))


def test_pack_and_unpack_round_trip_in_a_larger_capacity(data):
    model = _model(data, {"H": 3, "H1": 1})
    padded = padded_structure(model.structure)
    assert padded.cardinalities[padded.index("H")] == 4
    flat, active, values = model.pack(padded)
    back = model.unpack(flat, padded)
    for a, b in zip(back.tables, model.tables, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-15)
    assert active.sum() == sum(t.size for t in model.tables)
    np.testing.assert_array_equal(values, flat)


def test_padded_lanes_give_the_model_log_likelihood(data):
    model = _model(data, {"H": 3, "H1": 2})
    fitted, loglik = fit_trees(_ctx(data), [model], 1)[0]
    direct = lcb.em(model.structure, data, restarts=0, init=model.params, tol=1e-12,
                    max_iter=200)
    assert loglik <= direct.loglik + 1e-6
    assert loglik == pytest.approx(lcb.log_likelihood(fitted.structure, fitted.params, data),
                                   abs=1e-8)


def test_partial_em_moves_only_the_root_and_its_children(data):
    model = walk(_model(data, {"H": 2, "H1": 2}), 1)  # rooted at H1
    s = model.structure
    assert s.nodes[s.root] == "H1"
    free = frozenset({s.root, *s.children[s.root]})
    fitted, _ = fit_trees(_ctx(data), [model], 1, free=free)[0]
    for i in range(s.n_nodes):
        same = np.allclose(fitted.tables[i], model.tables[i])
        assert same == (i not in free), s.nodes[i]


def test_lc_part_round_trip_and_walking_keeps_the_likelihood(data):
    model = _model(data, {"H": 2, "H1": 3})
    again = with_lc_part(model, lc_part(model))
    assert again.structure == model.structure
    assert all(np.array_equal(a, b) for a, b in zip(again.tables, model.tables, strict=True))
    walked = walk(model, model.structure.index("H1"))
    assert lcb.log_likelihood(walked.structure, walked.params, data) == pytest.approx(
        lcb.log_likelihood(model.structure, model.params, data), abs=1e-9)
    bigger = with_cardinalities(model.structure, {model.structure.index("H"): 3})
    assert random_tree(bigger, np.random.default_rng(0)).tables[0].shape == (1, 3)


@pytest.mark.parametrize("method", ["splitmerge", "standard3"])
def test_search_recovers_the_true_cardinalities(data, method):
    res = lcb.learn_hlc(data, TREE, method=method, seed=0)
    assert res.cardinalities == {"H": 2, "H1": 2}
    assert res.structure.nodes[res.structure.root] == "H"
    assert res.score == pytest.approx(res.fit.bic)
    truth = lcb.em(lcb.hlc(data, TREE, {"H": 2, "H1": 2}), data, restarts=3, seed=0)
    assert res.fit.loglik >= truth.loglik - 0.05
    frame = res.to_frame()
    assert frame["hidden"].iloc[0] == "H:1 H1:1"
    assert np.all(np.diff(frame.query("accepted")["score"]) > 0)


def test_same_seed_same_path_and_fixed(data):
    a = lcb.learn_hlc(data, TREE, seed=1, max_cardinality=2).to_frame().drop(columns="seconds")
    b = lcb.learn_hlc(data, TREE, seed=1, max_cardinality=2).to_frame().drop(columns="seconds")
    assert a.equals(b)
    fixed = lcb.learn_hlc(data, TREE, method="fixed", cardinalities={"H": 2, "H1": 2})
    assert fixed.cardinalities == {"H": 2, "H1": 2} and len(fixed.path) == 5


@pytest.mark.parametrize(("skeleton", "kwargs", "message"), [
    ({"H": ["A", "B", "C", "D"]}, {}, "leaves out column"),
    ({"H": ["A", "B", "C", "D", "E"], "G": ["A"]}, {}, "two parents"),
    ({"H": "ABCDE"}, {}, "must be a tree"),
    (TREE, {"method": "fixed"}, "needs cardinalities"),
    (TREE, {"cardinalities": {"H": 2}}, "leave it out"),
    (TREE, {"time_limit": -1}, "time_limit"),
])
def test_bad_skeletons_and_arguments(data, skeleton, kwargs, message):
    with pytest.raises(lcb.LcbayesError, match=message):
        lcb.learn_hlc(data, skeleton, **kwargs)


def test_cli_learn_with_a_skeleton(data, tmp_path, capsys):
    csv = tmp_path / "d.csv"
    data.to_pandas().to_csv(csv, index=False)
    skeleton = tmp_path / "tree.json"
    skeleton.write_text(json.dumps({"tree": TREE}))
    assert main(["learn", str(csv), "--skeleton", str(skeleton), "--json",
                 "--max-classes", "2"]) == 0
    spec = json.loads(capsys.readouterr().out)
    assert spec["cardinalities"] == {"H": 2, "H1": 2}
    assert spec["best"]["structure"]["kind"] == "hlc"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"tree": {"H": ["A", "B", "Z"]}}))
    assert main(["learn", str(csv), "--skeleton", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'Z' is not a data column" in err[0]
