"""Asymptotic model scores on the natural-log evidence scale (higher is better).

All scores approximate ``ln p(y | m)``:

* ``bic = loglik - d/2 ln N`` (Schwarz; Beal & Ghahramani eq. 24),
* ``aic = loglik - d``,
* ``abic = loglik - d/2 ln((N + 2) / 24)``, the sample-size-adjusted BIC (Sclove 1987; Mplus'
  "Sample-Size Adjusted BIC" is ``-2 abic``),
* ``caic = loglik - d/2 (ln N + 1)``, the consistent AIC (Bozdogan 1987),
* ``icl = bic - E`` with ``E = -sum_rows sum_h q(h | y) ln q(h | y)`` the entropy of the posterior
  hidden memberships (Biernacki, Celeux & Govaert 2000, "ICL-BIC"),
* ``bicp = bic + ln p(theta_hat | m)`` and Cheeseman-Stutz (Beal & Ghahramani §3.2-3.3, §4.1).

:class:`~lcbayes.EMResult` also offers BIC with the effective dimension (``bic_e``) and the
alias-corrected scores; :mod:`lcbayes.alias` gives the correction ``ln S``.

``d`` is the number of free parameters and ``N`` the number of rows with at least one observed
value. Packages such as poLCA report ``-2 loglik + d ln N``; that number is ``-2 * bic`` (see
:func:`to_deviance_scale`), and likewise for AIC and ICL.
"""

from __future__ import annotations

import math

__all__ = ["abic", "aic", "bic", "bicp", "caic", "cheeseman_stutz", "icl", "to_deviance_scale"]


def bic(loglik: float, n_parameters: int, n_rows: int) -> float:
    """``loglik - d/2 ln N``."""
    return float(loglik) - 0.5 * n_parameters * math.log(n_rows)


def aic(loglik: float, n_parameters: int) -> float:
    """``loglik - d``."""
    return float(loglik) - n_parameters


def abic(loglik: float, n_parameters: int, n_rows: int) -> float:
    """``loglik - d/2 ln((N + 2) / 24)`` (sample-size-adjusted BIC)."""
    return float(loglik) - 0.5 * n_parameters * math.log((n_rows + 2) / 24)


def caic(loglik: float, n_parameters: int, n_rows: int) -> float:
    """``loglik - d/2 (ln N + 1)`` (consistent AIC)."""
    return float(loglik) - 0.5 * n_parameters * (math.log(n_rows) + 1.0)


def icl(loglik: float, n_parameters: int, n_rows: int, entropy: float) -> float:
    """``bic - entropy`` of the posterior hidden memberships (ICL-BIC)."""
    return bic(loglik, n_parameters, n_rows) - float(entropy)


def bicp(loglik: float, n_parameters: int, n_rows: int, log_prior: float) -> float:
    """``bic + ln p(theta_hat | m)``: BIC plus the log prior density at the estimate
    (Beal & Ghahramani §4.1, "BICp")."""
    return bic(loglik, n_parameters, n_rows) + float(log_prior)


def cheeseman_stutz(loglik: float, complete_log_evidence: float, complete_loglik: float
                    ) -> float:
    """``ln p(s_hat, y | m) + ln p(y | theta_hat) - ln p(s_hat, y | theta_hat)`` (Beal &
    Ghahramani eq. 27): ``complete_log_evidence`` is eq. 5 with the fractional expected counts
    of the E step at ``theta_hat`` (eq. 28), ``complete_loglik`` is
    ``sum N_hat ln theta_hat`` (eq. 30). A lower bound on ``ln p(y | m)`` (Theorem 6.1)."""
    return float(complete_log_evidence) + float(loglik) - float(complete_loglik)


def to_deviance_scale(score: float) -> float:
    """Convert a log-evidence-scale score to poLCA's ``-2 loglik + penalty`` scale."""
    return -2.0 * float(score)
