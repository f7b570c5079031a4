"""Tempered completions: sample the hidden and missing values of every row at a temperature.

The complete-data annealing path (the Gibbs kernel of :func:`lcbayes.ais`) targets

    f_tau(theta, s) = p(theta) p(s | theta) p(y | s, theta)^tau

where ``s`` holds, for every row, the values the row leaves free (the hidden nodes and any
missing observed parents of a DAG) and ``y`` its observed values. Only the factors of observed
values are tempered; the factors of free values are not, so ``sum_s p(s | theta) = 1`` and
``f_0`` is the prior (``Z_0 = 1``), while ``Z_1 = p(y | m)``. A missing observed *leaf* is summed
out exactly (a factor of one) and never sampled.

Joint states are those of the enumeration engine (:func:`.enumeration.joint_plan`): for
pattern ``p`` and joint state ``e``::

    ln f(e, y_p | theta, tau) = free_pe + tau * seen_pe (+ 0 / -inf consistency)

with ``free`` the CPT terms of the hidden nodes and of missing observed parents and ``seen``
those of observed values. The ``c_p`` identical rows of a pattern are i.i.d. given ``theta``,
so their completions tally to one multinomial draw of ``c_p`` over the joint states. Family counts
split the same way: ``theta | s ~ Dir(lambda + N_free + tau N_seen)`` row by row.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from ..structure import Structure
from . import flat
from .enumeration import joint_plan, leaf_counts, leaf_log_joint
from .estep import Evidence, finite_log

__all__ = ["Completion", "sample_completion", "seen_indicators"]


class Completion(NamedTuple):
    """A sampled completion of every row, summarised by what the Gibbs kernel needs.

    Attributes:
        free_counts: per node, ``(q_i, r_i)`` counts from untempered factors (free values).
        seen_counts: per node, ``(q_i, r_i)`` counts from tempered factors (observed values).
        log_seen: ``ln p(y | s, theta)``, the tempered part of the complete-data log
            likelihood at the sampled ``s``.
    """

    free_counts: tuple[jax.Array, ...]
    seen_counts: tuple[jax.Array, ...]
    log_seen: jax.Array


def _parts(structure: Structure, log_tables, evidence: Evidence, seen: dict):
    """``(P, S)`` untempered and tempered log-joint terms (module docstring)."""
    plan = joint_plan(structure)
    n_patterns = evidence.one_hot.shape[0]
    free = jnp.zeros((n_patterns, plan.n_states))
    tempered = jnp.zeros((n_patterns, plan.n_states))
    for i in plan.enumerated:
        term = finite_log(log_tables[i][plan.config[i], plan.value[i]])[None, :]
        if i in seen:
            tempered = tempered + seen[i][:, None] * term
            free = free + (1.0 - seen[i])[:, None] * term
        else:
            free = free + term
    if plan.leaves:
        tempered = tempered + leaf_log_joint(structure, flat.flatten(log_tables), evidence)
    if evidence.log_consistency is not None:
        free = free + evidence.log_consistency
    return free, tempered


def seen_indicators(structure: Structure, patterns: jax.Array) -> dict[int, jax.Array]:
    """``{observed parent node: (P,) 1.0 where its value is observed}``."""
    plan = joint_plan(structure)
    return {i: (patterns[:, plan.column[i]] >= 0).astype(jnp.float64)
            for i in plan.enumerated if i in plan.column}


def _family_counts(structure: Structure, mass: jax.Array, evidence: Evidence, seen: dict):
    """Per node, the free and seen counts of the sampled state counts ``mass`` (P, S)."""
    plan = joint_plan(structure)
    leaves = flat.unflatten(leaf_counts(structure, mass, evidence), structure.table_shapes)
    state_mass = mass.sum(axis=0)
    free, tempered = [], []
    for i in range(structure.n_nodes):
        q_i, r_i = structure.n_configs(i), structure.cardinalities[i]
        zeros = jnp.zeros((q_i, r_i))
        if i in plan.value:
            entry = plan.config[i] * r_i + plan.value[i]

            def scatter(m, entry=entry, q_i=q_i, r_i=r_i):
                return jnp.zeros(q_i * r_i).at[entry].add(m).reshape(q_i, r_i)

            seen_mass = seen[i] @ mass if i in seen else jnp.zeros_like(state_mass)
            free.append(scatter(state_mass - seen_mass))
            tempered.append(scatter(seen_mass) if i in seen else zeros)
        else:
            free.append(zeros)
            tempered.append(leaves[i])
    return tuple(free), tuple(tempered)


def sample_completion(structure: Structure, log_tables, evidence: Evidence,
                      seen: dict[int, jax.Array], rows: jax.Array, tau: jax.Array,
                      key: jax.Array) -> Completion:
    """Draw the completions of all rows from ``f_tau(s | theta, y)`` and summarise them.

    Args:
        structure: the model (any kind; joint states are enumerated).
        log_tables: per node ``(q_i, r_i)`` log CPTs.
        evidence: the enumeration evidence of the patterns (:func:`.enumeration.prepare`).
        seen: :func:`seen_indicators` of the patterns.
        rows: ``(N,)`` the pattern of every row (rows of one pattern are i.i.d. given theta).
        tau: the temperature of the observed factors.
        key: PRNG key.

    Each row's joint state is one inverse-CDF draw (one uniform); the draws are tallied per
    pattern into ``(P, S)`` state counts, a multinomial draw per pattern.
    """
    free, tempered = _parts(structure, log_tables, evidence, seen)
    cdf = jnp.cumsum(jax.nn.softmax(free + tau * tempered, axis=1), axis=1)
    u = jax.random.uniform(key, rows.shape) * cdf[:, -1][rows]
    states = jnp.minimum((u[:, None] > cdf[rows]).sum(axis=1), cdf.shape[1] - 1)
    mass = jax.ops.segment_sum(jax.nn.one_hot(states, cdf.shape[1]), rows,
                               num_segments=cdf.shape[0])
    free_counts, seen_counts = _family_counts(structure, mass, evidence, seen)
    log_seen = jnp.sum(jnp.where(mass > 0, mass * tempered, 0.0))
    return Completion(free_counts, seen_counts, log_seen)
