"""SQUAREM: squared extrapolation for monotone fixed-point iterations (EM and VBEM).

Varadhan & Roland (2008), scheme S3. With three successive iterates ``u0 -> u1 -> u2`` of the
plain map (in coordinates where extrapolation is safe: log probabilities for EM, log Dirichlet
parameters for VBEM), ``r = u1 - u0``, ``v = u2 - 2 u1 + u0`` and the step
``a = -|r| / |v|`` clamped to ``[-max_step, -1]``, the extrapolated point is
``u' = u0 - 2 a r + a^2 v`` (``a = -1`` gives back ``u2``). One plain step is taken from ``u'``;
the cycle ends there when the objective at ``u'`` is at least that at ``u1``, else at ``u2``, so
the objective never decreases (the safeguard). Convergence is judged on the plain step
``u0 -> u1``, so a tolerance means what it means for the plain iteration, and both reach the
same fixed points.

:func:`iterate` runs either iteration in one ``lax.while_loop`` whose body holds a single
evaluation of the map: a SQUAREM cycle is three turns of the loop (phases 0, 1, 2), which keeps
the compiled program as small as the plain iteration's.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

from .inference.flat import flatten, unflatten

__all__ = ["MAX_STEP", "entry_weights", "extrapolate", "flatten", "iterate", "map_restarts",
           "unflatten"]

#: Largest step length ``|a|``; the monotone safeguard rejects bad extrapolations.
MAX_STEP = 64.0


def entry_weights(row_weights, shapes) -> jax.Array | None:
    """Per-row weights (one ``(q_i,)`` array per table, e.g. ``1 / group size`` for tied rows)
    spread over the flat entries; ``None`` stays ``None``."""
    if row_weights is None:
        return None
    return jnp.concatenate([jnp.repeat(w, r) for w, (_, r) in zip(row_weights, shapes,
                                                                  strict=True)])


def extrapolate(u0: jax.Array, u1: jax.Array, u2: jax.Array, max_step: float = MAX_STEP,
                weights: jax.Array | None = None) -> jax.Array:
    """``u0 - 2 a r + a^2 v`` for three successive iterates (module docstring). ``weights``
    weigh the entries in the norms of ``r`` and ``v``: with ``1 / group size`` on tied copies,
    a row-tied host takes exactly the steps of the structure it stands for."""
    r, v = u1 - u0, u2 - 2.0 * u1 + u0
    w = jnp.ones_like(r) if weights is None else weights
    r_norm, v_norm = jnp.sqrt(r @ (w * r)), jnp.sqrt(v @ (w * v))
    step = jnp.where(v_norm > 0, -r_norm / jnp.where(v_norm > 0, v_norm, 1.0), -1.0)
    step = jnp.clip(step, -max_step, -1.0)
    return u0 - 2.0 * step * r + step * step * v


def iterate(step: Callable, x0: jax.Array, to_free: Callable, from_free: Callable,
            tol_total, limit, max_iter: int, accelerate: bool,
            weights: jax.Array | None = None):
    """Iterate ``step`` from ``x0`` until the objective changes by less than ``tol_total`` on a
    plain step, or ``limit`` (<= ``max_iter``) iterations.

    Args:
        step: ``x -> (objective at x, plain map of x)`` on flat vectors; the objective never
            decreases along the plain map.
        to_free, from_free: the coordinates in which to extrapolate and back.
        accelerate: SQUAREM cycles (an iteration is a cycle) instead of plain steps.
        weights: entry weights of the step-length norms (:func:`entry_weights`).

    Returns:
        ``(x, history, n_iter, converged)``: the last point, the objective at the start of every
        iteration (``(max_iter,)``, NaN after the last), the iterations and whether ``tol``
        was met.
    """
    def cond(state):
        it, phase, done = state[-3:]
        return ((it < limit) | (phase != 0)) & ~done

    def body(state):
        x, x0_, fallback, v0, v1, history, previous, it, phase, _ = state
        value, mapped = step(x)
        if not accelerate:
            done = jnp.abs(value - previous) < tol_total
            return (mapped, x0_, fallback, v0, v1, history.at[it].set(value), value, it + 1,
                    phase, done)
        first, second = phase == 0, phase == 1
        slot = jnp.minimum(it, max_iter - 1)  # it == max_iter only after the last phase 0
        # phase 0: x = u0, mapped = u1; phase 1: x = u1, mapped = u2 (convergence is judged
        # here); phase 2: x = u', mapped = M(u'), kept if u' beats u1.
        done = second & (jnp.abs(value - v0) < tol_total)
        jump = from_free(extrapolate(to_free(x0_), to_free(x), to_free(mapped), MAX_STEP,
                                     weights))
        better = jnp.isfinite(value) & (value >= v1)
        nxt = jnp.where(first | (second & done) | (~second & better), mapped,
                        jnp.where(second, jump, fallback))
        return (nxt, jnp.where(first, x, x0_), jnp.where(second, mapped, fallback),
                jnp.where(first, value, v0), jnp.where(second, value, v1),
                history.at[slot].set(jnp.where(first, value, history[slot])), previous,
                it + first, (phase + 1) % 3, done)

    nan = jnp.array(jnp.nan)
    start = (x0, x0, x0, nan, nan, jnp.full(max_iter, jnp.nan), jnp.array(-jnp.inf),
             jnp.array(0), jnp.array(0), jnp.array(False))
    x, *_, history, _, n_iter, _, done = jax.lax.while_loop(cond, body, start)
    return x, history, n_iter, done


def map_restarts(run: Callable, items, batch_size: int):
    """``run`` over the leading axis of ``items``, ``batch_size`` at a time side by side
    (``vmap``), the batches one after another. A batch of one is not vmapped at all, so that
    the E step's ``lax.cond`` stays a branch (under ``vmap`` it evaluates both sides)."""
    return jax.lax.map(run, items, batch_size=None if batch_size == 1 else batch_size)
