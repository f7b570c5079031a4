"""Exact inference on hierarchical latent class trees by sum-product (upward/downward passes).

The hidden nodes form a rooted tree and every observed node is a leaf with a hidden parent. In
log space, with ``T_v[x_pa, x_v] = ln theta_v`` (the contract of the Geiger/Stat946 digest, B.4):

* upward: ``lambda_v(x_v) = sum_{leaf c} ln theta_c[x_v, y_c] + sum_{hidden c} mu_{c->v}(x_v)``
  (a missing leaf contributes 0), ``mu_{v->pa}(x_pa) = logsumexp_{x_v} [T_v + lambda_v]`` and
  ``ln p(y) = logsumexp_{x_root} [ln pi + lambda_root]``;
* downward: ``tau_root = ln pi`` and, for a hidden child ``c`` of ``v``,
  ``tau_c(x_c) = logsumexp_{x_v} [tau_v + lambda_v^{-c} + T_c]`` where ``lambda_v^{-c}``
  leaves out ``c``'s message (summed afresh, never by subtracting ``-inf``);
* node posteriors ``p(x_v | y) = exp(tau_v + lambda_v - ln p(y))`` and edge posteriors
  ``p(x_v, x_c | y) = exp(tau_v + lambda_v^{-c} + T_c + lambda_c - ln p(y))``.

The posterior of the hidden nodes is Markov on the tree, so its entropy is
``H(root) + sum_edges [H(x_v, x_c) - H(x_v)]``. Work is linear in the number of nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp, xlogy

from ..structure import Structure
from .coded import CodedOneHot
from .estep import (
    EStep,
    Evidence,
    finite_log,
    one_hot_columns,
    restore_minus_inf,
    safe_normaliser,
)

__all__ = ["e_step", "log_marginal", "prepare"]


@dataclass(frozen=True)
class _Plan:
    root: int
    order: tuple[int, ...]                        # hidden nodes, parents first
    hidden_children: dict[int, tuple[int, ...]]
    leaf_children: dict[int, tuple[int, ...]]
    blocks: dict[int, tuple[int, int]]            # v -> its leaves' columns in the evidence
    columns: tuple[int, ...]                      # pattern column of each leaf, grouped by parent
    leaf_cards: tuple[int, ...]


@lru_cache(maxsize=256)
def _plan(structure: Structure) -> _Plan:
    column = {i: k for k, i in enumerate(structure.observed_nodes)}
    order = tuple(i for i in structure.topological_order if structure.hidden[i])
    hidden_children = {v: tuple(c for c in structure.children[v] if structure.hidden[c])
                       for v in order}
    leaf_children = {v: tuple(c for c in structure.children[v] if not structure.hidden[c])
                     for v in order}
    blocks, columns, cards, start = {}, [], [], 0
    for v in order:
        width = sum(structure.cardinalities[c] for c in leaf_children[v])
        blocks[v] = (start, start + width)
        start += width
        columns += [column[c] for c in leaf_children[v]]
        cards += [structure.cardinalities[c] for c in leaf_children[v]]
    return _Plan(structure.root, order, hidden_children, leaf_children, blocks,
                 tuple(columns), tuple(cards))


def prepare(structure: Structure, patterns: jax.Array) -> Evidence:
    """One-hot leaf evidence with each hidden node's leaves in one block of columns."""
    plan = _plan(structure)
    return Evidence(one_hot_columns(patterns, plan.columns, plan.leaf_cards), None)


def _upward(structure: Structure, log_tables, evidence: Evidence, virtual_evidence=None):
    """Leaf evidence ``own``, upward messages ``up`` and ``lambda`` per hidden node, and the
    per-pattern log marginal."""
    plan = _plan(structure)
    assert not isinstance(evidence.one_hot, CodedOneHot)  # coded: the enumeration route's
    n = evidence.one_hot.shape[0]
    extra = ({} if virtual_evidence is None
             else dict(zip(structure.hidden_nodes, virtual_evidence, strict=True)))
    own, lam = {}, {}
    up: dict[int, jax.Array] = {}
    for v in reversed(plan.order):
        acc = jnp.zeros((n, structure.cardinalities[v]))
        if plan.leaf_children[v]:
            start, stop = plan.blocks[v]
            tables = jnp.concatenate([finite_log(log_tables[c]) for c in plan.leaf_children[v]],
                                     axis=1)  # (r_v, R_v)
            acc = restore_minus_inf(evidence.one_hot[:, start:stop] @ tables.T)
        if v in extra:
            acc = acc + extra[v]
        own[v] = acc
        lam[v] = acc + sum((up[c] for c in plan.hidden_children[v]), jnp.zeros_like(acc))
        if v != plan.root:
            up[v] = logsumexp(log_tables[v][None, :, :] + lam[v][:, None, :], axis=2)
    log_marg = logsumexp(log_tables[plan.root][0][None, :] + lam[plan.root], axis=1)
    return own, up, lam, log_marg


def log_marginal(structure: Structure, log_tables, evidence: Evidence) -> jax.Array:
    """``(P,)`` log probability (or log normaliser) of each pattern."""
    return _upward(structure, log_tables, evidence)[3]


def _entropy(p: jax.Array, axes: tuple[int, ...]) -> jax.Array:
    return -xlogy(p, p).sum(axis=axes)


def e_step(structure: Structure, log_tables, evidence: Evidence, weights: jax.Array,
           virtual_evidence=None) -> EStep:
    """Log marginals, expected counts, hidden marginals and posterior entropies."""
    plan = _plan(structure)
    assert not isinstance(evidence.one_hot, CodedOneHot)  # coded: the enumeration route's
    own, up, lam, log_marg = _upward(structure, log_tables, evidence, virtual_evidence)
    norm = safe_normaliser(log_marg)
    tau = {plan.root: jnp.broadcast_to(log_tables[plan.root][0], lam[plan.root].shape)}
    counts: dict[int, jax.Array] = {}
    entropy = jnp.zeros(norm.shape[0])
    marginals = {}
    for v in plan.order:
        marginals[v] = jnp.exp(tau[v] + lam[v] - norm[:, None])
        for c in plan.hidden_children[v]:
            others = (up[o] for o in plan.hidden_children[v] if o != c)
            outside = tau[v] + own[v] + sum(others, jnp.zeros_like(own[v]))
            joint = outside[:, :, None] + log_tables[c][None, :, :]
            tau[c] = logsumexp(joint, axis=1)
            edge = jnp.exp(joint + lam[c][:, None, :] - norm[:, None, None])
            counts[c] = jnp.einsum("p,pab->ab", weights, edge)
            entropy = entropy + _entropy(edge, (1, 2)) - _entropy(marginals[v], (1,))
        if plan.leaf_children[v]:
            start, stop = plan.blocks[v]
            block = (weights[:, None] * marginals[v]).T @ evidence.one_hot[:, start:stop]
            splits = np.cumsum([structure.cardinalities[c] for c in plan.leaf_children[v]])
            for c, part in zip(plan.leaf_children[v], jnp.split(block, splits[:-1], axis=1),
                               strict=True):
                counts[c] = part
    counts[plan.root] = (weights @ marginals[plan.root])[None, :]
    entropy = entropy + _entropy(marginals[plan.root], (1,))
    return EStep(
        log_marg,
        tuple(counts[i] for i in range(structure.n_nodes)),
        tuple(marginals[h] for h in structure.hidden_nodes),
        entropy,
        entropy,  # no observed parents in a tree: the completion is the hidden nodes
    )
