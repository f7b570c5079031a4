"""Incremental EM (Whiley §2.3, App A.2; Neal & Hinton 1998).

With pattern compression an observation is a data pattern with its count, and the patterns
are visited in ``blocks`` blocks, cyclically (``blocks = n_patterns``: one pattern at a time,
the thesis's scheme). The expected counts of every block are kept. A visit recomputes the
block's counts at the current parameters ``s_b``, updates the totals by subtract-old/add-new,
``E N <- E N - s_b^old + s_b^new`` (eq. 2.5), and takes the (MAP) M step from them. An
iteration is one full pass over the blocks, and ``L`` is recorded once per pass (at its start).
At the start of every pass the totals are recomputed from the blocks' counts, which removes the
rounding drift of the updates (the thesis's periodic full recomputation).

Each visit increases the free energy ``F(q, theta)`` of Neal & Hinton, whose maximum is the
likelihood's, so IEM converges to the fixed points of EM; held entries (class padding) and
the MAP prior work as in EM.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ...inference import flat_e_step, prepare
from .problem import Problem
from .state import Kernel, State, converged, initial_state, record

__all__ = ["build"]


def build(problem: Problem, blocks: int, tol_total, max_iter: int) -> Kernel:
    """The IEM kernel visiting the patterns in ``blocks`` blocks (static)."""
    n_patterns = problem.patterns.shape[0]
    size = -(-n_patterns // blocks)
    pad = blocks * size - n_patterns  # padding patterns get weight 0
    patterns = jnp.concatenate([problem.patterns,
                                jnp.repeat(problem.patterns[:1], pad, axis=0)])
    weights = jnp.concatenate([problem.weights, jnp.zeros(pad)])

    def block_counts(x, b):
        rows = jax.lax.dynamic_slice_in_dim(patterns, b * size, size)
        w = jax.lax.dynamic_slice_in_dim(weights, b * size, size)
        evidence = prepare(problem.structure, rows, problem.complete)
        return flat_e_step(problem.structure, jnp.log(x), evidence, w,
                           vmapped=problem.vmapped)[1]

    def init(x0) -> State:
        stats = jax.lax.map(lambda b: block_counts(x0, b), jnp.arange(blocks))
        return initial_state(x0, problem.objective(x0), max_iter, stats=stats)

    def visit(b, carry):
        x, stats, totals = carry
        new = block_counts(x, b)
        totals = totals - stats[b] + new
        return problem.m_step(jnp.maximum(totals, 0.0)), stats.at[b].set(new), totals

    def step(state: State) -> State:
        x, stats, _ = jax.lax.fori_loop(0, blocks, visit,
                                        (state.x, state.stats, state.stats.sum(axis=0)))
        value = problem.objective(x)
        return record(state, state.value, converged(state.value, value, tol_total), x=x,
                      value=value, stats=stats)

    return Kernel(init, step)
