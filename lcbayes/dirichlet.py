"""Dirichlet algebra shared by the evidence engines (JAX, float64, jit-friendly).

Every function takes CPT-shaped *tables*: a tuple of ``(q_i, r_i)`` arrays of pseudo-counts,
one independent Dirichlet per row (Beal & Ghahramani eq. 3). Optional row ``weights`` (one
``(q_i,)`` array per table) count a row a fractional number of times; the tied-parameter engines
use them so that ``g`` copies of one shared row count once (weight ``1/g`` each).

The tables are concatenated into one vector before ``gammaln`` and ``digamma`` are applied, so a
jitted caller holds one copy of each special function however many tables there are (XLA
inlines every call, and their expansions dominate compile time).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import digamma, gammaln

__all__ = [
    "complete_data_log_evidence",
    "expected_log_theta",
    "expected_log_thetas",
    "kl_divergence",
    "log_beta",
]


def log_beta(alpha: jax.Array) -> jax.Array:
    """``sum_k ln Gamma(alpha_k) - ln Gamma(sum_k alpha_k)`` over the last axis."""
    return gammaln(alpha).sum(-1) - gammaln(alpha.sum(-1))


def expected_log_theta(alpha: jax.Array) -> jax.Array:
    """``E[ln theta_k] = psi(alpha_k) - psi(sum_k alpha_k)`` under ``Dir(alpha)``
    (Beal & Ghahramani eq. 60); ``exp`` of it is the sub-normalised VBE table."""
    return digamma(alpha) - digamma(alpha.sum(-1, keepdims=True))


class _Flat:
    """Tables laid end to end: ``rows[e]`` numbers the CPT row of entry ``e``."""

    def __init__(self, tables) -> None:
        self.shapes = [t.shape for t in tables]
        counts = [q for q, _ in self.shapes]
        self.n_rows = int(sum(counts))
        self.rows = jnp.asarray(np.repeat(np.arange(self.n_rows),
                                          [r for q, r in self.shapes for _ in range(q)]))

    def flat(self, tables) -> jax.Array:
        return jnp.concatenate([jnp.ravel(t) for t in tables])

    def row_sum(self, values: jax.Array) -> jax.Array:
        return jax.ops.segment_sum(values, self.rows, num_segments=self.n_rows)

    def split(self, values: jax.Array) -> tuple[jax.Array, ...]:
        out, start = [], 0
        for q, r in self.shapes:
            out.append(values[start:start + q * r].reshape(q, r))
            start += q * r
        return tuple(out)

    def total(self, per_row: jax.Array, weights) -> jax.Array:
        if weights is None:
            return per_row.sum()
        return (jnp.concatenate([jnp.ravel(w) for w in weights]) * per_row).sum()


def expected_log_thetas(alphas) -> tuple[jax.Array, ...]:
    """:func:`expected_log_theta` of every table (one ``digamma`` for all of them)."""
    layout = _Flat(alphas)
    a = layout.flat(alphas)
    psi = digamma(jnp.concatenate([a, layout.row_sum(a)]))
    return layout.split(psi[:a.size] - psi[a.size:][layout.rows])


def _log_beta_rows(layout: _Flat, a: jax.Array) -> jax.Array:
    """Per CPT row, ``ln B(a_row)`` of the flat pseudo-counts ``a``."""
    lg = gammaln(jnp.concatenate([a, layout.row_sum(a)]))
    return layout.row_sum(lg[:a.size]) - lg[a.size:]


def complete_data_log_evidence(counts, alphas, weights=None) -> jax.Array:
    """``ln p(z | m)`` for complete-data counts ``N`` under Dirichlet priors ``lambda``
    (Beal & Ghahramani eq. 5): ``sum_rows [ln B(lambda + N) - ln B(lambda)]``, where
    ``B`` is the multivariate Beta function. Fractional counts are allowed (eq. 28)."""
    layout = _Flat(alphas)
    lam = layout.flat(alphas)
    per_row = _log_beta_rows(layout, lam + layout.flat(counts)) - _log_beta_rows(layout, lam)
    return layout.total(per_row, weights)


def kl_divergence(alphas, priors, weights=None) -> jax.Array:
    """``sum_rows KL(Dir(alpha) || Dir(lambda))``::

        ln Gamma(alpha_0) - sum ln Gamma(alpha_k) - ln Gamma(lambda_0) + sum ln Gamma(lambda_k)
        + sum_k (alpha_k - lambda_k) (psi(alpha_k) - psi(alpha_0))
    """
    layout = _Flat(alphas)
    a, lam = layout.flat(alphas), layout.flat(priors)
    psi = layout.flat(expected_log_thetas(alphas))
    per_row = (_log_beta_rows(layout, lam) - _log_beta_rows(layout, a)
               + layout.row_sum((a - lam) * psi))
    return layout.total(per_row, weights)
