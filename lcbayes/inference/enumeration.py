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
in two dense products per step, every shape static.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import xlogy

from ..structure import Structure
from .estep import (
    EStep,
    Evidence,
    finite_log,
    normalise_rows,
    one_hot_columns,
)

__all__ = ["e_step", "joint_plan", "log_marginal", "prepare"]


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
    offsets: tuple[int, ...]              # leaf -> first column in the one-hot evidence
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
    offsets = tuple(np.cumsum([0] + [structure.cardinalities[i] for i in leaves])[:-1].tolist())
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
    return _Plan(enumerated, n_states, value, config, config_onehot, column, leaves, offsets,
                 hidden_onehot, hidden_state_onehot)


def prepare(structure: Structure, patterns: jax.Array) -> Evidence:
    """One-hot leaf evidence and the consistency of observed parents with each joint state."""
    plan = joint_plan(structure)
    one_hot = one_hot_columns(patterns, [plan.column[i] for i in plan.leaves],
                              [structure.cardinalities[i] for i in plan.leaves])
    observed_parents = [i for i in plan.enumerated if i in plan.column]
    if not observed_parents:
        return Evidence(one_hot, None)
    agree = jnp.ones((patterns.shape[0], plan.n_states), dtype=bool)
    for i in observed_parents:
        y = patterns[:, plan.column[i]][:, None]
        agree = agree & ((y < 0) | (y == plan.value[i][None, :]))
    return Evidence(one_hot, jnp.where(agree, 0.0, -jnp.inf))


def _log_joint(structure: Structure, log_tables, evidence: Evidence, virtual_evidence=None):
    """``(P, S)`` values of ``ln p(y_p, e)`` (plus any per-pattern virtual evidence on hidden
    nodes, ``virtual_evidence[h][p, e_h]``); an impossible state may hold the huge negative
    stand-in for ``ln 0`` instead of ``-inf`` (:func:`normalise_rows` treats both alike)."""
    plan = joint_plan(structure)
    prior = jnp.zeros(plan.n_states)
    for i in plan.enumerated:
        prior = prior + log_tables[i][plan.config[i], plan.value[i]]
    logj = prior[None, :]
    if plan.leaves:
        per_state = jnp.concatenate(
            [finite_log(log_tables[i] if plan.config_onehot[i] is None
                        else log_tables[i][plan.config[i]]) for i in plan.leaves],
            axis=1,
        )  # (S, R)
        logj = logj + evidence.one_hot @ per_state.T  # ln 0 stays a huge negative
    if evidence.log_consistency is not None:
        logj = logj + evidence.log_consistency
    if virtual_evidence is not None:
        for h, extra in zip(structure.hidden_nodes, virtual_evidence, strict=True):
            logj = logj + extra[:, plan.value[h]]
    return jnp.broadcast_to(logj, (evidence.one_hot.shape[0], plan.n_states))


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
    state_mass = mass.sum(axis=0)
    leaf_counts = mass.T @ evidence.one_hot  # (S, R)
    counts = []
    for i in range(structure.n_nodes):
        q_i, r_i = structure.n_configs(i), structure.cardinalities[i]
        if i in plan.value:
            flat = plan.config[i] * r_i + plan.value[i]
            counts.append(jnp.zeros(q_i * r_i).at[flat].add(state_mass).reshape(q_i, r_i))
        else:
            start = plan.offsets[plan.leaves.index(i)]
            block = leaf_counts[:, start:start + r_i]
            onehot = plan.config_onehot[i]
            counts.append(block if onehot is None else onehot.T @ block)
    hidden_marginals = tuple(q @ plan.hidden_onehot[h] for h in structure.hidden_nodes)
    q_hidden = q if plan.hidden_state_onehot is None else q @ plan.hidden_state_onehot
    entropy = -xlogy(q_hidden, q_hidden).sum(axis=1)
    completion = entropy if plan.hidden_state_onehot is None else -xlogy(q, q).sum(axis=1)
    return EStep(log_marg, tuple(counts), hidden_marginals, entropy, completion)
