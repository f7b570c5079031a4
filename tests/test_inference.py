"""The exact inference core checked against an independent brute-force enumeration.

``tests/brute_force.py`` enumerates every joint configuration of all nodes in plain NumPy; every
public inference entry point (and the two internal routes, tree and enumeration) must agree with
it to 1e-10 on small latent class, HLC and DAG structures with random parameters and missing data.

The cases are fixed by seed and built once (``functools.cache``), so each distinct structure and
pattern count is compiled by JAX only once per jitted function.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.scipy.special import logsumexp
from scipy import stats

import lcbayes  # before any JAX array: switches JAX to float64
from lcbayes.inference import e_step, log_marginal
from lcbayes.params import to_tables

try:  # tests/ as a package
    from .brute_force import BruteForce
except ImportError:  # tests/ on sys.path (pytest's default rootdir-less import mode)
    from brute_force import BruteForce

TOL = 1e-10

# Jitted once here; JAX shares the compilation cache with the library's own jit of ``e_step``
# when the structure and the pattern shape agree, so the tests below call these with the data's
# own patterns wherever they can.
jit_e_step = jax.jit(e_step, static_argnums=0)
jit_log_marginal = jax.jit(log_marginal, static_argnums=0)


# ---------------------------------------------------------------------- case construction
def random_codes(rng: np.random.Generator, n_rows: int, cards, missing: float = 0.25):
    """Codes with ~``missing`` deleted entries, a fully missing row, a complete row and, for
    every column, a row where that column alone is missing."""
    cards = np.asarray(cards)
    n_cols = cards.size
    codes = rng.integers(0, cards, size=(n_rows, n_cols))
    codes = np.where(rng.random(codes.shape) < missing, -1, codes)
    codes[0] = -1                      # fully missing row
    codes[1] = rng.integers(0, cards)  # complete row
    for j in range(n_cols):
        codes[2 + j] = rng.integers(0, cards)
        codes[2 + j, j] = -1
    return codes


def make_data(codes, columns, cards) -> lcbayes.Dataset:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fully missing rows, constant columns
        return lcbayes.Dataset.from_codes(codes, columns=columns, cardinalities=cards)


def data_for(rng, columns, n_rows=30):
    cards = [int(c) for c in rng.integers(2, 4, size=len(columns))]
    return make_data(random_codes(rng, n_rows, cards), columns, cards)


LC_SHAPES = ((2, 1), (4, 3), (5, 2))  # (columns, classes); one class = independence


def lc_case(k: int):
    rng = np.random.default_rng(100 + k)
    n_cols, n_classes = LC_SHAPES[k]
    data = data_for(rng, [f"X{j + 1}" for j in range(n_cols)])
    return lcbayes.latent_class(data, n_classes), data


HLC_TREES = (
    {"H": ["X1", "H1"], "H1": ["X2", "X3", "H2"], "H2": ["X4", "X5"]},
    {"H": ["H1", "H2", "H3"], "H1": ["X1"], "H2": ["X2", "X3"], "H3": ["X4"]},
    # a one-state root whose only child is hidden; X4 is a data column the tree does not use
    {"H": ["H1"], "H1": ["H2", "X1"], "H2": ["X2", "X3"]},
)


def hlc_case(k: int):
    rng = np.random.default_rng(200 + k)
    tree = HLC_TREES[k]
    leaves = sorted({c for kids in tree.values() for c in kids if c not in tree})
    columns = leaves + (["X4"] if k == 2 else [])
    data = data_for(rng, columns[::-1] if k % 2 else columns)
    cards = {h: int(rng.integers(2, 4)) for h in tree}
    if k == 2:
        cards["H"] = 1  # a one-state root
    return lcbayes.hlc(data, tree, cards), data


DAGS = (
    # Beal & Ghahramani's bipartite class: two hidden roots, children with both as parents
    ({"X1": ["S1"], "X2": ["S1", "S2"], "X3": ["S2", "S1"], "X4": ["S2"]}, {"S1": 2, "S2": 3},
     ["X1", "X2", "X3", "X4"]),
    # A -> B <- H -> C <- D: observed parents with missing values
    ({"B": ["A", "H"], "C": ["H", "D"]}, {"H": 3}, ["D", "C", "B", "A"]),
    # hidden nodes with a hidden parent (H1 has two hidden children), observed parents (X3 has
    # two hidden parents and an observed child), an isolated observed node
    ({"H2": ["H1"], "H3": ["H1"], "X1": ["H1"], "X2": ["H2", "X1"], "X3": ["H2", "H3"],
      "X4": ["X3", "H1"], "X5": []}, {"H1": 2, "H2": 3, "H3": 2},
     ["X1", "X2", "X3", "X4", "X5"]),
    # no hidden node at all: observed chain
    ({"X2": ["X1"], "X3": ["X2", "X1"]}, {}, ["X3", "X1", "X2"]),
)


def dag_case(k: int):
    rng = np.random.default_rng(300 + k)
    parents, hidden, columns = DAGS[k]
    data = data_for(rng, columns)
    return lcbayes.dag(data, parents, hidden), data


@functools.cache
def case(kind: str, k: int):
    """``(structure, data, params)`` of one fixed random case, built once per session."""
    structure, data = {"latent_class": lc_case, "hlc": hlc_case, "dag": dag_case}[kind](k)
    params = lcbayes.random_params(structure, seed=400 + k)
    return structure, data, params


N_CASES = {"latent_class": len(LC_SHAPES), "hlc": len(HLC_TREES), "dag": len(DAGS)}
CASES = [(kind, k) for kind, n in N_CASES.items() for k in range(n)]
CASE_IDS = [f"{kind}-{k}" for kind, k in CASES]


def close(actual, expected, tol=TOL):
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=tol, atol=tol)


def log_tables_of(structure, params):
    return tuple(jnp.log(t) for t in to_tables(structure, params))


# ---------------------------------------------------------------------- the cases themselves
@pytest.mark.parametrize(("kind", "k"), CASES, ids=CASE_IDS)
def test_cases_cover_what_they_claim(kind, k):
    structure, data, _ = case(kind, k)
    assert structure.kind == kind
    obs = structure.check_data(data)
    assert np.all(obs.codes[0] == -1)                  # a fully missing row
    assert 0.15 < np.mean(obs.codes < 0) < 0.35         # ~20-30% missing overall
    for j, i in enumerate(structure.observed_nodes):
        if structure.children[i]:                       # observed parents: seen and missing
            assert np.any(obs.codes[:, j] < 0) and np.any(obs.codes[:, j] >= 0)


def test_dag_cases_include_the_required_shapes():
    bipartite, _, _ = case("dag", 0)
    x2 = bipartite.index("X2")
    assert all(bipartite.hidden[p] for p in bipartite.parents[x2])
    assert len(bipartite.parents[x2]) == 2
    mixed, _, _ = case("dag", 1)
    b = mixed.index("B")
    assert sorted(mixed.hidden[p] for p in mixed.parents[b]) == [False, True]
    chain, _, _ = case("dag", 2)
    h2 = chain.index("H2")
    assert chain.hidden[h2] and chain.parents[h2] == (chain.index("H1"),)


# ---------------------------------------------------------------------- 1. brute force
@pytest.mark.parametrize(("kind", "k"), CASES, ids=CASE_IDS)
def test_public_inference_matches_brute_force(kind, k):
    structure, data, params = case(kind, k)
    brute = BruteForce(structure, params)
    # the raw rows, restricted to the structure's columns by name (not via Dataset.select)
    rows = data.codes[:, [data.columns.index(c) for c in structure.observed_names]]
    memo: dict = {}

    def post(y):
        key = tuple(int(v) for v in y)
        if key not in memo:
            memo[key] = brute.posterior(np.asarray(key))
        return memo[key]

    row_posts = [post(y) for y in rows]
    assert any(np.all(y < 0) for y in rows) and post(rows[0]).prob == pytest.approx(1.0)

    # log likelihood: sum over rows (fully missing rows add ln 1 = 0)
    close(lcbayes.log_likelihood(structure, params, data),
          sum(np.log(q.prob) for q in row_posts))

    # hidden posteriors, per row
    hidden = lcbayes.hidden_posteriors(structure, params, data)
    assert set(hidden) == {structure.nodes[h] for h in structure.hidden_nodes}
    for name, marg in hidden.items():
        assert marg.shape == (data.n_rows, structure.cardinalities[structure.index(name)])
        close(marg, np.stack([q.hidden[name] for q in row_posts]))

    # family posteriors, per pattern of data.select(structure.observed_names)
    patterns = structure.check_data(data).patterns
    assert len(memo) == len(patterns)
    family = lcbayes.family_posteriors(structure, params, data)
    assert set(family) == set(structure.nodes)
    for i, name in enumerate(structure.nodes):
        assert family[name].shape == (len(patterns), *structure.cpt_shape(i))
        close(family[name], np.stack([post(y).family[name] for y in patterns]))

    # expected counts: family posteriors summed over rows
    counts = lcbayes.expected_counts(structure, params, data)
    assert set(counts) == set(structure.nodes)
    for i, name in enumerate(structure.nodes):
        assert counts[name].shape == structure.cpt_shape(i)
        close(counts[name], sum(q.family[name] for q in row_posts))


@pytest.mark.parametrize(("kind", "k"), CASES, ids=CASE_IDS)
def test_missing_leaf_has_no_family_term(kind, k):
    """The convention the brute force encodes, checked directly: a childless observed node with
    a missing value has an all-zero family posterior, every other family sums to one."""
    structure, data, params = case(kind, k)
    obs = structure.check_data(data)
    family = lcbayes.family_posteriors(structure, params, data)
    for i, name in enumerate(structure.nodes):
        totals = family[name].reshape(obs.n_patterns, -1).sum(axis=1)
        if structure.hidden[i] or structure.children[i]:
            close(totals, 1.0)
        else:
            j = structure.observed_nodes.index(i)
            close(totals, np.where(obs.patterns[:, j] < 0, 0.0, 1.0))


# ---------------------------------------------------------------------- 2. normalisation
@pytest.mark.parametrize(("kind", "k"), CASES, ids=CASE_IDS)
def test_pattern_probabilities_sum_to_one(kind, k):
    structure, _, params = case(kind, k)
    log_tables = log_tables_of(structure, params)
    brute = BruteForce(structure, params)
    complete = brute.all_patterns()
    # the same column missing everywhere: the remaining columns must still sum to one
    partial = complete.copy()
    partial[:, 0] = -1
    partial = np.unique(partial, axis=0)
    empty = -np.ones((1, complete.shape[1]), dtype=np.int32)
    # one call (one compilation) for the three groups
    lm = np.asarray(jit_log_marginal(structure, log_tables,
                                     jnp.asarray(np.concatenate([complete, partial, empty]))))
    lm_complete, lm_partial, lm_empty = np.split(lm, [len(complete), len(complete) + len(partial)])
    assert abs(float(logsumexp(lm_complete))) < TOL
    assert abs(float(logsumexp(lm_partial))) < TOL
    assert abs(float(lm_empty[0])) < TOL
    close(np.exp(lm_complete), [brute.prob(y) for y in complete])
    close(np.exp(lm_partial), [brute.prob(y) for y in partial])


# ---------------------------------------------------------------------- 3. tree vs enumeration
@pytest.mark.parametrize("k", range(N_CASES["hlc"]))
def test_hlc_tree_route_matches_enumeration_route(k):
    structure, data, params = case("hlc", k)
    as_dag = dataclasses.replace(structure, kind="dag")
    assert as_dag.kind == "dag" and as_dag != structure
    obs = structure.check_data(data)
    log_tables = log_tables_of(structure, params)
    patterns, weights = jnp.asarray(obs.patterns), jnp.asarray(obs.counts)
    tree = jit_e_step(structure, log_tables, patterns, weights)
    enum = jit_e_step(as_dag, log_tables, patterns, weights)
    close(tree.log_marginal, enum.log_marginal)
    assert len(tree.counts) == len(enum.counts) == structure.n_nodes
    for a, b in zip(tree.counts, enum.counts, strict=True):
        assert a.shape == b.shape
        close(a, b)
    assert len(tree.hidden_marginals) == len(enum.hidden_marginals) == len(structure.hidden_nodes)
    for a, b in zip(tree.hidden_marginals, enum.hidden_marginals, strict=True):
        close(a, b)
    close(tree.hidden_entropy, enum.hidden_entropy)
    # and both against the brute force
    brute = BruteForce(as_dag, params)
    close(enum.log_marginal, [np.log(brute.prob(y)) for y in obs.patterns])


# ---------------------------------------------------------------------- 4. entropy
@pytest.mark.parametrize(("kind", "k"), CASES, ids=CASE_IDS)
def test_hidden_entropy_is_entropy_of_joint_hidden_posterior(kind, k):
    structure, data, params = case(kind, k)
    obs = structure.check_data(data)
    brute = BruteForce(structure, params)
    out = jit_e_step(structure, log_tables_of(structure, params), jnp.asarray(obs.patterns),
                     jnp.asarray(obs.counts))
    posts = [brute.posterior(y) for y in obs.patterns]
    close(out.hidden_entropy, [q.hidden_entropy for q in posts])
    close(out.completion_entropy, [q.completion_entropy for q in posts])
    close(out.log_marginal, [np.log(q.prob) for q in posts])
    for h, marg in zip(structure.hidden_nodes, out.hidden_marginals, strict=True):
        close(marg, [q.hidden[structure.nodes[h]] for q in posts])
    if not structure.hidden_nodes:
        close(out.hidden_entropy, 0.0)
    else:
        assert np.all(np.asarray(out.hidden_entropy) >= -TOL)


# ---------------------------------------------------------------------- 5. zero probabilities
def _with_zeros(structure, params, data, rng):
    """Put exact zeros into the CPTs (at most one per row, observed nodes and the first hidden
    node), keeping only those zeros under which every pattern of ``data`` stays possible.

    Keeping the case's own data (rather than simulating new data) keeps the pattern shape, so
    the JAX compilations of the other tests are reused."""
    patterns = structure.check_data(data).patterns
    out = {n: np.array(v, dtype=np.float64) for n, v in params.items()}
    targets = list(structure.observed_nodes) + list(structure.hidden_nodes[:1])
    n_zeros = 0
    for i in targets:
        name, r = structure.nodes[i], structure.cardinalities[i]
        if r < 2:
            continue
        for row in range(structure.n_configs(i)):
            for value in rng.permutation(r):
                trial = {n: v.copy() for n, v in out.items()}
                table = trial[name].reshape(-1, r)
                table[row, value] = 0.0
                table[row] /= table[row].sum()
                trial[name] = table.reshape(structure.cpt_shape(i))
                brute = BruteForce(structure, trial)
                if all(brute.prob(y) > 0 for y in patterns):
                    out, n_zeros = trial, n_zeros + 1
                    break
    return out, n_zeros


ZERO_CASES = [("latent_class", 1), ("latent_class", 2), ("hlc", 0), ("hlc", 1), ("dag", 1),
              ("dag", 2)]


@pytest.mark.parametrize(("kind", "k"), ZERO_CASES, ids=[f"{a}-{b}" for a, b in ZERO_CASES])
def test_zero_probabilities_give_no_nan(kind, k):
    structure, data, params = case(kind, k)
    params, n_zeros = _with_zeros(structure, params, data, np.random.default_rng(500 + k))
    assert n_zeros >= 2
    assert any(np.any(params[structure.nodes[i]] == 0) for i in structure.observed_nodes)
    brute = BruteForce(structure, params)
    obs = structure.check_data(data)
    posts = [brute.posterior(y) for y in obs.patterns]
    probs = np.array([q.prob for q in posts])
    assert np.all(probs > 0)
    with np.errstate(divide="ignore"):
        log_tables = log_tables_of(structure, params)
    assert any(np.any(np.isneginf(np.asarray(t))) for t in log_tables)

    ll = lcbayes.log_likelihood(structure, params, data)
    assert np.isfinite(ll)
    close(ll, obs.counts @ np.log(probs))
    counts = lcbayes.expected_counts(structure, params, data)
    for name, value in counts.items():
        assert not np.any(np.isnan(value)), name
        close(value, sum(c * q.family[name] for q, c in zip(posts, obs.counts, strict=True)))
    for name, value in lcbayes.hidden_posteriors(structure, params, data).items():
        assert not np.any(np.isnan(value)), name
        close(value, [posts[p].hidden[name] for p in obs.pattern_index])
    out = jit_e_step(structure, log_tables, jnp.asarray(obs.patterns), jnp.asarray(obs.counts))
    assert np.all(np.isfinite(np.asarray(out.hidden_entropy)))
    close(out.hidden_entropy, [q.hidden_entropy for q in posts])
    if structure.kind == "hlc":  # the enumeration route on the same zeros
        enum = jit_e_step(dataclasses.replace(structure, kind="dag"), log_tables,
                          jnp.asarray(obs.patterns), jnp.asarray(obs.counts))
        for a, b in zip(out.counts, enum.counts, strict=True):
            close(a, b)
        close(out.hidden_entropy, enum.hidden_entropy)


@pytest.mark.parametrize(("kind", "k"), [("latent_class", 1), ("hlc", 0), ("dag", 1)])
def test_impossible_pattern_gives_minus_infinity_and_zero_posteriors(kind, k):
    """A pattern of probability zero: ``ln p = -inf``; its posteriors are zeros, not NaN, and
    the other patterns are unaffected."""
    structure, data, params = case(kind, k)
    obs = structure.check_data(data)
    complete = BruteForce(structure, params).all_patterns()
    target = complete[-1]
    params = {n: np.array(v, dtype=np.float64) for n, v in params.items()}
    j = len(structure.observed_nodes) - 1
    name = structure.nodes[structure.observed_nodes[j]]
    table = params[name]
    table[..., target[j]] = 0.0  # the last column's value is impossible under every parent
    params[name] = table / table.sum(axis=-1, keepdims=True)
    brute = BruteForce(structure, params)
    patterns = np.array(obs.patterns)  # same shape as the data: reuses the compilation
    patterns[0] = target
    with np.errstate(divide="ignore"):
        log_tables = log_tables_of(structure, params)
    out = jit_e_step(structure, log_tables, jnp.asarray(patterns), jnp.asarray(obs.counts))
    lm = np.asarray(out.log_marginal)
    assert lm[0] == -np.inf
    for arr in (*out.counts, *out.hidden_marginals, out.hidden_entropy):
        assert not np.any(np.isnan(np.asarray(arr)))
    close(out.hidden_entropy[0], 0.0)
    for marg in out.hidden_marginals:
        close(marg[0], 0.0)
    possible = np.array([brute.prob(y) for y in patterns[1:]]) > 0
    close(lm[1:][possible], [np.log(brute.prob(y)) for y in patterns[1:][possible]])
    assert np.all(lm[1:][~possible] == -np.inf)
    # counts: the impossible pattern adds nothing
    weights = np.asarray(obs.counts)
    for i, name in enumerate(structure.nodes):
        expected = sum(weights[p + 1] * brute.posterior(y).family[name]
                       for p, y in enumerate(patterns[1:]) if possible[p])
        close(out.counts[i], np.reshape(expected, out.counts[i].shape))


# ---------------------------------------------------------------------- 6. simulation
def test_simulate_is_reproducible_by_seed():
    structure, _, params = case("dag", 2)
    a = lcbayes.simulate(structure, params, 200, seed=7, missing=0.1)
    b = lcbayes.simulate(structure, params, 200, seed=7, missing=0.1)
    c = lcbayes.simulate(structure, params, 200, seed=8, missing=0.1)
    np.testing.assert_array_equal(a.codes, b.codes)
    assert not np.array_equal(a.codes, c.codes)
    assert a.columns == structure.observed_names
    assert a.n_rows == 200


def _frequency_check(structure, params, n, seed):
    brute = BruteForce(structure, params)
    complete = brute.all_patterns()
    expected = np.array([brute.prob(y) for y in complete])
    close(expected.sum(), 1.0)
    data = lcbayes.simulate(structure, params, n, seed=seed)
    assert np.all(data.codes >= 0)
    cards = [structure.cardinalities[i] for i in structure.observed_nodes]
    flat = np.ravel_multi_index(tuple(data.codes.T), cards)
    observed = np.bincount(flat, minlength=len(complete)) / n
    # itertools.product order is C order, the same as ravel_multi_index
    assert np.max(np.abs(observed - expected)) < 0.01
    chi2 = stats.chisquare(observed * n, expected * n)
    assert chi2.pvalue > 1e-4


def test_simulate_matches_latent_class_pattern_probabilities():
    data = make_data([[0, 0, 0], [1, 2, 1]], ["A", "B", "C"], [2, 3, 2])
    structure = lcbayes.latent_class(data, 2)
    params = {
        "class": np.array([0.3, 0.7]),
        "A": np.array([[0.9, 0.1], [0.2, 0.8]]),
        "B": np.array([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]]),
        "C": np.array([[0.6, 0.4], [0.25, 0.75]]),
    }
    _frequency_check(structure, params, 200_000, seed=11)


def test_simulate_matches_dag_pattern_probabilities():
    """Ancestral sampling through hidden -> hidden edges and observed parents."""
    structure, _, params = case("dag", 2)
    _frequency_check(structure, params, 200_000, seed=12)


def test_simulate_missing_fraction():
    structure, _, params = case("latent_class", 2)
    data = lcbayes.simulate(structure, params, 20_000, seed=3, missing=0.2)
    frac = float(np.mean(data.codes < 0))
    assert abs(frac - 0.2) < 0.01
    # per column too (missing completely at random)
    assert np.all(np.abs(np.mean(data.codes < 0, axis=0) - 0.2) < 0.02)
    full = lcbayes.simulate(structure, params, 20_000, seed=3)
    assert np.all(full.codes >= 0)


# ---------------------------------------------------------------------- 7. params and prior
@pytest.mark.parametrize(("kind", "k"), [("latent_class", 1), ("hlc", 2), ("dag", 1)])
def test_random_params_are_normalised_and_reproducible(kind, k):
    structure, _, _ = case(kind, k)
    a = lcbayes.random_params(structure, seed=3)
    b = lcbayes.random_params(structure, seed=3)
    c = lcbayes.random_params(structure, seed=4)
    assert set(a) == set(structure.nodes)
    for i, name in enumerate(structure.nodes):
        assert a[name].shape == structure.cpt_shape(i)
        assert np.all(a[name] >= 0)
        close(a[name].sum(axis=-1), 1.0)
        np.testing.assert_array_equal(a[name], b[name])
    assert any(not np.array_equal(a[n], c[n]) for n in structure.nodes
               if a[n].shape[-1] > 1)
    skewed = lcbayes.random_params(structure, seed=3, prior=0.5)
    for name in structure.nodes:
        close(skewed[name].sum(axis=-1), 1.0)


def _scipy_log_prior(structure, params, alpha_of):
    total = 0.0
    for i, name in enumerate(structure.nodes):
        r = structure.cardinalities[i]
        rows = np.asarray(params[name]).reshape(-1, r)
        alphas = np.broadcast_to(np.asarray(alpha_of(name), dtype=float),
                                 structure.cpt_shape(i)).reshape(-1, r)
        if r == 1:
            continue  # a one-point simplex: density 1
        for theta, alpha in zip(rows, alphas, strict=True):
            total += stats.dirichlet.logpdf(theta, alpha)
    return total


LOG_PRIOR_CASES = {
    "class-2": ({"class": 2.0}, {"class": 2.0}),
    "number": (0.7, {n: 0.7 for n in ("class", "X1", "X2", "X3", "X4")}),
    "arrays": ({"class": np.array([3.0, 0.5, 1.5]), "X2": np.array([[2.5], [0.8], [1.0]])},
               {"class": np.array([3.0, 0.5, 1.5]), "X2": np.array([[2.5], [0.8], [1.0]])}),
    "dirichlet": ("dirichlet", {}),
}


@pytest.mark.parametrize("which", list(LOG_PRIOR_CASES))
def test_log_prior_matches_scipy_dirichlet(which):
    # one structure for all priors: log_prior runs op by op, each new shape costs a compilation
    structure, _, params = case("latent_class", 1)
    assert structure.n_classes == 3
    prior, alphas = LOG_PRIOR_CASES[which]

    def alpha_of(name):
        return alphas.get(name, 1.0)

    close(lcbayes.log_prior(structure, params, prior=prior),
          _scipy_log_prior(structure, params, alpha_of))
    if which == "dirichlet":  # pseudo-count 1: ln of the uniform density, sum_rows ln (r - 1)!
        expected = sum(
            structure.n_configs(i) * float(np.sum(np.log(np.arange(1, r))))
            for i, r in enumerate(structure.cardinalities)
        )
        close(lcbayes.log_prior(structure, params), expected)


def test_brute_force_is_itself_normalised():
    """Sanity of the reference: the full joint sums to one."""
    for kind, k in CASES:
        structure, _, params = case(kind, k)
        close(BruteForce(structure, params).joint.sum(), 1.0)
    assert jax.config.read("jax_enable_x64")


def test_brute_force_matches_hand_formula():
    """The reference against formulas written out by hand, pinning the CPT axis convention
    (parents in ``structure.parents`` order, own state last)."""
    structure, _, params = case("dag", 1)  # A -> B <- H -> C <- D, B's parents are (A, H)
    assert [structure.nodes[p] for p in structure.parents[structure.index("B")]] == ["A", "H"]
    brute = BruteForce(structure, params)
    a_, b_, h_, c_, d_ = (params[n] for n in "ABHCD")
    col = {n: j for j, n in enumerate(structure.observed_names)}
    y = -np.ones(4, dtype=np.int32)
    y[col["A"]], y[col["B"]], y[col["C"]] = 1, 0, 1
    # p(A=1, B=0, C=1) = sum_h sum_d P(A=1) P(H=h) P(B=0 | A=1, H=h) P(D=d) P(C=1 | H=h, D=d)
    expected = sum(a_[1] * h_[h] * b_[1, h, 0] * d_[d] * c_[h, d, 1]
                   for h in range(3) for d in range(2))
    close(brute.prob(y), expected)
    post = brute.posterior(y)
    numer = [sum(a_[1] * h_[h] * b_[1, h, 0] * d_[d] * c_[h, d, 1] for d in range(2))
             for h in range(3)]
    close(post.hidden["H"], np.array(numer) / expected)
    # a latent class model: p(y) = sum_k pi_k prod_j theta_j[k, y_j] over the observed j
    structure, _, params = case("latent_class", 1)
    y = np.array([1, -1, 2, 0], dtype=np.int32)
    expected = sum(params["class"][k] * params["X1"][k, 1] * params["X3"][k, 2]
                   * params["X4"][k, 0] for k in range(3))
    close(BruteForce(structure, params).prob(y), expected)


# ---------------------------------------------------------------------- 7. folded evidence
FOLD_CASES = [("latent_class", 1), ("latent_class", 2), ("dag", 0), ("dag", 1), ("dag", 2)]


@pytest.mark.parametrize(("kind", "k"), FOLD_CASES, ids=[f"{a}-{b}" for a, b in FOLD_CASES])
@pytest.mark.parametrize("zeros", [False, True], ids=["interior", "zeros"])
def test_folded_e_step_matches_brute_force(kind, k, zeros):
    """Leaves observed in every pattern are folded (their first category leaves the one-hot
    evidence); log marginals and expected counts still match brute force, also with exact
    zeros in the CPTs (the floor of ``ln theta[., 0]`` must not leak into possible patterns)."""
    from lcbayes.inference import complete_columns, enumeration, flat, prepare

    structure, data, params = case(kind, k)
    if zeros:
        params, _ = _with_zeros(structure, params, data, np.random.default_rng(600 + k))
    obs = structure.check_data(data)
    patterns = obs.patterns[(obs.patterns >= 0).all(axis=1)]  # complete rows only: all fold
    weights = np.arange(1.0, len(patterns) + 1.0)
    complete = complete_columns(patterns)
    assert len(complete) == patterns.shape[1]
    evidence = prepare(structure, jnp.asarray(patterns), complete)
    assert evidence.folded, "no leaf was folded"
    assert evidence.one_hot.shape[1] < prepare(structure, jnp.asarray(patterns)).one_hot.shape[1]
    with np.errstate(divide="ignore"):
        flat_log = flat.flatten(log_tables_of(structure, params))
    log_marg, counts = jax.jit(enumeration.flat_e_step, static_argnums=0)(
        structure, flat_log, evidence, jnp.asarray(weights))
    brute = BruteForce(structure, params)
    posts = [brute.posterior(y) for y in patterns]
    close(log_marg, [np.log(q.prob) for q in posts])
    expected = flat.flatten([np.asarray(sum(w * q.family[name] for q, w in
                                            zip(posts, weights, strict=True)),
                                        dtype=np.float64).reshape(shape)
                             for name, shape in zip(structure.nodes, structure.table_shapes,
                                                    strict=True)])
    close(counts, expected, tol=1e-9)
