"""The Beal & Ghahramani (2006) study set-up: structures, dimensions, aliases, data, pooling."""

from __future__ import annotations

import math

import numpy as np
import pytest

import lcbayes as lcb
from beal import ghahramani as bg


def test_136_structures_sorted_canonical():
    codes = bg.parent_codes()
    assert len(codes) == 136 == len(set(codes))
    assert list(codes) == sorted(codes)
    assert all(c == min(c, bg.swap(c)) == bg.canonical(c) for c in codes)
    assert sum(bg.is_symmetric(c) for c in codes) == 16
    assert codes[0] == (0, 0, 0, 0) and codes[-1] == (3, 3, 3, 3)
    assert bg.structure_index((2, 3, 3, 1)) == bg.structure_index(bg.TRUE_CODES)
    assert bg.swap(bg.TRUE_CODES) == (2, 3, 3, 1)


def test_dimensions():
    codes = bg.parent_codes()
    d = {c: bg.n_parameters(c) for c in codes}
    assert bg.d_histogram() == bg.D_HISTOGRAM
    assert sum(bg.D_HISTOGRAM.values()) == 136
    assert min(d.values()) == 18 and max(d.values()) == 66
    assert bg.n_parameters(bg.TRUE_CODES) == 50 == bg.n_parameters(bg.ALTERNATIVE_TRUE_CODES)
    assert sum(v > 50 for v in d.values()) == 9
    for c in codes[::7]:
        assert bg.structure_from_codes(c).n_parameters == d[c]
    assert bg.full_structure().n_parameters == 66


def test_supersets_of_true_graph():
    supersets = [c for c in bg.parent_codes() if bg.is_substructure(bg.TRUE_CODES, c, strict=True)]
    assert sorted(supersets) == sorted(
        bg.canonical(c) for c in [(3, 3, 3, 2), (1, 3, 3, 3), (3, 3, 3, 3)]
    )
    assert all(bg.is_substructure(c, (3, 3, 3, 3)) for c in bg.parent_codes())
    assert not bg.is_substructure(bg.TRUE_CODES, bg.TRUE_CODES, strict=True)


def test_alias():
    assert bg.log_alias(bg.TRUE_CODES) == pytest.approx(math.log(4))
    assert bg.log_alias((3, 3, 3, 3)) == pytest.approx(math.log(8))
    assert bg.log_alias((0, 3, 0, 0)) == pytest.approx(math.log(8))
    assert bg.log_alias((1, 0, 1, 0)) == pytest.approx(math.log(2))
    assert bg.log_alias((2, 0, 0, 0)) == pytest.approx(math.log(2))
    assert bg.log_alias((1, 2, 0, 0)) == pytest.approx(math.log(4))
    assert bg.log_alias((0, 0, 0, 0)) == 0.0
    assert all(bg.log_alias(c, "naive") == pytest.approx(math.log(8)) for c in bg.parent_codes())
    assert all(bg.log_alias(c) == bg.log_alias(bg.swap(c)) for c in bg.parent_codes())
    with pytest.raises(ValueError):
        bg.log_alias(bg.TRUE_CODES, rule="other")


def test_true_parameters():
    raw = bg.TRUE_PARAMS_RAW
    assert raw["s1"][1] * raw["s2"][1] == pytest.approx(0.8096)
    p = bg.TRUE_PARAMS
    assert p["s1"][1] * p["s2"][1] == pytest.approx(0.8096, abs=1e-3)
    for name, cpt in p.items():
        np.testing.assert_allclose(cpt.sum(-1), 1.0, atol=1e-12)
        np.testing.assert_allclose(cpt, raw[name], atol=0.01)
    # row order [1 1], [1 2], [2 1], [2 2]: axes (s1, s2), s2 fastest
    np.testing.assert_allclose(raw["y2"][0, 1], [0.04, 0.15, 0.59, 0.05, 0.16])
    np.testing.assert_allclose(raw["y3"][1, 1], [0.04, 0.00, 0.37, 0.33, 0.25])
    structure = bg.structure_from_codes(bg.TRUE_CODES)
    assert structure.nodes == ("s1", "s2", "y1", "y2", "y3", "y4")
    assert [structure.nodes[p] for p in structure.parents[structure.index("y2")]] == ["s1", "s2"]
    for i, name in enumerate(structure.nodes):
        assert p[name].shape == structure.cpt_shape(i)
    assert bg.true_params(bg.ALTERNATIVE_TRUE_CODES)["y4"].shape == (2, 5)


def test_paper_table2():
    assert tuple(bg.PAPER_TABLE2) == bg.SIZES
    assert all(tuple(row) == bg.PAPER_TABLE2_COLUMNS for row in bg.PAPER_TABLE2.values())
    assert bg.PAPER_TABLE2[1280]["AIS(26)"] == 11
    assert bg.PAPER_TABLE2[10]["VB"] == 115 and bg.PAPER_TABLE2[10240]["BIC"] == 2
    for row in bg.PAPER_TABLE2.values():  # the alias correction never worsens a rank
        for m in ("BIC", "BICp", "CS", "VB"):
            assert row[m] <= row[m + "*"]


def test_rank_of():
    s = np.array([1.0, 3.0, 2.0, 3.0, np.nan])
    assert bg.rank_of(s, 2) == 3
    assert bg.rank_of(s, 1) == 2 and bg.rank_of(s, 1, ties="average") == 1.5
    assert bg.rank_of(s, 0) == 4
    np.testing.assert_array_equal(bg.rank_of(np.stack([s, -s]), 0), [4, 1])
    with pytest.raises(ValueError):
        bg.rank_of(s, 4)


def test_nested_datasets():
    sizes = (10, 40, 300)
    a = bg.nested_datasets(seed=3, sizes=sizes)
    b = bg.nested_datasets(seed=3, sizes=sizes)
    c = bg.nested_datasets(seed=4, sizes=sizes)
    assert tuple(a) == sizes
    for n in sizes:
        assert a[n].n_rows == n and a[n].columns == bg.OBSERVED
        assert a[n].cardinalities == (5, 5, 5, 5)
        assert a[n].labels == ((0, 1, 2, 3, 4),) * 4
        np.testing.assert_array_equal(a[n].codes, b[n].codes)
        np.testing.assert_array_equal(a[n].codes, a[300].codes[:n])
    assert not np.array_equal(a[300].codes, c[300].codes)
    # every structure built from any size fits every size
    lcb.log_likelihood(bg.full_structure(a[10]), bg.host_params(bg.TRUE_CODES, bg.TRUE_PARAMS),
                       a[300])
    # about 81% of cases come from hidden state [2 2]: y3's row for it never emits category 1
    big = bg.nested_datasets(seed=0, sizes=(2000,))[2000]
    assert np.mean(big.codes[:, 2] == 1) < 0.2 * 0.5


def test_default_sizes():
    assert len(bg.SIZES) == 20 and bg.SIZES[-1] == 10240
    data = bg.nested_datasets(seed=0)
    assert tuple(data) == bg.SIZES
    np.testing.assert_array_equal(data[1280].codes, data[10240].codes[:1280])


def test_pooling_matrices():
    p = bg.pooling_matrices((0, 1, 2, 3))
    assert p["s1"].shape == p["s2"].shape == (1, 1)
    np.testing.assert_array_equal(p["y1"], np.ones((4, 4)))
    np.testing.assert_array_equal(p["y2"], np.kron(np.eye(2), np.ones((2, 2))))
    np.testing.assert_array_equal(p["y3"], np.kron(np.ones((2, 2)), np.eye(2)))
    np.testing.assert_array_equal(p["y4"], np.eye(4))
    batch = bg.batched_pooling(bg.parent_codes())
    assert batch["s1"].shape == (136, 1, 1) and batch["y3"].shape == (136, 4, 4)
    np.testing.assert_array_equal(batch["y1"][5], bg.pooling_matrices(bg.parent_codes()[5])["y1"])


@pytest.mark.parametrize("codes", [(0, 0, 0, 0), (1, 3, 3, 2), (2, 0, 1, 3), (3, 1, 0, 2)])
def test_pooling_equivalence(codes):
    data = bg.nested_datasets(seed=1, sizes=(60,))[60]
    sub = bg.structure_from_codes(codes, data)
    host = bg.full_structure(data)
    theta_sub = lcb.random_params(sub, seed=sum(codes))
    theta_host = bg.host_params(codes, theta_sub)
    pool = bg.pooling_matrices(codes)
    for name in bg.OBSERVED:  # rows tied exactly where P says
        rows = theta_host[name].reshape(4, 5)
        same = np.all(rows[:, None, :] == rows[None, :, :], axis=-1)
        np.testing.assert_array_equal(same, pool[name] == 1)
    assert lcb.log_likelihood(host, theta_host, data) == pytest.approx(
        lcb.log_likelihood(sub, theta_sub, data), rel=1e-12
    )
    # pooled host expected counts are the sub-structure's counts, spread onto host rows
    n_host = lcb.expected_counts(host, theta_host, data)
    n_sub = lcb.expected_counts(sub, theta_sub, data)
    for name in bg.OBSERVED:
        pooled = pool[name] @ n_host[name].reshape(4, 5)
        spread = bg.host_params(codes, n_sub)[name].reshape(4, 5)
        np.testing.assert_allclose(pooled, spread, rtol=1e-10, atol=1e-10)
