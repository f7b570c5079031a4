"""Asymptotic model scores on the natural-log evidence scale (higher is better).

All scores approximate ``ln p(y | m)``:

* ``bic = loglik - d/2 ln N`` (Schwarz; Beal & Ghahramani eq. 24),
* ``aic = loglik - d``,
* ``icl = bic - E`` with ``E = -sum_rows sum_h q(h | y) ln q(h | y)`` the entropy of the posterior
  hidden memberships (Biernacki, Celeux & Govaert 2000, "ICL-BIC").

``d`` is the number of free parameters and ``N`` the number of rows with at least one observed
value. Packages such as poLCA report ``-2 loglik + d ln N``; that number is ``-2 * bic`` (see
:func:`to_deviance_scale`), and likewise for AIC and ICL.
"""

from __future__ import annotations

import math

__all__ = ["aic", "bic", "icl", "to_deviance_scale"]


def bic(loglik: float, n_parameters: int, n_rows: int) -> float:
    """``loglik - d/2 ln N``."""
    return float(loglik) - 0.5 * n_parameters * math.log(n_rows)


def aic(loglik: float, n_parameters: int) -> float:
    """``loglik - d``."""
    return float(loglik) - n_parameters


def icl(loglik: float, n_parameters: int, n_rows: int, entropy: float) -> float:
    """``bic - entropy`` of the posterior hidden memberships (ICL-BIC)."""
    return bic(loglik, n_parameters, n_rows) - float(entropy)


def to_deviance_scale(score: float) -> float:
    """Convert a log-evidence-scale score to poLCA's ``-2 loglik + penalty`` scale."""
    return -2.0 * float(score)
