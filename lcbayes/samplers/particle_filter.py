"""The particle filter over the rows behind :func:`lcbayes.smc` for HLC trees and DAGs, for any
model whose hidden variables of one row can be enumerated (:class:`RowModel`).

A particle filter for the hidden states of the rows with the parameters integrated out (Chen &
Liu 2000; Fearnhead 2004, "Particle filters for mixture models with an unknown number of
components"), with the resample-move step of Gilks & Berzuini (2001) / Chopin (2002, IBIS).
Rows are added one at a time in a random order (drawn from the seed; the estimator is unbiased
for any order). Adding row ``i``:

1. **Predict.** Every particle's ``p(y_i, z_i = s | z_<i, y_<i)`` for every hidden state ``s``
   (the model's ``log_predictive``, parameters integrated out), and the incremental weight
   ``w = sum_s p(y_i, s | ...) = p(y_i | z_<i, y_<i)``.
2. **Estimate.** ``ln Z_hat += ln sum_m W_m w_m`` with the normalised weights ``W``; the product
   is unbiased for ``Z = p(y | m)`` (Del Moral, Doucet & Jasra 2006, eq. 14).
3. **Allocate** the row to state ``s`` with probability ``p(y_i, s | ...) / w`` (the optimal
   proposal).
4. **Resample-move** when the effective sample size ``1 / sum W^2`` falls below
   ``ess_target M`` (and after the last row): systematic resampling, then ``sweeps`` exact
   data-augmentation Gibbs sweeps at the posterior of the rows added so far (the parameters
   are auxiliary, so the move leaves ``p(z | y_1..n)`` invariant).

**Tempering within a row.** Where one row's weights ``w_m`` are so unequal that adding it
whole would leave an effective sample size below :data:`TEMPER_ESS` ``M`` (many items with
many levels: early rows can leave one particle), the row's predictive enters in powers
``0 < a_1 < ... < 1`` (Del Moral, Doucet & Jasra 2006, §3.3.2; Zhou, Johansen & Aston 2016):
each step ``a -> a'`` is chosen by bisection so that the reweighted sample keeps
:data:`TEMPER_ESS` ``M``, multiplies the weights by ``w_m^(a' - a)`` (and ``Z_hat`` by their
weighted mean), then resamples and moves the particles at the intermediate target
``p(z_<i | y_<i) w(z_<i)^a'``: a Gibbs sweep at ``p(z_<i | y_<i)`` (the allocation chain of a
two-block Gibbs sampler is reversible) proposed and accepted with probability ``min(1,
(w' / w)^a')`` (Metropolis-Hastings). At ``a = 1`` the row is allocated as in step 3. Every
intermediate target is a proper distribution, so the product of the weights' means stays
unbiased.

Steps 1-3 are one ``lax.scan`` over the rows, the particles batched in every array.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.special import logsumexp

from .particle_weights import ess, largest_step, systematic

__all__ = ["BISECTIONS", "MAX_TEMPER_STEPS", "TEMPER_ESS", "RowModel",
           "filter_rows", "inverse_cdf"]

#: A row whose full weight would leave an effective sample size below this fraction of the
#: particles is added in tempered steps, each down to this fraction (module docstring).
TEMPER_ESS = 0.5
#: Most tempered steps for one row (the last one takes what is left of the row).
MAX_TEMPER_STEPS = 64
#: Bisection halvings that choose a tempered step.
BISECTIONS = 40


class _Loop(NamedTuple):
    particles: object       # the particles' states (M, ...)
    log_w: jax.Array        # (M,) normalised log weights
    log_z: jax.Array
    moves: jax.Array        # resample-move steps so far
    key: jax.Array
    history: jax.Array      # (max_moves, 2): rows added before each resampling, their ESS


def inverse_cdf(key, logits: jax.Array) -> jax.Array:
    """``(M,)`` one state per row of ``logits (M, S)`` drawn from its softmax, by inversion of
    one single-precision uniform per row (its 2^-23 resolution is far below any probability
    that matters, and it costs a sixth of ``jax.random.categorical``'s Gumbel draws)."""
    cdf = jnp.cumsum(jax.nn.softmax(logits, axis=-1), axis=-1)
    u = jax.random.uniform(key, logits.shape[:-1], dtype=jnp.float32) * cdf[..., -1]
    return jnp.minimum(jnp.sum(u[..., None] > cdf, axis=-1), logits.shape[-1] - 1)


class RowModel(NamedTuple):
    """What the particle filter needs of a model, on particle states ``(M, ...)``:

    Attributes:
        start: the ``M`` particles before any row (no rows allocated).
        log_predictive: ``(state, i) -> (M, S)`` ``ln p(y_i, z_i = s | z_<i, y_<i)`` of the
            ``i``-th row of the order for every state ``s`` of its hidden variables, the
            parameters integrated out (``-inf`` for impossible states).
        add: ``(state, i, z (M,)) -> state`` with row ``i`` allocated to ``z``.
        sweep: ``(n, state, key) -> state`` after one exact data-augmentation Gibbs sweep at the
            posterior of the first ``n`` rows (parameters from their Dirichlet posteriors, then
            every row's hidden state given them).
    """

    start: object
    log_predictive: Callable
    add: Callable
    sweep: Callable


def filter_rows(key, model: RowModel, total: int, ess_target, temper_ess, *, particles: int,
                sweeps: int, max_moves: int) -> _Loop:
    """The particle filter of the module docstring over ``total`` rows (traced inside a
    caller's ``jax.jit``): the final loop state, whose ``log_z`` is ``ln Z_hat``."""
    start = _Loop(model.start, jnp.full(particles, -jnp.log(particles)), jnp.asarray(0.0),
                  jnp.asarray(0), key, jnp.zeros((max_moves, 2)))

    def resampled(loop: _Loop, n, carried):
        """Systematic resampling of the particles (and of ``carried``, per particle), the
        step recorded; returns the loop with equal weights, the resampled pair and a key
        for the move."""
        key, k_resample, k_move = jax.random.split(loop.key, 3)
        chosen = systematic(k_resample, loop.log_w)
        slot = jnp.minimum(loop.moves, max_moves - 1)
        record = jnp.stack([n * 1.0, ess(loop.log_w)])   # rows added, ESS before resampling
        loop = loop._replace(log_w=jnp.full(particles, -jnp.log(particles)),
                             moves=loop.moves + 1, key=key,
                             history=loop.history.at[slot].set(record))
        return loop, jax.tree.map(lambda a: a[chosen], (loop.particles, carried)), k_move

    def resample_move(loop: _Loop, n) -> _Loop:
        can_move = loop.moves < max_moves
        loop, (moved, _), k_move = resampled(loop, n, None)
        keys = jax.random.split(k_move, sweeps)
        for s in range(sweeps):   # a few sweeps: unrolled
            moved = jax.lax.cond(can_move, model.sweep, lambda n, p, k: p, n, moved, keys[s])
        return loop._replace(particles=moved)

    def row_weight(state, i) -> jax.Array:
        return logsumexp(model.log_predictive(state, i), axis=1)

    def tempered_move(loop: _Loop, log_inc, power, i) -> tuple[_Loop, jax.Array]:
        """Resample, then ``sweeps`` Metropolis-Hastings steps with Gibbs proposals at
        ``p(z_<i | y_<i) w^power`` (module docstring)."""
        can_move = loop.moves < max_moves
        loop, (moved, log_inc), k_move = resampled(loop, i, log_inc)

        def metropolis(state, key):
            current, log_inc = state
            k_sweep, k_accept = jax.random.split(key)
            proposed = model.sweep(i, current, k_sweep)
            proposed_inc = row_weight(proposed, i)
            accept = (jnp.log(jax.random.uniform(k_accept, log_inc.shape))
                      < power * (proposed_inc - log_inc))

            def pick(new, old):
                return jnp.where(accept.reshape(-1, *([1] * (new.ndim - 1))), new, old)

            return (jax.tree.map(pick, proposed, current),
                    jnp.where(accept, proposed_inc, log_inc)), None

        moved, log_inc = jax.lax.cond(
            can_move, lambda s: jax.lax.scan(metropolis, s, jax.random.split(k_move, sweeps))[0],
            lambda s: s, (moved, log_inc))
        return loop._replace(particles=moved), log_inc

    def temper_row(loop: _Loop, log_pred, i) -> tuple[_Loop, jax.Array]:
        """Add row ``i``'s predictive in tempered steps up to power one (module docstring);
        returns the loop and row ``i``'s predictive at the moved particles."""
        log_inc = logsumexp(log_pred, axis=1)
        def unfinished(state):
            return state[1] < 1.0

        def step(state):
            loop, power, log_inc, count = state
            last = count == MAX_TEMPER_STEPS - 1
            rest = 1.0 - power
            size = jnp.where(last, rest, largest_step(loop.log_w, log_inc, rest,
                                                     temper_ess * particles, BISECTIONS))
            power = jnp.where(size >= rest, 1.0, power + size)
            log_w = loop.log_w + size * log_inc
            loop = loop._replace(log_w=log_w - logsumexp(log_w),
                                 log_z=loop.log_z + logsumexp(log_w))
            loop, log_inc = jax.lax.cond(power < 1.0, tempered_move,
                                         lambda loop, log_inc, *_: (loop, log_inc),
                                         loop, log_inc, power, i)
            return loop, power, log_inc, count + 1

        start = (loop, jnp.asarray(0.0), log_inc, jnp.asarray(0))
        loop = jax.lax.while_loop(unfinished, step, start)[0]
        return loop, model.log_predictive(loop.particles, i)

    def whole_row(loop: _Loop, log_pred, i) -> tuple[_Loop, jax.Array]:
        log_w = loop.log_w + logsumexp(log_pred, axis=1)
        return (loop._replace(log_w=log_w - logsumexp(log_w),
                              log_z=loop.log_z + logsumexp(log_w)), log_pred)

    def add_row(loop: _Loop, i) -> tuple[_Loop, None]:
        log_pred = model.log_predictive(loop.particles, i)
        crash = ess(loop.log_w + logsumexp(log_pred, axis=1)) < temper_ess * particles
        loop, log_pred = jax.lax.cond(crash, temper_row, whole_row, loop, log_pred, i)
        key, k_z = jax.random.split(loop.key)
        z = inverse_cdf(k_z, log_pred)
        loop = loop._replace(particles=model.add(loop.particles, i, z), key=key)
        low = ess(loop.log_w) < ess_target * particles
        return jax.lax.cond(low | (i == total - 1), resample_move, lambda loop, n: loop,
                            loop, i + 1), None

    return jax.lax.scan(add_row, start, jnp.arange(total))[0]
