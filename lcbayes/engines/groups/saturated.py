"""The saturated model of a multiple-group fit: a free multinomial over the full response table
in every stratum (group x covariate pattern), fitted by EM where items are missing.

glca's goodness of fit compares a model with it: ``G^2 = 2 (ln L_sat - ln L)`` and
``df = min(N - 1, H prod_j r_j - 1) - n_parameters`` with ``H`` the strata. Where every item
is observed the saturated estimate is the observed proportions; a row with missing items is
spread over the cells it agrees with in proportion to their current probabilities (the E
step), and the probabilities are the expected counts' proportions (the M step; Little & Rubin
2002, section 13.4). The log-likelihood of a row is that of its observed items,
``ln sum_{cells c compatible} p_c``.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["MAX_CELLS", "saturated_fit", "saturated_loglik"]

#: Largest response table ``prod_j r_j`` fitted (beyond it :func:`saturated_loglik` gives
#: ``None``: G^2 is then not reported).
MAX_CELLS = 1 << 16


def _stratum_loglik(patterns: np.ndarray, counts: np.ndarray, cards: tuple[int, ...],
                    tol: float, max_iter: int) -> float:
    """The saturated log-likelihood of one stratum's unique patterns (``-1`` missing)."""
    grid = np.stack(np.unravel_index(np.arange(math.prod(cards)), cards), axis=1)
    compatible = ((patterns[:, None, :] < 0) | (patterns[:, None, :] == grid[None])).all(axis=2)
    n = counts.sum()
    p = counts @ compatible / (counts @ compatible).sum()     # a start with every cell used
    previous = -np.inf
    for _ in range(max_iter):
        row = compatible @ p
        loglik = float(counts @ np.log(row))
        if loglik - previous <= tol * n:
            break
        previous = loglik
        p = p * ((counts / row) @ compatible) / n
    return loglik


def saturated_loglik(codes: np.ndarray, cards: tuple[int, ...], strata: np.ndarray, *,
                     tol: float = 1e-12, max_iter: int = 20000) -> float | None:
    """``ln L_sat``: the saturated multinomial's log-likelihood summed over ``strata`` (one
    stratum code per row of ``codes``; module docstring), or ``None`` where the table has more
    than :data:`MAX_CELLS` cells."""
    if math.prod(cards) > MAX_CELLS:
        return None
    total = 0.0
    for stratum in np.unique(strata):
        rows = codes[strata == stratum]
        patterns, counts = np.unique(rows, axis=0, return_counts=True)
        total += _stratum_loglik(patterns, counts.astype(np.float64), cards, tol, max_iter)
    return total


def saturated_fit(codes: np.ndarray, cards: tuple[int, ...], group: np.ndarray,
                  design: np.ndarray) -> tuple[float | None, int]:
    """``(ln L_sat, H)`` of rows with group codes ``group`` and membership design rows
    ``design``: the strata are the distinct (group, design row) pairs (glca's)."""
    keys = np.concatenate([group[:, None].astype(np.float64), design], axis=1)
    _, strata = np.unique(keys, axis=0, return_inverse=True)
    strata = strata.reshape(-1)
    return saturated_loglik(codes, cards, strata), int(strata.max()) + 1
