"""Deterministic annealing EM (Ueda & Nakano 1998; Whiley §2.11, App B).

At inverse temperature ``beta`` the E step gives tempered responsibilities
``q(e | y) proportional to p(y, e | theta)^beta``; for every structure kind this is the
inference core's E step with the log CPTs scaled by ``beta``. The M step is EM's (with the MAP
prior if any). At fixed ``beta`` the pair increases
``F_beta(theta) = (1/beta) sum_p w_p ln sum_e p(y_p, e | theta)^beta`` (plus the prior term),
minus Ueda & Nakano's free energy ``L_beta`` of the thesis; the kernel iterates until
``F_beta`` changes by less than ``tol`` per row, then moves to the next ``beta`` of the
schedule, and stops at ``beta = 1``, where ``F_1`` is the log-likelihood and the iteration is
EM. The history records ``F_beta`` at the current ``beta``.

Whiley's Theorems 2.1-2.3: EM from an independence model reaches the ML independence model in
one step, and the equal-weight independence model (eq. 2.26) is a fixed point at every
``beta``, which is why DAEM from a high temperature ends there on naive networks.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .problem import Problem
from .state import Kernel, State, converged, initial_state, record

__all__ = ["DEFAULT_BETA_MIN", "DEFAULT_STEPS", "build", "schedule"]

#: The default schedule: geometric from ``DEFAULT_BETA_MIN`` to 1 in ``DEFAULT_STEPS`` values.
#: From high temperatures (``beta`` below ``1 / lambda_max`` of the items' correlations, the
#: digest's criterion) DAEM ends at the equal-weight independence model, a fixed point at every
#: ``beta`` (Thm 2.3); 0.5 lies below that range on ordinary survey items.
DEFAULT_BETA_MIN = 0.5
DEFAULT_STEPS = 10


def schedule(beta_min: float = DEFAULT_BETA_MIN, steps: int = DEFAULT_STEPS) -> np.ndarray:
    """``steps`` inverse temperatures, geometric from ``beta_min`` to 1."""
    return np.geomspace(beta_min, 1.0, steps) if steps > 1 else np.ones(1)


def build(problem: Problem, betas, tol_total, max_iter: int) -> Kernel:
    """The DAEM kernel over the increasing inverse temperatures ``betas`` (ending at 1)."""
    last = betas.shape[0] - 1

    def init(x0) -> State:
        return initial_state(x0, -jnp.inf, max_iter)

    def step(state: State) -> State:
        beta = betas[state.level]
        log_norm, counts = problem.e_step(state.x, beta)
        value = problem.weights @ log_norm / beta + problem.prior_term(state.x)
        settled = converged(state.value, value, tol_total)
        warmer = settled & (state.level < last)
        return record(state, value, settled & ~warmer, x=problem.m_step(counts),
                      value=jnp.where(warmer, -jnp.inf, value),
                      level=state.level + warmer)

    return Kernel(init, step)
