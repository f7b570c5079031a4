"""The constructive theory of component splitting (Karčiauskas 2005, §4.3) checked numerically.

* Theorem 4.2: the split that :func:`improving_split` builds raises the log-likelihood of data
  the model does not fit, for 1-3 components, binary and ternary items, with missing values.
* Its derivative is (4.52) in case (b) and (4.45) in case (a), against central finite
  differences of the log-likelihood (the split's ``P(d)`` is linear in ``eps``, so the
  difference is accurate and ``eps < 0`` is the mirror split). Case (a) is forced by fitting
  the one-variable marginals exactly: the independence model with the data's marginals, or an
  EM fixed point.
* Table 4.1 is pairwise but not mutually independent, and an exact model raises the error.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import lcbayes as lcb
from lcbayes.errors import ArgumentError
from lcbayes.learn.split_theory import (
    TABLE_4_1,
    NoImprovingSplitError,
    improving_split,
    is_mutually_independent,
    is_pairwise_independent,
    lc_log_likelihood,
    soft_subdata,
)

CARDS = {"binary": (2, 2, 2), "ternary": (3, 3, 2, 3)}


def all_patterns(cards) -> np.ndarray:
    return np.array(list(itertools.product(*(range(r) for r in cards))))


def random_model(rng, m, cards):
    weights = rng.dirichlet(np.full(m, 3.0))
    return weights, tuple(rng.dirichlet(np.full(r, 3.0), size=m) for r in cards)


def random_data(rng, cards, missing=0.0, size=1000.0):
    """Every pattern with a random weight (a random distribution, not an LC model's); with
    ``missing > 0`` a second copy of the patterns has entries deleted at that rate."""
    patterns = all_patterns(cards)
    if missing:
        holes = np.where(rng.random(patterns.shape) < missing, -1, patterns)
        patterns = np.concatenate([patterns, holes])
    return patterns, size * rng.dirichlet(np.ones(len(patterns)))


def independence_model(patterns, counts):
    """LC(1) with the data's one-variable marginals over the observed rows (its ML fit)."""
    cards = patterns.max(axis=0) + 1
    items = tuple(np.bincount(patterns[patterns[:, i] >= 0, i],
                              weights=counts[patterns[:, i] >= 0], minlength=r)[None, :]
                  for i, r in enumerate(cards))
    return np.ones(1), tuple(theta / theta.sum() for theta in items)


def em(weights, items, patterns, counts, n_iter):
    """Plain EM (M-step over the observed rows), to reach a fixed point where every
    one-variable marginal of every soft sub-data set matches the model."""
    for _ in range(n_iter):
        soft = soft_subdata(weights, items, patterns, counts)
        weights = soft.sum(axis=1) / counts.sum()
        items = tuple(np.stack([soft[:, patterns[:, i] == a].sum(axis=1)
                                for a in range(theta.shape[1])], axis=1)
                      for i, theta in enumerate(items))
        items = tuple(theta / theta.sum(axis=1, keepdims=True) for theta in items)
    return weights, items


def lc_probs(weights, items, patterns) -> np.ndarray:
    """``P_L(d)`` of every pattern."""
    return np.exp([lc_log_likelihood(weights, items, row[None], np.ones(1)) for row in patterns])


def ll_along(split, patterns, counts, eps):
    return lc_log_likelihood(*split.apply(eps), patterns, counts)


def finite_difference(split, patterns, counts):
    h = 1e-4 * split.max_eps
    return (ll_along(split, patterns, counts, h) - ll_along(split, patterns, counts, -h)) / (2 * h)


# ---------------------------------------------------------------------------- basics
def test_soft_subdata_is_counts_times_the_posterior_with_missing_items_dropped():
    rng = np.random.default_rng(0)
    weights, items = random_model(rng, 3, CARDS["ternary"])
    patterns, counts = random_data(rng, CARDS["ternary"], missing=0.3)
    patterns = np.concatenate([patterns, [[-1, -1, -1, -1]]])
    counts = np.append(counts, 5.0)
    soft = soft_subdata(weights, items, patterns, counts)
    joint = np.array([[w * np.prod([theta[l, c] for theta, c in zip(items, row, strict=True)
                                    if c >= 0]) for row in patterns]
                      for l, w in enumerate(weights)])
    np.testing.assert_allclose(soft, counts * joint / joint.sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(soft.sum(axis=0), counts, rtol=1e-12)
    np.testing.assert_allclose(soft[:, -1], 5.0 * weights, rtol=1e-12)  # nothing observed


def test_log_likelihood_agrees_with_lcbayes():
    rng = np.random.default_rng(1)
    cards = CARDS["ternary"]
    weights, items = random_model(rng, 2, cards)
    patterns, _ = random_data(rng, cards, missing=0.3)
    counts = rng.integers(1, 4, size=len(patterns))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # some rows have nothing observed
        data = lcb.Dataset.from_codes(np.repeat(patterns, counts, axis=0), cardinalities=cards)
    params = {"class": weights, **dict(zip(data.columns, items, strict=True))}
    expected = lcb.log_likelihood(lcb.latent_class(data, 2), params, data)
    assert lc_log_likelihood(weights, items, patterns, counts) == pytest.approx(expected,
                                                                                rel=1e-12)


def test_table_4_1_is_pairwise_but_not_mutually_independent():
    assert TABLE_4_1.sum() == pytest.approx(1.0)
    assert is_pairwise_independent(TABLE_4_1)
    assert not is_mutually_independent(TABLE_4_1)
    product = np.multiply.outer(np.multiply.outer([0.3, 0.7], [0.4, 0.6]), [0.5, 0.5])
    assert is_mutually_independent(product) and is_pairwise_independent(product)
    dependent = np.random.default_rng(2).dirichlet(np.ones(8)).reshape(2, 2, 2)
    assert not is_pairwise_independent(dependent)


# ---------------------------------------------------------------------------- Theorem 4.2
@pytest.mark.parametrize("missing", [0.0, 0.25])
@pytest.mark.parametrize("cards", CARDS.values(), ids=CARDS)
@pytest.mark.parametrize("m", [1, 2, 3])
def test_the_split_raises_the_likelihood_with_derivative_4_52(m, cards, missing):
    rng = np.random.default_rng([m, len(cards), int(100 * missing)])
    weights, items = random_model(rng, m, cards)
    patterns, counts = random_data(rng, cards, missing)
    split = improving_split(weights, items, patterns, counts)
    assert split.case == "b" and split.derivative > 0
    weights2, items2 = split.apply(1e-3 * split.max_eps)
    assert len(weights2) == m + 1
    assert (lc_log_likelihood(weights2, items2, patterns, counts)
            > lc_log_likelihood(weights, items, patterns, counts))
    assert finite_difference(split, patterns, counts) == pytest.approx(split.derivative,
                                                                       rel=1e-6)
    # (4.52): the states move mass from where D_s has too little to where it has too much
    soft = soft_subdata(weights, items, patterns, counts)[split.component]
    (a,), ((a1, a2),) = split.variables, split.states
    observed = patterns[:, a] >= 0
    p_sub = np.bincount(patterns[observed, a], weights=soft[observed], minlength=cards[a])
    size = p_sub.sum()
    p_sub /= size
    theta = items[a][split.component]
    assert p_sub[a1] > theta[a1] and p_sub[a2] < theta[a2]
    assert split.derivative == pytest.approx(size * (p_sub[a1] / theta[a1]
                                                     - p_sub[a2] / theta[a2]), rel=1e-12)


@pytest.mark.parametrize("missing", [0.0, 0.25])
@pytest.mark.parametrize("cards", [(2, 2, 2), (2, 3, 3)])
def test_case_a_when_the_marginals_fit_derivative_4_45(cards, missing):
    rng = np.random.default_rng([len(cards), sum(cards), int(100 * missing)])
    patterns, counts = random_data(rng, cards, missing)
    weights, items = independence_model(patterns, counts)
    split = improving_split(weights, items, patterns, counts)
    assert split.case == "a" and split.component == 0 and split.derivative > 0
    assert (ll_along(split, patterns, counts, 1e-3 * split.max_eps)
            > lc_log_likelihood(weights, items, patterns, counts))
    assert finite_difference(split, patterns, counts) == pytest.approx(split.derivative,
                                                                       rel=1e-6)
    if missing:
        return
    # (4.45) with the pair's sub-data distribution, complete data
    (a, b), ((a1, a2), (b1, b2)) = split.variables, split.states
    joint = np.zeros((cards[a], cards[b]))
    np.add.at(joint, (patterns[:, a], patterns[:, b]), counts)
    joint /= counts.sum()
    theta_a, theta_b = items[a][0], items[b][0]
    expected = counts.sum() * sum(
        sign * joint[x, y] / (theta_a[x] * theta_b[y])
        for x, y, sign in [(a1, b1, 1), (a2, b2, 1), (a1, b2, -1), (a2, b1, -1)])
    assert split.derivative == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("m", [2, 3])
def test_case_a_near_an_em_fixed_point(m):
    """Data from LC(m + 1) plus noise, with missing values; 200 EM steps bring every case-(b)
    derivative below tol |D| = 0.01 |D| (EM converges slowly), so case (a) is chosen."""
    rng = np.random.default_rng([m, 10])
    cards = (2, 2, 2, 3)
    patterns = all_patterns(cards)
    counts = 1000.0 * (0.8 * lc_probs(*random_model(rng, m + 1, cards), patterns)
                       + 0.2 / len(patterns))
    holes = np.where(rng.random(patterns.shape) < 0.2, -1, patterns)
    patterns, counts = np.concatenate([patterns, holes]), np.concatenate([counts, 0.3 * counts])
    weights, items = em(*random_model(rng, m, cards), patterns, counts, n_iter=200)
    split = improving_split(weights, items, patterns, counts, tol=1e-2)
    assert split.case == "a" and split.derivative > 1e-2 * counts.sum()
    assert (ll_along(split, patterns, counts, 1e-3 * split.max_eps)
            > lc_log_likelihood(weights, items, patterns, counts))
    assert finite_difference(split, patterns, counts) == pytest.approx(split.derivative,
                                                                       rel=1e-6)


def test_apply_follows_definition_4_2():
    """Two children of half the weight; in case (a) only the four states a1, a2, b1, b2 move,
    by sqrt(eps); eps beyond max_eps is refused."""
    rng = np.random.default_rng(3)
    patterns, counts = random_data(rng, (2, 3, 3))
    split = improving_split(*independence_model(patterns, counts), patterns, counts)
    assert split.case == "a"
    eps = 0.5 * split.max_eps
    weights, items = split.apply(eps)
    np.testing.assert_allclose(weights, [0.5, 0.5])
    for i, theta in enumerate(items):
        np.testing.assert_allclose(theta.sum(axis=1), 1.0)
        expected = np.zeros_like(theta)
        if i in split.variables:
            expected[:, list(split.states[split.variables.index(i)])] = np.sqrt(eps)
        np.testing.assert_allclose(np.abs(theta - split.items[i][0]), expected, atol=1e-15)
    with pytest.raises(ArgumentError, match="simplex"):
        split.apply(2 * split.max_eps)


# ---------------------------------------------------------------------------- no split
def test_an_exact_model_has_no_improving_split():
    rng = np.random.default_rng(4)
    cards = CARDS["ternary"]
    patterns = all_patterns(cards)
    weights, items = random_model(rng, 2, cards)
    counts = 500.0 * lc_probs(weights, items, patterns)
    with pytest.raises(NoImprovingSplitError, match="P_L = P_D"):
        improving_split(weights, items, patterns, counts)
    _, marginals = random_model(rng, 1, cards)
    product = 500.0 * np.prod([theta[0, patterns[:, i]] for i, theta in enumerate(marginals)],
                              axis=0)
    with pytest.raises(NoImprovingSplitError, match="P_L = P_D"):
        improving_split(*independence_model(patterns, product), patterns, product)


def test_table_4_1_defeats_the_pairwise_construction():
    patterns = all_patterns((2, 2, 2))
    counts = 1000.0 * TABLE_4_1[tuple(patterns.T)]
    weights, items = independence_model(patterns, counts)
    assert not np.allclose(lc_probs(weights, items, patterns), counts / 1000.0)  # P_L != P_D
    with pytest.raises(NoImprovingSplitError, match=r"Lemma 4\.2"):
        improving_split(weights, items, patterns, counts)


def test_bad_arguments_are_named():
    weights, items = np.array([0.5, 0.5]), (np.full((2, 2), 0.5),)
    patterns, counts = np.array([[0], [1]]), np.ones(2)
    with pytest.raises(ArgumentError, match="weights"):
        improving_split(np.array([0.5, 0.6]), items, patterns, counts)
    with pytest.raises(ArgumentError, match=r"items\[0\]"):
        improving_split(weights, (np.array([[1.0, 0.0], [0.5, 0.5]]),), patterns, counts)
    with pytest.raises(ArgumentError, match="codes beyond"):
        improving_split(weights, items, np.array([[0], [2]]), counts)
    with pytest.raises(ArgumentError, match="counts"):
        improving_split(weights, items, patterns, -counts)
