"""Posterior model probabilities from the candidates' log evidences (which estimate each row
uses is :mod:`lcbayes.comparison.policy`'s rule). Under a uniform prior over the candidates::

    p(m | y) = exp(L_m - logsumexp_m' L_m'),        log_bayes_factor_m = L_m - max_m' L_m'

``posterior_low``/``posterior_high`` are the 2.5% and 97.5% quantiles of ``p(m | y)`` over
:data:`POSTERIOR_DRAWS` Monte Carlo draws ``L_m ~ N(L_hat_m, se_m^2)`` (``se_m`` the method's
standard error, 0 for exact and VB values, whose error is not quantified), seeded; the interval
is widened to contain the point estimate when the skewed distribution of draws would leave it
outside.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.special import logsumexp

__all__ = ["POSTERIOR_DRAWS", "POSTERIOR_LEVEL", "posterior_probabilities"]

#: Monte Carlo draws behind ``posterior_low`` / ``posterior_high``.
POSTERIOR_DRAWS = 4000
#: Central probability of the posterior interval.
POSTERIOR_LEVEL = 0.95


def posterior_probabilities(
    log_evidence: Sequence[float] | np.ndarray,
    stderr: Sequence[float] | None = None,
    draws: int = POSTERIOR_DRAWS,
    level: float = POSTERIOR_LEVEL,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Posterior model probabilities under a uniform prior, with Monte Carlo intervals.

    ``p_m = exp(L_m - logsumexp(L))`` over the finite ``L_m`` (others get NaN). The interval
    is the central ``level`` range of ``p_m`` over ``draws`` draws of ``L ~ N(L_hat, se^2)``
    (independent per model; ``se = 0`` or NaN: held fixed), widened to contain ``p_m``.

    Returns:
        ``(prob, low, high)`` arrays.
    """
    lz = np.asarray(log_evidence, dtype=np.float64)
    se = np.zeros_like(lz) if stderr is None else np.asarray(stderr, dtype=np.float64)
    se = np.where(np.isfinite(se) & (se > 0), se, 0.0)
    prob = np.full(lz.shape, np.nan)
    low, high = prob.copy(), prob.copy()
    ok = np.isfinite(lz)
    if not ok.any():
        return prob, low, high
    prob[ok] = np.exp(lz[ok] - logsumexp(lz[ok]))
    rng = np.random.default_rng(seed)
    sample = lz[ok] + se[ok] * rng.standard_normal((int(draws), int(ok.sum())))
    sample = np.exp(sample - logsumexp(sample, axis=1, keepdims=True))
    tail = (1.0 - level) / 2.0
    low[ok] = np.minimum(np.quantile(sample, tail, axis=0), prob[ok])
    high[ok] = np.maximum(np.quantile(sample, 1.0 - tail, axis=0), prob[ok])
    return prob, low, high
