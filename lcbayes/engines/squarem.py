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
from typing import NamedTuple

import jax
import jax.numpy as jnp

__all__ = ["MAX_STEP", "IterationState", "extrapolate", "iterate", "map_restarts"]

#: Largest step length ``|a|``; the monotone safeguard rejects bad extrapolations.
MAX_STEP = 64.0


class IterationState(NamedTuple):
    """The loop state of :func:`iterate`.

    Attributes:
        x: the point the next map evaluation is at.
        u0: the cycle's first iterate (SQUAREM).
        fallback: ``u2``, kept when the extrapolated point loses (SQUAREM).
        v0, v1: the objective at ``u0`` and at ``u1`` (SQUAREM).
        history: ``(max_iter,)`` the objective at the start of every iteration, NaN after.
        previous: the last objective (plain iteration).
        it: iterations done.
        phase: 0, 1 or 2 within a SQUAREM cycle (always 0 for the plain iteration).
        done: whether the tolerance was met.
    """

    x: jax.Array
    u0: jax.Array
    fallback: jax.Array
    v0: jax.Array
    v1: jax.Array
    history: jax.Array
    previous: jax.Array
    it: jax.Array
    phase: jax.Array
    done: jax.Array


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
        weights: entry weights of the step-length norms (e.g.
            :func:`lcbayes.inference.tying.entry_weights`).

    Returns:
        ``(x, history, n_iter, converged)``: the last point, the objective at the start of every
        iteration (``(max_iter,)``, NaN after the last), the iterations and whether ``tol``
        was met.
    """
    def cond(state: IterationState):
        return ((state.it < limit) | (state.phase != 0)) & ~state.done

    def body(state: IterationState) -> IterationState:
        value, mapped = step(state.x)
        if not accelerate:
            done = jnp.abs(value - state.previous) < tol_total
            return state._replace(x=mapped, history=state.history.at[state.it].set(value),
                                  previous=value, it=state.it + 1, done=done)
        first, second = state.phase == 0, state.phase == 1
        slot = jnp.minimum(state.it, max_iter - 1)  # it == max_iter only after the last phase 0
        # phase 0: x = u0, mapped = u1; phase 1: x = u1, mapped = u2 (convergence is judged
        # here); phase 2: x = u', mapped = M(u'), kept if u' beats u1.
        done = second & (jnp.abs(value - state.v0) < tol_total)
        jump = from_free(extrapolate(to_free(state.u0), to_free(state.x), to_free(mapped),
                                     MAX_STEP, weights))
        better = jnp.isfinite(value) & (value >= state.v1)
        nxt = jnp.where(first | (second & done) | (~second & better), mapped,
                        jnp.where(second, jump, state.fallback))
        return IterationState(
            x=nxt, u0=jnp.where(first, state.x, state.u0),
            fallback=jnp.where(second, mapped, state.fallback),
            v0=jnp.where(first, value, state.v0), v1=jnp.where(second, value, state.v1),
            history=state.history.at[slot].set(jnp.where(first, value, state.history[slot])),
            previous=state.previous, it=state.it + first, phase=(state.phase + 1) % 3,
            done=done)

    nan = jnp.array(jnp.nan)
    start = IterationState(x=x0, u0=x0, fallback=x0, v0=nan, v1=nan,
                           history=jnp.full(max_iter, jnp.nan), previous=jnp.array(-jnp.inf),
                           it=jnp.array(0), phase=jnp.array(0), done=jnp.array(False))
    end = jax.lax.while_loop(cond, body, start)
    return end.x, end.history, end.it, end.done


def map_restarts(run: Callable, items, batch_size: int):
    """``run`` over the leading axis of ``items``, ``batch_size`` at a time side by side
    (``vmap``), the batches one after another. A batch of one is not vmapped at all, so that
    the E step's ``lax.cond`` stays a branch (under ``vmap`` it evaluates both sides)."""
    return jax.lax.map(run, items, batch_size=None if batch_size == 1 else batch_size)
