"""Helmbold, Schapire, Singer & Warmuth's updates, per multinomial row (Whiley §2.6, App A.3).

Each step maximises ``eta [L + grad L^T (theta - theta^t)] - d(theta, theta^t)`` subject to
every row summing to one. On the *per-observation* scale ``(1/N) L`` (Helmbold et al.'s; the
digest's note on §2.6), with ``g_k = (1/N) dL/dtheta_ijk`` at ``theta^t`` and the row's
entries ``k = 1..r_i``:

* ``"gp"``, Euclidean distance (eq. 2.17): ``theta_k + eta (g_k - (1/r_i) sum_l g_l)``;
* ``"eg"``, relative entropy (eq. 2.18, the typo ``theta_ij1`` fixed):
  ``theta_k exp(eta g_k) / sum_l theta_l exp(eta g_l)``;
* ``"em_eta"``, chi-squared distance (eq. 2.19):
  ``theta_k (eta (g_k - sum_l theta_l g_l) + 1)``.

For the proportion vector alone (components known), ``sum_j p_j g_j = 1`` (eq. 2.20), so
``em_eta`` with ``eta = 1`` is EM (and ``em_eta`` is Peters & Walker's over-relaxed EM).
GP and EM_eta can leave the simplex; a step that would is kept inside by :func:`feasible`
(ours: the thesis only says that ``eta`` must then be small). Every entry's gradient comes
from ``jax.grad`` (:class:`.problem.Problem`), so the updates apply to every structure kind.
Maximum likelihood only (the updates are defined on the log-likelihood); no update is
guaranteed to increase it. At the default adaptive rate each step is also compared with the EM
step from the same point and the better one taken (ours, :func:`.state.learning_step`), which
makes every rule monotone, each step gaining at least what EM's from the same point would.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .problem import Problem
from .state import Kernel, State, initial_state, learning_step

__all__ = ["FEASIBLE_FRACTION", "RULES", "build", "feasible", "update"]

RULES = ("gp", "eg", "em_eta")

#: A step leaving the parameter space is cut to this fraction of the largest feasible one.
FEASIBLE_FRACTION = 0.9


def feasible(problem: Problem, x, delta):
    """``x + delta`` kept in the parameter space entry by entry: no entry loses more than
    ``FEASIBLE_FRACTION`` of its value, and the mass that this clipping adds to a row is taken
    back from the row's increasing entries in proportion to their increase (they stay above
    their old values). An entry tending to a boundary optimum shrinks geometrically while the
    others move freely (ours; a global cut of the step would stall them all)."""
    down = jnp.minimum(jnp.maximum(delta, -FEASIBLE_FRACTION * x), 0.0)
    up = jnp.maximum(delta, 0.0)
    total_up = problem.row_sum(up)  # scaled to the clipped losses (no cancellation)
    return problem.hold(x + down - up * problem.row_sum(down)
                        / jnp.where(total_up > 0, total_up, 1.0))


def update(problem: Problem, rule: str, x, g, eta):
    """One update of ``rule`` from ``x`` with per-observation gradient ``g`` (module
    docstring; eqs 2.17-2.19)."""
    if rule == "eg":
        scaled = eta * g
        top = jax.ops.segment_max(scaled, problem.rows, num_segments=problem.n_rows)
        tilted = x * jnp.exp(scaled - top[problem.rows])  # each row shifted by its maximum
        return problem.hold(tilted / problem.row_sum(tilted))
    if rule == "gp":
        delta = eta * (g - problem.row_sum(g) / problem.width)
    else:
        delta = eta * x * (g - problem.row_sum(x * g))
    if problem.held is not None:
        delta = jnp.where(problem.held[0], delta, 0.0)
    return feasible(problem, x, delta)


def build(problem: Problem, rule: str, eta, tol_total, max_iter: int,
          adaptive: bool = False) -> Kernel:
    """The kernel of ``rule`` (one of :data:`RULES`) with learning rate ``eta``, fixed or the
    start of an adaptive one, safeguarded by the EM step (:func:`.state.learning_step`)."""

    def at(x):
        """``(L(x), fields at x)``: the per-observation gradient and ``M(x)``."""
        value, g = problem.value_and_gradient(x)
        return value, {"x": x, "gradient": g / problem.n_obs, "mapped": problem.em_step(x, g)}

    def init(x0) -> State:
        value, fields = at(x0)
        return initial_state(x0, value, max_iter, gradient=fields["gradient"],
                             mapped=fields["mapped"], rate=jnp.asarray(eta, dtype=jnp.float64))

    def step(state: State) -> State:
        value, moved = at(update(problem, rule, state.x, state.gradient, state.rate))
        return learning_step(state, value, tol_total, moved,
                             at(state.mapped) if adaptive else None)

    return Kernel(init, step)
