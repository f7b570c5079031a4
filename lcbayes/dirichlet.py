"""Dirichlet algebra shared by the evidence engines (JAX, float64, jit-friendly).

Every function takes CPT-shaped *tables*: ``(q_i, r_i)`` arrays of pseudo-counts, one
independent Dirichlet per row (Beal & Ghahramani eq. 3). Optional row ``weights`` count a row a
fractional number of times; the tied-parameter engines use them so that ``g`` copies of one shared
row count once (weight ``1/g`` each).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.scipy.special import digamma, gammaln

__all__ = [
    "complete_data_log_evidence",
    "expected_log_theta",
    "kl_divergence",
    "log_beta",
]


def log_beta(alpha: jax.Array) -> jax.Array:
    """``sum_k ln Gamma(alpha_k) - ln Gamma(sum_k alpha_k)`` over the last axis."""
    return gammaln(alpha).sum(-1) - gammaln(alpha.sum(-1))


def _total(per_row: jax.Array, weights) -> jax.Array:
    return per_row.sum() if weights is None else (weights * per_row).sum()


def complete_data_log_evidence(counts, alphas, weights=None) -> jax.Array:
    """``ln p(z | m)`` for complete-data counts ``N`` under Dirichlet priors ``lambda``
    (Beal & Ghahramani eq. 5): ``sum_rows [ln B(lambda + N) - ln B(lambda)]``, where
    ``B`` is the multivariate Beta function. Fractional counts are allowed (eq. 28)."""
    total = jnp.zeros(())
    for i, (n, lam) in enumerate(zip(counts, alphas, strict=True)):
        per_row = log_beta(lam + n) - log_beta(lam)
        total = total + _total(per_row, None if weights is None else weights[i])
    return total


def expected_log_theta(alpha: jax.Array) -> jax.Array:
    """``E[ln theta_k] = psi(alpha_k) - psi(sum_k alpha_k)`` under ``Dir(alpha)``
    (Beal & Ghahramani eq. 60); ``exp`` of it is the sub-normalised VBE table."""
    return digamma(alpha) - digamma(alpha.sum(-1, keepdims=True))


def kl_divergence(alphas, priors, weights=None) -> jax.Array:
    """``sum_rows KL(Dir(alpha) || Dir(lambda))``::

        ln Gamma(alpha_0) - sum ln Gamma(alpha_k) - ln Gamma(lambda_0) + sum ln Gamma(lambda_k)
        + sum_k (alpha_k - lambda_k) (psi(alpha_k) - psi(alpha_0))
    """
    total = jnp.zeros(())
    for i, (a, lam) in enumerate(zip(alphas, priors, strict=True)):
        per_row = (log_beta(lam) - log_beta(a)
                   + ((a - lam) * expected_log_theta(a)).sum(-1))
        total = total + _total(per_row, None if weights is None else weights[i])
    return total
