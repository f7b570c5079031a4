"""Exact inference by enumerating joint hidden states (latent class models and small DAGs).

For a structure whose hidden nodes have no observed parents, let ``E`` be the hidden nodes plus
the observed nodes that are parents (:attr:`Structure.enumerated_nodes`); every parent of every
node lies in ``E``. For a pattern ``y`` and a joint state ``e`` of ``E``::

    ln p(y, e) = sum_{i in E} ln theta_i[pa(e), e_i]                    (hidden and parent nodes)
               + sum_{i observed leaf, y_i seen} ln theta_i[pa(e), y_i]  (missing leaf: factor 1)
               + ln [e_i == y_i for observed i in E with y_i seen]       (consistency)

and ``ln p(y) = logsumexp_e ln p(y, e)`` (Beal & Ghahramani eq. 7). For a latent class model
``E`` is the class alone and this is the familiar
``logsumexp_k [ln pi_k + sum_j ln theta_j[k, y_j]]`` (Whiley §1.2). The posterior
``q(e) = p(e | y)`` gives the expected counts of every family (Beal & Ghahramani eq. 19); an
observed leaf with a missing value contributes no count (its factor was summed out exactly).

The leaf sum is one matrix product ``Y M^T`` of the ``(P, R)`` one-hot data with the ``(S, R)``
log CPT entries of every joint state, and the leaf counts are ``(w q)^T Y``: ``O(P S R)`` work
in two dense products per step, every shape static. From ``CODED_MIN_PATTERNS`` patterns on,
``Y`` is kept as block codes (:mod:`.coded`): both products become gathers and segment sums of
small per-block tables, and :func:`flat_e_step` forms the joint in probability space with
``exp`` on those tables only, falling back to log space if a product underflows.

Folding (``prepare(..., complete=...)``): a leaf observed in every pattern needs no column for
its first category, since ``ln theta[., y] = ln theta[., 0] + sum_{c >= 1} [y = c]
(ln theta[., c] - ln theta[., 0])``: the first term is the same for every pattern and joins the
state prior, and the first category's count is the state's mass minus the other counts. For
binary items this halves ``R`` and with it the memory traffic of both products. ``ln theta[., 0]``
is floored at ``FOLD_FLOOR`` so that the differences stay finite: a pattern that a zero
probability rules out gets ``exp(FOLD_FLOOR)``, which underflows to 0 beside any possible state.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from functools import lru_cache

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import xlogy

from ..structure import Structure
from . import coded, flat
from .estep import (
    LOG_ZERO_THRESHOLD,
    EStep,
    Evidence,
    finite_log,
    normalise_rows,
    one_hot_columns,
)

__all__ = ["CODED_MIN_PATTERNS", "FOLD_FLOOR", "e_step", "flat_e_step", "flat_index",
           "flat_log_joint", "joint_plan", "leaf_counts", "leaf_log_joint", "log_marginal",
           "one_hot_dot", "one_hot_tdot", "prepare", "state_counts", "state_log_prior"]

#: Floor of ``ln theta[., 0]`` for folded leaves (module docstring); ``exp`` of it is 0.
FOLD_FLOOR = -1000.0

#: From this many patterns on, :func:`prepare` stores the one-hot evidence as block codes
#: (:mod:`.coded`), which keeps the two products per step off the memory bus.
CODED_MIN_PATTERNS = 2048


@dataclass(frozen=True)
class _Plan:
    """Static index arrays derived once per structure."""

    enumerated: tuple[int, ...]
    n_states: int
    value: dict[int, np.ndarray]          # node in E -> (S,) its value in each joint state
    config: dict[int, np.ndarray]         # node -> (S,) its parent configuration in each state
    config_onehot: dict[int, np.ndarray | None]  # leaf -> (S, q_i) one-hot (None: identity)
    column: dict[int, int]                # observed node -> its column in the patterns
    leaves: tuple[int, ...]               # observed nodes outside E
    hidden_onehot: dict[int, np.ndarray]  # hidden node -> (S, r_h)
    hidden_state_onehot: np.ndarray | None  # (S, S_h) joint hidden state, None if S_h == S


@lru_cache(maxsize=256)
def joint_plan(structure: Structure) -> _Plan:
    """Static index arrays of the joint enumeration of ``structure`` (cached)."""
    enumerated = structure.enumerated_nodes
    cards = [structure.cardinalities[i] for i in enumerated]
    n_states = int(np.prod(cards)) if cards else 1
    grid = np.unravel_index(np.arange(n_states), cards) if cards else ()
    value = {i: np.asarray(grid[k]) for k, i in enumerate(enumerated)}
    config = {}
    for i in range(structure.n_nodes):
        pa = structure.parents[i]
        if pa:
            config[i] = np.ravel_multi_index(
                tuple(value[p] for p in pa), structure.parent_cardinalities(i)
            )
        else:
            config[i] = np.zeros(n_states, dtype=np.int64)
    column = {i: k for k, i in enumerate(structure.observed_nodes)}
    leaves = tuple(i for i in structure.observed_nodes if i not in value)
    config_onehot = {}
    for i in leaves:
        q = structure.n_configs(i)
        identity = q == n_states and np.array_equal(config[i], np.arange(n_states))
        config_onehot[i] = None if identity else np.eye(q)[config[i]]
    hidden_onehot = {
        h: np.eye(structure.cardinalities[h])[value[h]] for h in structure.hidden_nodes
    }
    hidden = structure.hidden_nodes
    if len(hidden) == len(enumerated):
        hidden_state_onehot = None
    elif hidden:
        hidden_cards = [structure.cardinalities[h] for h in hidden]
        index = np.ravel_multi_index(tuple(value[h] for h in hidden), hidden_cards)
        hidden_state_onehot = np.eye(int(np.prod(hidden_cards)))[index]
    else:
        hidden_state_onehot = np.ones((n_states, 1))
    return _Plan(enumerated, n_states, value, config, config_onehot, column, leaves,
                 hidden_onehot, hidden_state_onehot)


def prepare(structure: Structure, patterns: jax.Array, complete: tuple[int, ...] = ()) -> Evidence:
    """One-hot leaf evidence and the consistency of observed parents with each joint state.

    ``complete`` lists pattern columns with no missing value; their leaves are folded (module
    docstring). It must be static and true of ``patterns``: callers compute it from the data."""
    plan = joint_plan(structure)
    folded = tuple(i for i in plan.leaves
                   if plan.column[i] in complete and structure.cardinalities[i] > 1)
    n_patterns = patterns.shape[0]
    one_hot: jax.Array | coded.CodedOneHot
    if n_patterns >= CODED_MIN_PATTERNS:
        leaves = tuple(_coded_leaf(structure, plan, i, i in folded, plan.column[i] in complete)
                       for i in plan.leaves)
        one_hot = coded.encode(patterns, leaves, min(coded.BLOCK_SIZE, n_patterns))
    else:
        blocks = [one_hot_columns(patterns, [plan.column[i]], [structure.cardinalities[i]])
                  for i in plan.leaves]
        blocks = [b[:, 1:] if i in folded else b
                  for i, b in zip(plan.leaves, blocks, strict=True)]
        one_hot = jnp.concatenate(blocks, axis=1) if blocks else jnp.zeros((n_patterns, 0))
    observed_parents = [i for i in plan.enumerated if i in plan.column]
    if not observed_parents:
        return Evidence(one_hot, None, folded)
    agree = jnp.ones((patterns.shape[0], plan.n_states), dtype=bool)
    for i in observed_parents:
        y = patterns[:, plan.column[i]][:, None]
        agree = agree & ((y < 0) | (y == plan.value[i][None, :]))
    return Evidence(one_hot, jnp.where(agree, 0.0, -jnp.inf), folded)


def _coded_leaf(structure: Structure, plan: _Plan, i: int, folded: bool, complete: bool
                ) -> coded.Leaf:
    """Leaf ``i``'s levels and one-hot columns (:mod:`.coded`; same columns as the dense
    one-hot: a folded leaf drops its first value, a leaf with missing values adds a zero row)."""
    r = structure.cardinalities[i]
    if folded:
        return coded.Leaf(plan.column[i], (-1, *range(r - 1)), r - 1)
    return coded.Leaf(plan.column[i], tuple(range(r)) + (() if complete else (-1,)), r)


def one_hot_dot(one_hot, m: jax.Array) -> jax.Array:
    """``Y @ m`` for the dense ``(P, R)`` one-hot or its :class:`~.coded.CodedOneHot` form."""
    return one_hot.dot(m) if isinstance(one_hot, coded.CodedOneHot) else one_hot @ m


def one_hot_tdot(one_hot, mass: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(mass.T @ Y, mass.sum(axis=0))`` for the dense ``(P, R)`` one-hot or its coded form."""
    if isinstance(one_hot, coded.CodedOneHot):
        return one_hot.tdot(mass)
    return mass.T @ one_hot, mass.sum(axis=0)


@dataclass(frozen=True)
class _FlatIndex:
    """Where the log joint's terms sit in the flat CPT vector (:mod:`.flat`), per joint state."""

    prior: np.ndarray   # (S, E) entry of each enumerated node's CPT in each joint state
    leaf: np.ndarray    # (S, R) entry matching each one-hot evidence column in each state
    base: np.ndarray    # (S, F) entry of each folded leaf's first category
    fold: np.ndarray    # (R, F) 0/1: the column belongs to folded leaf f


@lru_cache(maxsize=256)
def flat_index(structure: Structure, folded: tuple[int, ...] = ()) -> _FlatIndex:
    """Static entry indices of :func:`flat_log_joint` and :func:`flat_counts` (cached)."""
    plan = joint_plan(structure)
    start = flat.offsets(structure.table_shapes)

    def entry(i, k):
        return start[i] + plan.config[i] * structure.cardinalities[i] + k

    def as_matrix(cols):  # (S, len(cols)) entry indices
        return (np.stack(cols, axis=1) if cols
                else np.zeros((plan.n_states, 0), dtype=np.int64))

    prior = as_matrix([entry(i, plan.value[i]) for i in plan.enumerated])
    leaf, fold_of_column = [], []
    for i in plan.leaves:
        first = 1 if i in folded else 0
        for k in range(first, structure.cardinalities[i]):
            leaf.append(entry(i, k))
            fold_of_column.append(folded.index(i) if first else -1)
    base = [entry(i, 0) for i in folded]
    fold = np.zeros((len(leaf), len(folded)))
    for c, f in enumerate(fold_of_column):
        if f >= 0:
            fold[c, f] = 1.0
    return _FlatIndex(prior, as_matrix(leaf), as_matrix(base), fold)


def _leaf_terms(structure: Structure, flat_log: jax.Array, folded: tuple[int, ...]
                ) -> tuple[jax.Array, jax.Array]:
    """``(b, M)``: the ``(S,)`` folded leaves' first-category terms (floored at
    ``FOLD_FLOOR``) and the ``(S, R)`` log factors matching the one-hot columns."""
    index = flat_index(structure, folded)
    base = jnp.maximum(flat_log[index.base], FOLD_FLOOR)  # (S, F)
    return base.sum(axis=1), finite_log(flat_log[index.leaf]) - base @ index.fold.T


def leaf_log_joint(structure: Structure, flat_log: jax.Array, evidence: Evidence) -> jax.Array:
    """``(P, S)`` sum of the observed leaves' log factors, ``Y M^T + b`` (module docstring;
    ``b`` holds the folded leaves' first categories, floored at ``FOLD_FLOOR``)."""
    base, per_state = _leaf_terms(structure, flat_log, evidence.folded)
    return base[None, :] + one_hot_dot(evidence.one_hot, per_state.T)


def state_log_prior(structure: Structure, flat_log: jax.Array) -> jax.Array:
    """``(S,)`` ``sum_{i in E} ln theta_i[pa(e), e_i]`` for every joint state ``e``."""
    return flat_log[flat_index(structure).prior].sum(axis=1)


def _leaf_counts_and_mass(structure: Structure, mass: jax.Array, evidence: Evidence
                          ) -> tuple[jax.Array, jax.Array]:
    """:func:`leaf_counts` and the ``(S,)`` mass of every joint state."""
    index = flat_index(structure, evidence.folded)
    per_column, state_mass = one_hot_tdot(evidence.one_hot, mass)  # (S, R), (S,)
    first = jnp.maximum(state_mass[:, None] - per_column @ index.fold, 0.0)  # (S, F)
    n = flat.offsets(structure.table_shapes)[-1]
    return jnp.zeros(n).at[index.leaf].add(per_column).at[index.base].add(first), state_mass


def leaf_counts(structure: Structure, mass: jax.Array, evidence: Evidence) -> jax.Array:
    """Flat expected counts of the observed leaves under ``(P, S)`` pattern-state masses: the
    one-hot product ``mass^T Y`` (a folded leaf's first category is the state's mass less the
    other categories), scattered to each state's CPT row; other entries are 0."""
    return _leaf_counts_and_mass(structure, mass, evidence)[0]


def state_counts(structure: Structure, state_mass: jax.Array) -> jax.Array:
    """Flat expected counts of the enumerated nodes given the ``(S,)`` mass of each joint
    state; other entries are 0."""
    prior = flat_index(structure).prior
    n = flat.offsets(structure.table_shapes)[-1]
    return jnp.zeros(n).at[prior].add(jnp.broadcast_to(state_mass[:, None], prior.shape))


def flat_log_joint(structure: Structure, flat_log: jax.Array, evidence: Evidence) -> jax.Array:
    """``(P, S)`` ``ln p(y_p, e)`` from the flat log CPTs (module docstring)."""
    logj = state_log_prior(structure, flat_log)[None, :]
    if joint_plan(structure).leaves:
        logj = logj + leaf_log_joint(structure, flat_log, evidence)
    if evidence.log_consistency is not None:
        logj = logj + evidence.log_consistency
    return jnp.broadcast_to(logj, (evidence.one_hot.shape[0], joint_plan(structure).n_states))


def _counts(structure: Structure, mass: jax.Array, evidence: Evidence) -> jax.Array:
    """Flat expected counts of every node under ``(P, S)`` pattern-state masses."""
    leaves, state_mass = _leaf_counts_and_mass(structure, mass, evidence)
    return state_counts(structure, state_mass) + leaves


def flat_e_step(structure: Structure, flat_log: jax.Array, evidence: Evidence,
                weights: jax.Array, vmapped: bool = False) -> tuple[jax.Array, jax.Array]:
    """``(ln p(y_p) per pattern, flat expected counts)``: the part of :func:`e_step` that EM and
    VBEM iterate, on flat tables (:mod:`.flat`).

    With coded evidence (:mod:`.coded`) the joint is formed in probability space, ``exp`` taken
    on the code tables only (:func:`_coded_e_step`); otherwise, or when the caller is
    ``vmapped`` (where the fallback's ``lax.cond`` would evaluate both branches), in log
    space."""
    if (isinstance(evidence.one_hot, coded.CodedOneHot) and joint_plan(structure).leaves
            and not vmapped):
        return _coded_e_step(structure, flat_log, evidence, weights)
    return _log_space_e_step(structure, flat_log, evidence, weights)


def _log_space_e_step(structure: Structure, flat_log: jax.Array, evidence: Evidence,
                      weights: jax.Array) -> tuple[jax.Array, jax.Array]:
    log_marg, q = normalise_rows(flat_log_joint(structure, flat_log, evidence))
    return log_marg, _counts(structure, weights[:, None] * q, evidence)


#: Smallest per-pattern total of the scaled joint that :func:`_coded_e_step` trusts: above it,
#: states that underflowed weigh less than ``1e-17`` of the total.
_LINEAR_FLOOR = 1e-280


def _coded_e_step(structure: Structure, flat_log: jax.Array, evidence: Evidence,
                  weights: jax.Array) -> tuple[jax.Array, jax.Array]:
    """:func:`_probability_space_e_step`, redone in log space (``lax.cond``: the fallback
    costs nothing when not taken) if it flagged a pattern."""
    log_marg, counts = _probability_space_e_step(structure, flat_log, evidence, weights)
    return jax.lax.cond(jnp.isnan(counts).any(),
                        lambda: _log_space_e_step(structure, flat_log, evidence, weights),
                        lambda: (log_marg, counts))


def _probability_space_e_step(structure: Structure, flat_log: jax.Array, evidence: Evidence,
                              weights: jax.Array) -> tuple[jax.Array, jax.Array]:
    """:func:`flat_e_step` in probability space on coded evidence. With ``a_e`` the state
    terms (enumerated nodes' log CPT entries and folded leaves' first categories),
    ``p(y_p, e) = exp(g_p) F_pe`` (:meth:`.coded.CodedOneHot.exp_dot` with offset ``a``), so
    ``ln p(y_p) = ln sum_e F_pe + g_p`` and the posterior needs no ``exp`` per pattern.

    Every factor lies in ``[0, 1]``; a product is exact unless it leaves the normal doubles,
    which matters only if a pattern's total falls below ``_LINEAR_FLOOR`` (its blocks disagree
    about the state by hundreds of nats) or every state is impossible. Such a pattern gets NaN
    masses, so the counts hold NaN: the caller's one cheap test."""
    base, per_state = _leaf_terms(structure, flat_log, evidence.folded)
    assert isinstance(evidence.one_hot, coded.CodedOneHot)  # the caller checked
    joint, log_scale = evidence.one_hot.exp_dot(
        per_state.T, finite_log(state_log_prior(structure, flat_log)) + base)
    if evidence.log_consistency is not None:
        joint = joint * jnp.exp(evidence.log_consistency)
    # Column by column: XLA:CPU fuses these adds with their consumers, a row reduction it does not.
    total = functools.reduce(jnp.add, [joint[:, e] for e in range(joint.shape[1])])
    trusted = (total >= _LINEAR_FLOOR) & (log_scale > LOG_ZERO_THRESHOLD)
    log_marg = jnp.log(jnp.where(trusted, total, 1.0)) + log_scale
    mass = joint * jnp.where(trusted, weights / total, jnp.nan)[:, None]
    return log_marg, _counts(structure, mass, evidence)


def _log_joint(structure: Structure, log_tables, evidence: Evidence, virtual_evidence=None):
    """``(P, S)`` values of ``ln p(y_p, e)`` (plus any per-pattern virtual evidence on hidden
    nodes, ``virtual_evidence[h][p, e_h]``); an impossible state may hold the huge negative
    stand-in for ``ln 0`` instead of ``-inf`` (:func:`normalise_rows` treats both alike)."""
    logj = flat_log_joint(structure, flat.flatten(log_tables), evidence)
    if virtual_evidence is not None:
        plan = joint_plan(structure)
        for h, extra in zip(structure.hidden_nodes, virtual_evidence, strict=True):
            logj = logj + extra[:, plan.value[h]]
    return logj


def log_marginal(structure: Structure, log_tables, evidence: Evidence) -> jax.Array:
    """``(P,)`` log probability (or log normaliser, for unnormalised tables) of each pattern."""
    return normalise_rows(_log_joint(structure, log_tables, evidence))[0]


def e_step(structure: Structure, log_tables, evidence: Evidence, weights: jax.Array,
           virtual_evidence=None) -> EStep:
    """Log marginals, expected counts, hidden marginals and posterior entropies."""
    plan = joint_plan(structure)
    logj = _log_joint(structure, log_tables, evidence, virtual_evidence)
    log_marg, q = normalise_rows(logj)
    mass = weights[:, None] * q
    shapes = structure.table_shapes
    counts = flat.unflatten(_counts(structure, mass, evidence), shapes)
    hidden_marginals = tuple(q @ plan.hidden_onehot[h] for h in structure.hidden_nodes)
    q_hidden = q if plan.hidden_state_onehot is None else q @ plan.hidden_state_onehot
    entropy = -xlogy(q_hidden, q_hidden).sum(axis=1)
    completion = entropy if plan.hidden_state_onehot is None else -xlogy(q, q).sum(axis=1)
    return EStep(log_marg, tuple(counts), hidden_marginals, entropy, completion)
