"""The choice of each candidate's log evidence, and posterior model probabilities.

``log_evidence`` is the best estimate available per row: among the methods with an
:class:`~.registry.EvidenceRole` that have a finite value, the one of lowest ``priority``
(exact 0, AIS 1, VB 2) that no flag of the row vetoes (an AIS estimate flagged
``ais_below_vbem`` is known to be too low); ``evidence_method`` names it (``"none"`` if there is
none). Under a uniform prior over the candidates::

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

from . import registry

__all__ = ["POSTERIOR_DRAWS", "POSTERIOR_LEVEL", "choose_evidence", "posterior_probabilities"]

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


def choose_evidence(row: dict, flags: Sequence[str]) -> tuple[float, str, float]:
    """``(log_evidence, evidence_method, stderr)`` of one row of scores with the names of its
    flags (module docstring)."""
    roles = sorted(((m.evidence, m.name) for m in registry.methods() if m.evidence is not None),
                   key=lambda pair: pair[0].priority)
    for role, name in roles:
        value = row.get(role.value, np.nan)
        if not np.isfinite(value) or any(f in flags for f in role.vetoed_by):
            continue
        if isinstance(role.stderr, str):
            se = row.get(role.stderr, np.nan)
            se = float(se) if np.isfinite(se) else np.nan
        else:
            se = float(role.stderr)
        return float(value), name, se
    return np.nan, "none", np.nan
