"""Approximate conjugate gradients, the thesis's own algorithm (Whiley §2.7, App A.4).

Conjugate-gradient directions (option (ii) of eq. 2.8), ``d^0 = g^0``,
``d^t = g^t + [g^{tT} g^t / d^{t-1 T} g^{t-1}] d^{t-1}``, reset to ``g`` every ``dim Theta``
steps (and, ours, whenever ``d`` is not an ascent direction), with the line search replaced by
the closed-form maximiser of the penalised first-order model
``eta g^T (theta + alpha d) - d(theta + alpha d, theta)``:

* ``"acg_theta"``, Euclidean in the traditional basis: ``alpha = eta g^T d / d^T d``;
* ``"acg_theta_chi"``, chi-squared in the traditional basis:
  ``alpha = eta g^T d / sum_i d_i^2 / theta_i``, the sum over every entry of a row, the
  eliminated last one moving by ``-sum d`` included (Helmbold's ``d_chi2``; summed over the free
  coordinates only, a small last state would stop the steps at the boundary);
* ``"acg_phi"``, Euclidean in the softmax (additive-logistic) basis ``phi_k = ln theta_k /
  theta_0`` (``zeta_j = ln p_j / p_1`` for the weights, ``logit theta`` for binary items):
  ``alpha = eta g^T d / d^T d`` with ``g = dL/dphi``.

Gradients are on the per-observation scale ``(1/N) L`` (§2.6), by ``jax.grad``
(:class:`.problem.Problem`; the traditional basis eliminates every row's last state, App A.5;
the softmax-basis gradient by the chain rule from the traditional one).
A step of a traditional-basis version is kept in the simplex by
:func:`.helmbold.feasible` (ours). No version is guaranteed to
increase the likelihood (§2.7.1 shows ``acg_theta`` does so on a quadratic for small
``eta``). At the default adaptive rate each step is also compared with the EM step from the
same point and the better one taken (ours, :func:`.state.learning_step`). Maximum likelihood
only.
"""

from __future__ import annotations

import jax.numpy as jnp

from .helmbold import feasible
from .problem import Problem
from .state import Kernel, State, initial_state, learning_step

__all__ = ["BASES", "build"]

BASES = ("acg_phi", "acg_theta", "acg_theta_chi")


def build(problem: Problem, basis: str, eta, tol_total, max_iter: int,
          adaptive: bool = False) -> Kernel:
    """The kernel of ``basis`` (one of :data:`BASES`) with learning rate ``eta``, fixed or the
    start of an adaptive one, safeguarded by the EM step (:func:`.state.learning_step`; where
    the EM step is taken the direction restarts from the gradient)."""
    phi = basis == "acg_phi"

    def at(x):
        """``(L(x), fields at x)``: the per-observation gradient in the basis, ``M(x)``, and
        the gradient as a fresh direction."""
        value, full = problem.value_and_gradient(x)
        g = (problem.phi_gradient(x, full) if phi else problem.to_free(full)) / problem.n_obs
        return value, {"x": x, "gradient": g, "mapped": problem.em_step(x, full),
                       "direction": g, "scale": g @ g, "count": jnp.array(0)}

    def init(x0) -> State:
        value, fields = at(x0)
        return initial_state(x0, value, max_iter, **fields,
                             rate=jnp.asarray(eta, dtype=jnp.float64))

    def step(state: State) -> State:
        x, g, d = state.x, state.gradient, state.direction
        if basis == "acg_theta_chi":  # over every entry of a row, the last one too
            step = problem.inward(x, problem.expand(d))
            metric = (step * step / jnp.where(x > 0, x, jnp.inf)).sum()
        else:
            metric = d @ d
        alpha = state.rate * (g @ d) / jnp.where(metric > 0, metric, 1.0)
        if phi:
            new = problem.from_phi(problem.to_phi(x) + alpha * d)
        else:
            new = feasible(problem, x, alpha * problem.expand(d))
        value, moved = at(new)
        g_new = moved["gradient"]
        conjugate = g_new + (g_new @ g_new) / jnp.where(state.scale != 0, state.scale, 1.0) * d
        count = state.count + 1
        fresh = (count >= problem.dim) | ~(conjugate @ g_new > 0)
        direction = jnp.where(fresh, g_new, conjugate)
        moved.update(direction=direction, scale=direction @ g_new,
                     count=jnp.where(fresh, 0, count))
        return learning_step(state, value, tol_total, moved,
                             at(state.mapped) if adaptive else None)

    return Kernel(init, step)
