"""Exact inference by enumerating joint hidden states (latent class models and small DAGs).

For a structure whose hidden nodes have no observed parents, let ``E`` be the hidden nodes plus
the observed nodes that are parents (:attr:`Structure.enumerated_nodes`); every parent of every
node lies in ``E``. For a pattern ``y`` and a joint state ``e`` of ``E``::

    ln p(y, e) = sum_{i in E} ln theta_i[pa(e), e_i]                    (hidden and parent nodes)
               + sum_{i observed leaf, y_i seen} ln theta_i[pa(e), y_i]  (missing leaf: factor 1)
               + ln [e_i == y_i for observed i in E with y_i seen]       (consistency)

and ``ln p(y) = logsumexp_e ln p(y, e)`` (Beal & Ghahramani eq. 7). For a latent class model
``E`` is the class alone and this is the familiar
``logsumexp_k [ln pi_k + sum_j ln theta_j[k, y_j]]``
(Whiley §1.2). The posterior ``q(e) = p(e | y)`` gives the expected counts of every family
(Beal & Ghahramani eq. 19); an observed leaf with a missing value contributes no count (its factor
was summed out exactly).

The work is ``O(P x S x J)`` for ``P`` patterns and ``S`` joint states; every shape is static.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp, xlogy

from ..structure import Structure
from .estep import EStep, safe_normaliser

__all__ = ["e_step", "log_marginal"]


@dataclass(frozen=True)
class _Plan:
    """Static index arrays derived once per structure."""

    enumerated: tuple[int, ...]
    n_states: int
    value: dict[int, np.ndarray]          # node in E -> (S,) its value in each joint state
    config: dict[int, np.ndarray]         # node -> (S,) its parent configuration in each state
    config_onehot: dict[int, np.ndarray]  # leaf -> (S, q_i) one-hot of config (None: identity)
    column: dict[int, int]                # observed node -> its column in the patterns
    leaves: tuple[int, ...]               # observed nodes outside E
    hidden_onehot: dict[int, np.ndarray]  # hidden node -> (S, r_h)
    hidden_state_onehot: np.ndarray | None  # (S, S_h) joint hidden state, None if S_h == S


@lru_cache(maxsize=256)
def _plan(structure: Structure) -> _Plan:
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


def _leaf_terms(log_table: jax.Array, y: jax.Array) -> jax.Array:
    """``(P, q)`` log CPT entries of each pattern's value under every parent configuration
    (zero where the value is missing)."""
    seen = y >= 0
    terms = log_table[:, jnp.where(seen, y, 0)].T
    return jnp.where(seen[:, None], terms, 0.0)


def _log_joint(structure: Structure, log_tables, patterns: jax.Array) -> jax.Array:
    """``(P, S)`` values of ``ln p(y_p, e)``."""
    plan = _plan(structure)
    prior = jnp.zeros(plan.n_states)
    for i in plan.enumerated:
        prior = prior + log_tables[i][plan.config[i], plan.value[i]]
    logj = jnp.broadcast_to(prior, (patterns.shape[0], plan.n_states))
    for i in plan.enumerated:
        if i in plan.column:
            y = patterns[:, plan.column[i]][:, None]
            logj = jnp.where((y < 0) | (y == plan.value[i][None, :]), logj, -jnp.inf)
    for i in plan.leaves:
        terms = _leaf_terms(log_tables[i], patterns[:, plan.column[i]])
        logj = logj + (terms if plan.config_onehot[i] is None else terms[:, plan.config[i]])
    return logj


def log_marginal(structure: Structure, log_tables, patterns: jax.Array) -> jax.Array:
    """``(P,)`` log probability (or log normaliser, for unnormalised tables) of each pattern."""
    return logsumexp(_log_joint(structure, log_tables, patterns), axis=1)


def e_step(structure: Structure, log_tables, patterns: jax.Array, weights: jax.Array) -> EStep:
    """Log marginals, expected counts, hidden marginals and posterior entropies."""
    plan = _plan(structure)
    logj = _log_joint(structure, log_tables, patterns)
    log_marg = logsumexp(logj, axis=1)
    q = jnp.exp(logj - safe_normaliser(log_marg)[:, None])
    mass = weights[:, None] * q
    state_mass = mass.sum(axis=0)
    counts = []
    for i in range(structure.n_nodes):
        q_i, r_i = structure.n_configs(i), structure.cardinalities[i]
        if i in plan.value:
            flat = plan.config[i] * r_i + plan.value[i]
            counts.append(jnp.zeros(q_i * r_i).at[flat].add(state_mass).reshape(q_i, r_i))
        else:
            onehot = plan.config_onehot[i]
            per_config = mass if onehot is None else mass @ onehot
            y_onehot = jax.nn.one_hot(patterns[:, plan.column[i]], r_i, dtype=mass.dtype)
            counts.append(per_config.T @ y_onehot)
    hidden_marginals = tuple(q @ plan.hidden_onehot[h] for h in structure.hidden_nodes)
    q_hidden = q if plan.hidden_state_onehot is None else q @ plan.hidden_state_onehot
    entropy = -xlogy(q_hidden, q_hidden).sum(axis=1)
    return EStep(log_marg, tuple(counts), hidden_marginals, entropy)
