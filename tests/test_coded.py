"""Coded one-hot evidence (lcbayes/inference/coded.py) and the probability-space E step.

Large data sets store their one-hot evidence as block codes and EM/VBEM take their E step in
probability space, with ``exp`` on the code tables. These tests force that path on the small
cases of test_inference.py (``CODED_MIN_PATTERNS = 0`` and small blocks) and compare it with
brute-force enumeration and with the dense log-space path, including exact zeros, impossible
patterns and a pattern whose blocks disagree so strongly that the probability-space product
underflows (the step must fall back to log space, not return a wrong number).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import lcbayes
from lcbayes.inference import coded, complete_columns, enumeration, flat, prepare

try:
    from .brute_force import BruteForce
    from .test_inference import _with_zeros, case, close, log_tables_of
except ImportError:
    from brute_force import BruteForce
    from test_inference import _with_zeros, case, close, log_tables_of


@pytest.fixture
def coded_evidence(monkeypatch):
    """Every :func:`prepare` call codes its evidence, in blocks of at most 8 codes."""
    monkeypatch.setattr(enumeration, "CODED_MIN_PATTERNS", 0)
    monkeypatch.setattr(coded, "BLOCK_SIZE", 8)


def _dense(one_hot: coded.CodedOneHot) -> np.ndarray:
    """The ``(P, R)`` matrix that ``one_hot`` stands for, row by row from the code books."""
    codes = np.asarray(one_hot.codes)
    return np.concatenate([coded._code_book(block)[codes[:, b]]
                           for b, block in enumerate(one_hot.blocks)], axis=1)


def test_code_books_reproduce_the_dense_one_hot_and_its_products():
    """Leaves with and without missing values and a folded leaf, blocks of several leaves and a
    leaf wider than a block: the coded matrix is the dense one-hot, and ``dot``, ``tdot`` and
    ``exp_dot`` are its products."""
    rng = np.random.default_rng(0)
    cards = [2, 3, 2, 9, 2, 4]
    patterns = rng.integers(0, cards, size=(400, len(cards)))
    patterns[rng.random(patterns.shape) < 0.2] = -1
    patterns[:, 0] = rng.integers(0, 2, 400)  # complete: folded below
    patterns[:, 4:] = rng.integers(0, [2, 4], size=(400, 2))  # complete, not folded
    leaves = (coded.Leaf(0, (-1, 0), 1),
              *(coded.Leaf(j, (*range(r), -1), r) for j, r in [(1, 3), (2, 2), (3, 9)]),
              coded.Leaf(4, (0, 1), 2), coded.Leaf(5, (0, 1, 2, 3), 4))
    one_hot = coded.encode(jnp.asarray(patterns), leaves, block_size=8)
    # levels 2 4 | 3 | 10 (wider than a block) | 2 4
    assert [len(b) for b in one_hot.blocks] == [2, 1, 1, 2]
    expected = np.concatenate(
        [(patterns[:, [0]] == 1),
         *[(patterns[:, [j]] == np.arange(r)) for j, r in [(1, 3), (2, 2), (3, 9)]],
         (patterns[:, [4]] == np.arange(2)), (patterns[:, [5]] == np.arange(4))],
        axis=1).astype(float)
    np.testing.assert_array_equal(_dense(one_hot), expected)
    assert one_hot.shape == expected.shape

    m = rng.normal(size=(expected.shape[1], 3))
    offset = rng.normal(size=3)
    close(one_hot.dot(jnp.asarray(m)), expected @ m)
    mass = rng.random((400, 3))
    per_column, total = one_hot.tdot(jnp.asarray(mass))
    close(per_column, mass.T @ expected)
    close(total, mass.sum(axis=0))
    factor, log_scale = one_hot.exp_dot(jnp.asarray(m), jnp.asarray(offset))
    assert np.all((np.asarray(factor) >= 0) & (np.asarray(factor) <= 1))
    close(np.log(np.asarray(factor)) + np.asarray(log_scale)[:, None], expected @ m + offset)


CODED_CASES = [("latent_class", 1), ("latent_class", 2), ("dag", 0), ("dag", 1), ("dag", 2)]


def _steps(structure, flat_log, log_tables, evidence, weights):
    """The probability-space step alone, the E step EM iterates, and the full E step."""
    return (enumeration._probability_space_e_step(structure, flat_log, evidence, weights),
            enumeration.flat_e_step(structure, flat_log, evidence, weights),
            enumeration.e_step(structure, log_tables, evidence, weights))


_jit_steps = jax.jit(_steps, static_argnums=0)


@pytest.mark.parametrize(("kind", "k"), CODED_CASES, ids=[f"{a}-{b}" for a, b in CODED_CASES])
def test_coded_e_steps_match_brute_force(coded_evidence, kind, k):
    """Missing values, observed parents, folded leaves and exact zeros in the CPTs: the
    probability-space step (taken without its fallback), the E step EM iterates and the full E
    step with entropies all agree with brute force."""
    structure, data, params = case(kind, k)
    params, n_zeros = _with_zeros(structure, params, data, np.random.default_rng(600 + k))
    assert n_zeros >= 1
    obs = structure.check_data(data)
    patterns = obs.patterns
    weights = np.asarray(obs.counts, dtype=float)
    evidence = prepare(structure, jnp.asarray(patterns), complete_columns(patterns))
    assert isinstance(evidence.one_hot, coded.CodedOneHot)
    assert len(evidence.one_hot.blocks) > 1
    with np.errstate(divide="ignore"):
        log_tables = log_tables_of(structure, params)
    flat_log = flat.flatten(log_tables)
    brute = BruteForce(structure, params)
    posts = [brute.posterior(y) for y in patterns]
    expected = flat.flatten([np.asarray(sum(w * q.family[name] for q, w in
                                            zip(posts, weights, strict=True)),
                                        dtype=np.float64).reshape(shape)
                             for name, shape in zip(structure.nodes, structure.table_shapes,
                                                    strict=True)])
    log_probs = [np.log(q.prob) for q in posts]

    fast, step, full = _jit_steps(structure, flat_log, log_tables, evidence,
                                  jnp.asarray(weights))
    assert not np.any(np.isnan(np.asarray(fast[1]))), "fell back although nothing underflows"
    for log_marg, counts in (fast, step):
        close(log_marg, log_probs)
        close(counts, expected, tol=1e-9)
    close(full.log_marginal, log_probs)
    close(full.hidden_entropy, [q.hidden_entropy for q in posts])


def test_impossible_pattern_falls_back_to_log_space(coded_evidence):
    """A pattern of probability zero: ``ln p = -inf`` and it adds no counts, as in log space."""
    structure, data, params = case("latent_class", 1)
    obs = structure.check_data(data)
    target = BruteForce(structure, params).all_patterns()[-1]
    params = {n: np.array(v, dtype=np.float64) for n, v in params.items()}
    name = structure.nodes[structure.observed_nodes[-1]]
    params[name][:, target[-1]] = 0.0
    params[name] /= params[name].sum(axis=1, keepdims=True)
    patterns = np.array(obs.patterns)
    patterns[0] = target
    weights = jnp.asarray(obs.counts, dtype=jnp.float64)
    with np.errstate(divide="ignore"):
        flat_log = flat.flatten(log_tables_of(structure, params))
        log_tables = log_tables_of(structure, params)
    evidence = prepare(structure, jnp.asarray(patterns))
    (_, counts_fast), (log_marg, counts), _ = _jit_steps(structure, flat_log, log_tables,
                                                         evidence, weights)
    assert np.any(np.isnan(np.asarray(counts_fast)))
    assert np.asarray(log_marg)[0] == -np.inf
    log_space = jax.jit(enumeration._log_space_e_step, static_argnums=0)(
        structure, flat_log, evidence, weights)
    close(np.asarray(log_marg)[1:], np.asarray(log_space[0])[1:])
    close(counts, log_space[1])


def test_underflowing_product_falls_back_to_log_space(coded_evidence):
    """Two classes, each ruling out (with probability 1e-300) an item of a different block: for
    the pattern with both items at 1 every class's probability-space product underflows, the
    fast step flags it and the E step returns the exact log-space answer."""
    codes = np.array([[1, 0, 1, 0], [0, 0, 0, 0], [1, 1, 0, 1], [0, 1, 1, 1]])
    data = lcbayes.Dataset.from_codes(codes, cardinalities=[2, 2, 2, 2])
    structure = lcbayes.latent_class(data, 2)
    tiny = 1e-300
    params = {"class": np.array([0.5, 0.5]),
              **{c: np.array([[0.5, 0.5], [0.5, 0.5]]) for c in data.columns}}
    params[data.columns[0]] = np.array([[1 - tiny, tiny], [0.5, 0.5]])
    params[data.columns[2]] = np.array([[0.5, 0.5], [1 - tiny, tiny]])
    obs = structure.check_data(data)
    weights = jnp.asarray(obs.counts, dtype=jnp.float64)
    evidence = prepare(structure, jnp.asarray(obs.patterns), complete_columns(obs.patterns))
    assert len(evidence.one_hot.blocks) == 2
    log_tables = log_tables_of(structure, params)
    fast, (log_marg, counts), _ = _jit_steps(structure, flat.flatten(log_tables), log_tables,
                                             evidence, weights)
    assert np.any(np.isnan(np.asarray(fast[1])))
    brute = BruteForce(structure, params)
    close(log_marg, [np.log(brute.prob(y)) for y in obs.patterns])
    assert np.all(np.isfinite(np.asarray(counts)))


def test_em_is_the_same_with_coded_and_dense_evidence(monkeypatch):
    """EM (and so VBEM, which shares its E step) on coded evidence, one restart at a time or
    side by side: same iterations, same optimum as on the dense one-hot, with missing values
    and folded leaves."""
    cards = [2, 3] * 4
    placeholder = lcbayes.Dataset.from_codes(np.array([[0] * 8, [1] * 8]), cardinalities=cards)
    truth = lcbayes.latent_class(placeholder, 2)
    sim = lcbayes.simulate(truth, lcbayes.random_params(truth, seed=7), n=1500, seed=8)
    codes = np.array(sim.codes)
    codes[:, 4:][np.random.default_rng(9).random((1500, 4)) < 0.05] = -1  # first 4: folded
    data = lcbayes.Dataset.from_codes(codes, cardinalities=cards)
    structure = lcbayes.latent_class(data, 2)
    fits = {}
    # prepare() runs when EM's loop is traced: a different (static) iteration limit, never
    # reached, makes each run trace anew.
    # Restarts side by side (batch_size=2, vmapped) take the log-space step on coded evidence.
    for label, threshold, max_iter, batch in (("coded", 0, 300, 1), ("dense", 10**9, 301, 1),
                                               ("coded, vmapped", 0, 302, 2)):
        monkeypatch.setattr(enumeration, "CODED_MIN_PATTERNS", threshold)
        fits[label] = lcbayes.em(structure, data, restarts=2, seed=3, max_iter=max_iter,
                                 batch_size=batch)
    b = fits["dense"]
    assert b.restart_converged.all()
    for a in (fits["coded"], fits["coded, vmapped"]):
        np.testing.assert_array_equal(a.restart_n_iter, b.restart_n_iter)
        close(a.restart_logliks, b.restart_logliks, tol=1e-8)
        for name in a.params:
            close(a.params[name], b.params[name], tol=1e-6)
