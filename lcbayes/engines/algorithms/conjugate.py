"""Conjugate gradients (CG, Whiley §2.4, App A.5) and generalised conjugate gradients (GCG,
§2.5; Jamshidian & Jennrich 1993), each started with EM.

Both start with EM steps and switch once ``2 L(theta^{t+1}) - 2 L(theta^t) < 1`` (Jamshidian &
Jennrich's criterion, eq. 2.10), since CG is only locally convergent. After the switch,
``theta^{t+1} = theta^t + alpha^t d^t`` with ``alpha^t`` from :func:`golden_section` over the
feasible steps, in the traditional basis with every row's last state eliminated (App A.5):

* CG: ``d^0 = g^0``, ``d^{t+1} = g^{t+1} + beta^t d^t`` with ``beta`` option (ii) of eq. 2.8,
  ``beta^t = g^{t+1 T} g^{t+1} / d^{tT} g^t``, the one the thesis ran;
* GCG: the EM step ``theta~ - theta^t`` stands for the generalised gradient ``g~ = W^{-1} g``
  (eq. 2.13), ``d^0 = g~^0``, ``d^{t+1} = g~^{t+1} - beta^t d^t`` with Jamshidian & Jennrich's
  ``beta^t = g~^{t+1 T} (g^{t+1} - g^t) / d^{tT} (g^{t+1} - g^t)`` (the thesis prints ``g^t``
  in the denominator; J&J's ``d^t`` is what makes the directions conjugate, and the sign is
  that of Hestenes-Stiefel for a maximum).

The direction is reset to the (generalised) gradient every ``dim Theta`` steps and whenever it
is not an ascent direction. A line search that finds no increase is replaced by an EM step
(ours: it keeps both methods monotone, the thesis does not say what it did), and so is one
that gains less than :data:`EM_FRACTION` of what the EM step from the same point gains, or
less than the tolerance, unless it ends at least as high as the EM step (ours, one more
evaluation of the objective, not counted in ``evaluations``). So the run stops (a change below
the tolerance) only where the EM step would not gain that either, EM's own rule, not after a
search cut short by the boundary or along a poor direction, and CG does not crawl along
searches that gain far less than EM (without the fraction rule it can reach the iteration
cap). Entries at the
boundary that a direction pushes out stay there (:meth:`.problem.Problem.inward`; ML
estimates of latent class models often have zeros, where the largest feasible step is 0).
``State.mapped`` holds ``M(theta)`` at every point: GCG's generalised gradient and the EM step
of the first phase and of the fallback, one E step per iteration.
The objective may include the MAP prior term; the line search needs whole rows free (no class
padding).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from .problem import Problem
from .state import Kernel, State, converged, initial_state, record

__all__ = ["EM_FRACTION", "GOLDEN", "LINE_TOL", "MAX_EVALUATIONS", "build", "golden_section"]

#: ``tau = 2 / (1 + sqrt 5)``, the golden-section ratio (App A.5.2).
GOLDEN = 2.0 / (1.0 + math.sqrt(5.0))

#: The search stops when the bracket is narrower than this fraction of its upper end (the
#: thesis's absolute ``1e-4`` assumes steps of order one; ours keeps the precision relative).
LINE_TOL = 1e-4

#: A line search is taken only if it gains at least this fraction of what the EM step from the
#: same point gains (ours; module docstring).
EM_FRACTION = 0.5

#: Most objective evaluations of one line search.
MAX_EVALUATIONS = 100


def golden_section(f, upper, tol: float = LINE_TOL, max_evaluations: int = MAX_EVALUATIONS):
    """Maximise ``f`` over ``[0, upper]`` by golden-section search (App A.5.2): brackets
    ``(a0, a1, a2, a3) = (0, upper (1 - tau), upper tau, upper)``, then ``(a0, a3 - tau (a3 -
    a0), a1, a2)`` with the new ``a3`` if ``f(a1) > f(a2)``, else ``(a1, a2, a0 + tau (a3 -
    a0), a3)`` with the new ``a0``, until ``a3 - a0 < tol a3`` (or ``a3 < 1e-12 upper``: no
    increase near 0).

    Returns ``(a, f(a), evaluations)``: the better of the two inner points (traceable)."""
    def g(a):  # NaN (rounding past the boundary) counts as -inf
        value = f(a)
        return jnp.where(jnp.isnan(value), -jnp.inf, value)

    upper = jnp.where(jnp.isfinite(upper), upper, 0.0)
    a1, a2 = upper * (1.0 - GOLDEN), upper * GOLDEN
    start = (jnp.zeros_like(upper), a1, a2, upper, g(a1), g(a2), jnp.array(2))

    def cond(s):
        a0, _, _, a3, _, _, n = s
        return (a3 - a0 >= tol * a3) & (a3 > 1e-12 * upper) & (n < max_evaluations)

    def body(s):
        a0, a1, a2, a3, f1, f2, n = s
        left = f1 > f2  # keep [a0, a2]
        b0, b3 = jnp.where(left, a0, a1), jnp.where(left, a2, a3)
        b1 = jnp.where(left, b3 - GOLDEN * (b3 - b0), a2)
        b2 = jnp.where(left, a1, b0 + GOLDEN * (b3 - b0))
        fnew = g(jnp.where(left, b1, b2))
        return (b0, b1, b2, b3, jnp.where(left, fnew, f2), jnp.where(left, f1, fnew), n + 1)

    _, a1, a2, _, f1, f2, n = jax.lax.while_loop(cond, body, start)
    first = f1 > f2
    return jnp.where(first, a1, a2), jnp.where(first, f1, f2), n


def build(problem: Problem, method: str, tol_total, max_iter: int) -> Kernel:
    """The kernel of ``method``, ``"cg"`` or ``"gcg"`` (module docstring)."""

    def at(x):
        """``(L(x), M(x), free gradient)``, ``L`` as the line search evaluates it."""
        value, g = problem.value_and_gradient(x)
        return value, problem.em_map(x)[1], problem.to_free(g)

    def init(x0) -> State:
        value, mapped, g = at(x0)
        return initial_state(x0, value, max_iter, mapped=mapped, gradient=g)

    def search(state: State):
        """The line search's point, its value and evaluations, and the EM step's value."""
        delta = problem.inward(state.x, problem.expand(state.direction))
        upper = problem.max_step(state.x, delta)
        a, value, n = golden_section(lambda a: problem.objective(state.x + a * delta), upper)
        return problem.hold(state.x + a * delta), value, n, problem.objective(state.mapped)

    def skip(state: State):
        return state.x, jnp.asarray(-jnp.inf), jnp.array(0), jnp.asarray(jnp.inf)

    def step(state: State) -> State:
        trial, trial_value, n, em_value = jax.lax.cond(state.switched, search, skip, state)
        gain = trial_value - state.value
        accept = state.switched & (gain > 0) & (  # false for NaN
            (~converged(state.value, trial_value, tol_total)
             & (gain >= EM_FRACTION * (em_value - state.value))) | (trial_value >= em_value))
        x = jnp.where(accept, trial, state.mapped)
        value, mapped, g = at(x)
        base = g if method == "cg" else jnp.where(problem.free_theta, mapped - x, 0.0)
        d = state.direction
        if method == "cg":  # beta option (ii)
            beta = (g @ g) / jnp.where(state.scale != 0, state.scale, 1.0)
        else:  # Jamshidian & Jennrich
            y = g - state.gradient
            den = d @ y
            beta = -(base @ y) / jnp.where(den != 0, den, 1.0)
        conjugate = base + beta * d
        count = state.count + 1
        fresh = ~accept | (count >= problem.dim) | ~jnp.isfinite(conjugate @ g) \
            | (conjugate @ g <= 0)
        direction = jnp.where(fresh, base, conjugate)
        switched = state.switched | (2.0 * (value - state.value) < 1.0)
        done = converged(state.value, value, tol_total)
        return record(state, state.value, done, x=x,
                      value=value, mapped=mapped, gradient=g, direction=direction,
                      scale=direction @ g, count=jnp.where(fresh, 0, count), switched=switched,
                      evaluations=state.evaluations + n)

    return Kernel(init, step)
