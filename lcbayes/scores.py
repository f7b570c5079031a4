"""Asymptotic model scores on the natural-log evidence scale (higher is better).

All scores approximate ``ln p(y | m)``:

* ``bic = loglik - d/2 ln N`` (Schwarz; Beal & Ghahramani eq. 24),
* ``aic = loglik - d``,
* ``abic = loglik - d/2 ln((N + 2) / 24)``, the sample-size-adjusted BIC (Sclove 1987; Mplus'
  "Sample-Size Adjusted BIC" is ``-2 abic``),
* ``caic = loglik - d/2 (ln N + 1)``, the consistent AIC (Bozdogan 1987),
* ``icl = bic - E`` with ``E = -sum_rows sum_h q(h | y) ln q(h | y)`` the entropy of the posterior
  hidden memberships (Biernacki, Celeux & Govaert 2000, "ICL-BIC"),
* ``bicp = bic + ln p(theta_hat | m)`` and Cheeseman-Stutz (Beal & Ghahramani §3.2-3.3, §4.1),
* ``draper = bic + d/2 ln 2 pi`` (Draper 1995; Whiley 1999 §4.5.1),
* ``icl_classification``: Biernacki, Celeux & Govaert's ICL as Whiley §4.7 (eq. 4.15) writes
  it, the classification log-likelihood of the hard allocation plus the exact Jeffreys-prior
  marginal of the allocation (``icl`` above is their BIC-like approximation of it).

Whiley's MLED (§4.6.1) is the Cooper-Herskovits evidence of the EM expected counts,
:func:`lcbayes.engines.dirichlet.complete_data_log_evidence`; his AIC is ``loglik - d`` as here.

:class:`~lcbayes.EMResult` also offers BIC with the effective dimension (``bic_e``) and the
alias-corrected scores; :mod:`lcbayes.alias` gives the correction ``ln S``.

``d`` is the number of free parameters and ``N`` the number of rows with at least one observed
value. Packages such as poLCA report ``-2 loglik + d ln N``; that number is ``-2 * bic`` (see
:func:`to_deviance_scale`), and likewise for AIC and ICL.
"""

from __future__ import annotations

import math

__all__ = ["abic", "aic", "bic", "bicp", "caic", "cheeseman_stutz", "draper", "icl",
           "icl_classification", "to_deviance_scale"]


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


def draper(loglik: float, n_parameters: int, n_rows: int) -> float:
    """``bic + d/2 ln 2 pi`` (Draper 1995; Whiley 1999 §4.5.1): BIC keeping the Laplace
    approximation's ``(2 pi)^(d/2)``."""
    return bic(loglik, n_parameters, n_rows) + 0.5 * n_parameters * math.log(2.0 * math.pi)


def icl_classification(classification_loglik: float, n_component_parameters: int,
                       class_sizes) -> float:
    """Whiley eq. 4.15 (Biernacki, Celeux & Govaert 2000, ICL with a Jeffreys
    ``Dir(1/2, ..., 1/2)`` prior on the class weights)::

        max_theta ln f(y | z~, theta) - d/2 ln N + ln Gamma(K/2) + sum_k ln Gamma(N_k + 1/2)
            - K ln Gamma(1/2) - ln Gamma(N + K/2)

    ``classification_loglik`` is the first term (the complete-data log-likelihood of the hard
    allocation ``z~`` at its own ML item tables), ``d`` the number of *component* parameters
    (the class weights excluded; Biernacki et al.) and ``class_sizes`` the ``N_k`` of ``z~``
    (every class, empty ones included)."""
    sizes = [float(n) for n in class_sizes]
    k, n = len(sizes), sum(sizes)
    marginal = (math.lgamma(k / 2) + sum(math.lgamma(m + 0.5) for m in sizes)
                - k * math.lgamma(0.5) - math.lgamma(n + k / 2))
    return float(classification_loglik) - 0.5 * n_component_parameters * math.log(n) + marginal


def to_deviance_scale(score: float) -> float:
    """Convert a log-evidence-scale score to poLCA's ``-2 loglik + penalty`` scale."""
    return -2.0 * float(score)
