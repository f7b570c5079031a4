"""The loop state every chapter 2 algorithm shares, its kernels' interface and the loop.

An algorithm is a :class:`Kernel` (BlackJAX style): ``init(x0) -> State`` and
``step(state) -> state``, pure functions over the one :class:`State` NamedTuple, so ``jit``,
``vmap`` and ``lax.map`` compose with every algorithm alike. :func:`iterate` runs a kernel in
one ``lax.while_loop`` until it sets ``done`` or ``limit`` iterations pass. Fields an
algorithm does not use keep their initial values.

Example::

    kernel = helmbold.build(problem, "eg", eta=1.0, tol_total=1e-6, max_iter=500)
    end = iterate(kernel, x0, limit=500)
    end.x, end.history[: end.it]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

__all__ = ["GROW", "SHRINK", "Kernel", "State", "converged", "initial_state",
           "iterate", "learning_step", "record"]


class State(NamedTuple):
    """The loop state of every algorithm.

    Attributes:
        x: the current flat tables (probabilities).
        value: the objective at ``x`` (DAEM, IEM: the value compared with the next one).
        history: ``(max_iter,)`` the objective at the start of every iteration, NaN after.
        it: iterations done.
        done: whether the tolerance was met.
        gradient: the (free, possibly generalised) gradient at ``x`` (gradient methods).
        direction: the search direction at ``x`` (conjugate gradients, ACG).
        previous: the gradient at the previous point (GCG's ``beta``).
        mapped: ``M(x)``, the EM map at ``x`` (GCG; CG's fallback; the gradient methods'
            fallback at an adaptive rate, :func:`learning_step`).
        scale: ``d^T g`` of the last direction (``beta`` option (ii)).
        count: steps since the direction was last reset to the gradient.
        switched: conjugate gradients: past the switch from EM (Jamshidian & Jennrich 2.10).
        level: DAEM: the index of the current ``beta``.
        stats: IEM: ``(blocks, n)`` every block's expected counts.
        evaluations: objective evaluations in line searches, all iterations together.
        rate: the learning rate of the gradient methods (:func:`learning_step`).
    """

    x: jax.Array
    value: jax.Array
    history: jax.Array
    it: jax.Array
    done: jax.Array
    gradient: jax.Array
    direction: jax.Array
    previous: jax.Array
    mapped: jax.Array
    scale: jax.Array
    count: jax.Array  # type: ignore[assignment]  # a field named like the method tuple.count
    switched: jax.Array
    level: jax.Array
    stats: jax.Array
    evaluations: jax.Array
    rate: jax.Array


class Kernel(NamedTuple):
    """An algorithm: ``init(x0) -> State`` and ``step(State) -> State``."""

    init: Callable[[jax.Array], State]
    step: Callable[[State], State]


def initial_state(x0: jax.Array, value, max_iter: int, **fields) -> State:
    """A :class:`State` at ``x0`` (objective ``value``), other fields zero unless given."""
    zeros = jnp.zeros_like(x0)
    base = dict(x=x0, value=jnp.asarray(value, dtype=jnp.float64),
                history=jnp.full(max_iter, jnp.nan), it=jnp.array(0), done=jnp.array(False),
                gradient=zeros, direction=zeros, previous=zeros, mapped=x0,
                scale=jnp.array(1.0), count=jnp.array(0), switched=jnp.array(False),
                level=jnp.array(0), stats=jnp.zeros((0, x0.shape[0])),
                evaluations=jnp.array(0), rate=jnp.array(1.0))
    base.update(fields)
    return State(**base)


def converged(old, new, tol_total):
    """``|new - old| < tol_total``: the stopping rule of every algorithm (the objective's
    change over one iteration, ``tol`` per observed row)."""
    return jnp.abs(new - old) < tol_total


def record(state: State, recorded, done, **fields) -> State:
    """``state`` one iteration on: ``recorded`` (the objective at the iteration's start) in
    the history, ``done`` set, ``fields`` replaced."""
    return state._replace(history=state.history.at[state.it].set(recorded), it=state.it + 1,
                          done=done, **fields)


#: The adaptive learning rate's factors after a step that gained and after one that lost.
GROW, SHRINK = 1.2, 0.5


def learning_step(state: State, value, tol_total, moved: dict, em=None) -> State:
    """One iteration of a gradient method (Helmbold's updates, ACG) that proposed ``moved``
    (the new ``x`` and what goes with it: ``gradient``, ``mapped``, ...) where the objective
    is ``value``.

    With a fixed learning rate (the thesis's; ``em`` ``None``) the step is taken. At an
    adaptive one (ours: Whiley tuned ``eta`` by hand for every run, §2.8) ``em = (value,
    fields)`` is the EM step ``M(x)`` from the same point with the same fields, and the better
    of the two is taken (a tie or a NaN proposal: EM). Every iteration then gains at least what
    EM's from the same point would (at one more gradient evaluation, the E step's cost), so
    the method is monotone; it stops when the objective changes by less than ``tol_total``,
    so only where the EM step would not gain that either (EM's own rule). The
    rate is a "bold driver" (Battiti 1989): times :data:`GROW` after a proposal that gained,
    :data:`SHRINK` after one that lost, whichever step was taken."""
    if em is None:
        return record(state, state.value, converged(state.value, value, tol_total),
                      value=value, **moved)
    em_value, em_fields = em
    better = value > em_value  # false for NaN
    fields = {name: jnp.where(better, new, em_fields[name]) for name, new in moved.items()}
    taken = jnp.where(better, value, em_value)
    return record(state, state.value, converged(state.value, taken, tol_total), value=taken,
                  rate=state.rate * jnp.where(value >= state.value, GROW, SHRINK), **fields)


def iterate(kernel: Kernel, x0: jax.Array, limit) -> State:
    """``kernel`` from ``x0`` in one ``lax.while_loop``, until ``done`` or ``limit`` (at most
    the history's length) iterations."""
    return jax.lax.while_loop(lambda s: (s.it < limit) & ~s.done, kernel.step, kernel.init(x0))
