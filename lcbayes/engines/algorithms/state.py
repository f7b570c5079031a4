"""The loop state every chapter 2 algorithm shares, its kernels' interface and the loop.

An algorithm is a :class:`Kernel` (BlackJAX style): ``init(x0) -> State`` and
``step(state) -> state``, pure functions over the one :class:`State` NamedTuple, so ``jit``,
``vmap`` and ``lax.map`` compose with every algorithm alike. :func:`iterate` runs a kernel in
one ``lax.while_loop`` until it sets ``done`` or ``limit`` iterations pass. Fields an
algorithm does not use keep their initial values.

Example::

    kernel = helmbold.build(problem, "eg", eta=1.0, tol_total=1e-6)
    end = iterate(kernel, x0, limit=500, max_iter=500)
    end.x, end.history[: end.it]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

__all__ = ["GROW", "SHRINK", "STREAK", "EMRuns", "Kernel", "State", "converged",
           "initial_state", "iterate", "learning_step", "record"]


class EMRuns(NamedTuple):
    """The outcome of every restart of a fit (:func:`lcbayes.engines.em.run_em`)."""

    tables: tuple[jax.Array, ...]
    history: jax.Array      # (R, max_iter) objective per iteration, NaN after the last
    n_iter: jax.Array       # (R,)
    converged: jax.Array    # (R,)
    loglik: jax.Array       # (R,) at the final tables
    objective: jax.Array    # (R,) at the final tables


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
        mapped: ``M(x)``, the EM map at ``x`` (GCG; CG's fallback).
        scale: ``d^T g`` of the last direction (``beta`` option (ii)).
        count: steps since the direction was last reset to the gradient.
        switched: conjugate gradients: past the switch from EM (Jamshidian & Jennrich 2.10).
        level: DAEM: the index of the current ``beta``.
        stats: IEM: ``(blocks, n)`` every block's expected counts.
        evaluations: objective evaluations in line searches, all iterations together.
        rate: the learning rate of the gradient methods (:func:`learning_step`).
        streak: accepted steps since the last refused one at an adaptive rate
            (:func:`learning_step`; none refused yet: more than :data:`STREAK`).
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
    count: jax.Array
    switched: jax.Array
    level: jax.Array
    stats: jax.Array
    evaluations: jax.Array
    rate: jax.Array
    streak: jax.Array


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
                evaluations=jnp.array(0), rate=jnp.array(1.0),
                streak=jnp.array(STREAK + 1))
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


#: The adaptive learning rate's factors after an accepted and after a rejected step.
GROW, SHRINK = 1.2, 0.5

#: An adaptive method stops on a small change only within this many accepted steps of a
#: refused one, i.e. with the rate near the largest that still gains: while every step is
#: accepted the rate grows, and a small change may only show that the rate is small.
STREAK = 5


def learning_step(state: State, value, tol_total, adaptive: bool, moved: dict,
                  kept: dict | None = None) -> State:
    """One iteration of a gradient method (Helmbold's updates, ACG) that proposed ``moved``
    (the new ``x`` and what goes with it) where the objective is ``value``.

    With a fixed learning rate (the thesis's; ``adaptive`` false) the step is taken. With an
    adaptive one ("bold driver", Battiti 1989; ours: Whiley tuned ``eta`` by hand for every run,
    §2.8) a step that lowers the objective is refused: ``x`` stays, the fields in ``kept`` take
    their given values (e.g. a conjugate direction reset to the gradient) and ``rate`` shrinks
    by :data:`SHRINK`; an accepted step grows it by :data:`GROW`. The method is then monotone,
    and it stops only when the tolerance is met within :data:`STREAK` accepted steps of a
    refused one."""
    if not adaptive:
        return record(state, state.value, converged(state.value, value, tol_total),
                      value=value, **moved)
    accept = value >= state.value  # false for NaN
    kept = kept or {}
    fields = {name: jnp.where(accept, new, kept.get(name, getattr(state, name)))
              for name, new in moved.items()}
    streak = jnp.where(accept, jnp.minimum(state.streak + 1, STREAK + 1), 0)
    return record(state, state.value,
                  accept & (streak <= STREAK) & converged(state.value, value, tol_total),
                  value=jnp.where(accept, value, state.value),
                  rate=state.rate * jnp.where(accept, GROW, SHRINK), streak=streak, **fields)


def iterate(kernel: Kernel, x0: jax.Array, limit) -> State:
    """``kernel`` from ``x0`` in one ``lax.while_loop``, until ``done`` or ``limit`` (at most
    the history's length) iterations."""
    return jax.lax.while_loop(lambda s: (s.it < limit) & ~s.done, kernel.step, kernel.init(x0))
