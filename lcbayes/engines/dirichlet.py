"""Dirichlet algebra shared by the evidence engines (JAX, float64, jit-friendly).

Every function takes CPT-shaped *tables*: a tuple of ``(q_i, r_i)`` arrays of pseudo-counts,
one independent Dirichlet per row (Beal & Ghahramani eq. 3). Optional row ``weights`` (one
``(q_i,)`` array per table) count a row a fractional number of times; the tied-parameter engines
use them so that ``g`` copies of one shared row count once (weight ``1/g`` each).

The tables are concatenated into one vector before ``gammaln`` and ``digamma`` are applied, so a
jitted caller holds one copy of each special function however many tables there are (XLA
inlines every call, and their expansions dominate compile time).

The flat functions take an optional ``active`` mask: entries where it is False are left out of
their row, as if the row had only its active entries (the switched-off classes of a padded
latent class model, :mod:`lcbayes.engines.padding`); their expected log is ``-inf``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.scipy.special import digamma, gammaln

from ..inference import flat

__all__ = [
    "complete_data_log_evidence",
    "expected_log_theta",
    "expected_log_theta_flat",
    "expected_log_thetas",
    "kl_divergence",
    "kl_divergence_flat",
    "log_beta",
    "log_normaliser",
]


def log_beta(alpha: jax.Array) -> jax.Array:
    """``sum_k ln Gamma(alpha_k) - ln Gamma(sum_k alpha_k)`` over the last axis."""
    return gammaln(alpha).sum(-1) - gammaln(alpha.sum(-1))


def log_normaliser(alpha: jax.Array, mask: jax.Array) -> jax.Array:
    """``ln Gamma(sum_k alpha_k) - sum_k ln Gamma(alpha_k)`` over the entries of the last axis
    where ``mask`` holds: the log normalising constant of ``Dir(alpha)`` on a row's active
    entries (the categories an item has, the classes switched on); the others, whatever they
    hold, are left out."""
    return (gammaln(jnp.sum(jnp.where(mask, alpha, 0.0), -1))
            - jnp.sum(jnp.where(mask, gammaln(alpha), 0.0), -1))


def expected_log_theta(alpha: jax.Array) -> jax.Array:
    """``E[ln theta_k] = psi(alpha_k) - psi(sum_k alpha_k)`` under ``Dir(alpha)``
    (Beal & Ghahramani eq. 60); ``exp`` of it is the sub-normalised VBE table."""
    return digamma(alpha) - digamma(alpha.sum(-1, keepdims=True))


def _row_sum(values: jax.Array, shapes) -> jax.Array:
    """Per CPT row, the sum of the flat ``values`` (:mod:`lcbayes.inference.flat`)."""
    rows = flat.entry_rows(shapes)
    return jax.ops.segment_sum(values, rows, num_segments=int(rows[-1]) + 1)


def _active_only(a: jax.Array, shapes, active) -> tuple[jax.Array, jax.Array]:
    """``a`` with inactive entries set to 1 (harmless in ``gammaln``/``digamma``) and the row
    sums of the active entries (1 for a row with none)."""
    if active is None:
        return a, _row_sum(a, shapes)
    total = _row_sum(jnp.where(active, a, 0.0), shapes)
    some = _row_sum(active.astype(a.dtype), shapes) > 0
    return jnp.where(active, a, 1.0), jnp.where(some, total, 1.0)


def _total(per_row: jax.Array, weights) -> jax.Array:
    return per_row.sum() if weights is None else (flat.flatten(weights) * per_row).sum()


def _shapes(tables) -> tuple[tuple[int, int], ...]:
    return tuple(t.shape for t in tables)


def expected_log_thetas(alphas) -> tuple[jax.Array, ...]:
    """:func:`expected_log_theta` of every table (one ``digamma`` for all of them)."""
    shapes = _shapes(alphas)
    return flat.unflatten(expected_log_theta_flat(flat.flatten(alphas), shapes), shapes)


def expected_log_theta_flat(a: jax.Array, shapes, active=None) -> jax.Array:
    """:func:`expected_log_theta` of tables laid end to end (:mod:`lcbayes.inference.flat`);
    ``-inf`` at inactive entries (module docstring)."""
    entries, totals = _active_only(a, shapes, active)
    psi = digamma(jnp.concatenate([entries, totals]))
    out = psi[:a.size] - psi[a.size:][flat.entry_rows(shapes)]
    return out if active is None else jnp.where(active, out, -jnp.inf)


def _log_beta_rows(a: jax.Array, shapes, active=None) -> jax.Array:
    """Per CPT row, ``ln B(a_row)`` of the flat pseudo-counts ``a`` (active entries only)."""
    entries, totals = _active_only(a, shapes, active)
    lg = gammaln(jnp.concatenate([entries, totals]))
    terms = lg[:a.size] if active is None else jnp.where(active, lg[:a.size], 0.0)
    return _row_sum(terms, shapes) - lg[a.size:]


@jax.jit
def complete_data_log_evidence(counts, alphas, weights=None) -> jax.Array:
    """``ln p(z | m)`` for complete-data counts ``N`` under Dirichlet priors ``lambda``
    (Beal & Ghahramani eq. 5): ``sum_rows [ln B(lambda + N) - ln B(lambda)]``, where
    ``B`` is the multivariate Beta function. Fractional counts are allowed (eq. 28).
    One program per set of table shapes (a result's scores call it outside any ``jit``,
    where op-by-op dispatch would compile each of its operations on its own)."""
    shapes = _shapes(alphas)
    lam = flat.flatten(alphas)
    per_row = (_log_beta_rows(lam + flat.flatten(counts), shapes)
               - _log_beta_rows(lam, shapes))
    return _total(per_row, weights)


def kl_divergence(alphas, priors, weights=None) -> jax.Array:
    """``sum_rows KL(Dir(alpha) || Dir(lambda))``::

        ln Gamma(alpha_0) - sum ln Gamma(alpha_k) - ln Gamma(lambda_0) + sum ln Gamma(lambda_k)
        + sum_k (alpha_k - lambda_k) (psi(alpha_k) - psi(alpha_0))
    """
    return kl_divergence_flat(flat.flatten(alphas), flat.flatten(priors), _shapes(alphas),
                              None if weights is None else flat.flatten(weights))


def kl_divergence_flat(a: jax.Array, lam: jax.Array, shapes, row_weights=None, active=None
                       ) -> jax.Array:
    """:func:`kl_divergence` of tables laid end to end; ``row_weights`` one per CPT row;
    inactive entries left out (module docstring)."""
    gain = (a - lam) * expected_log_theta_flat(a, shapes, active)
    per_row = (_log_beta_rows(lam, shapes, active) - _log_beta_rows(a, shapes, active)
               + _row_sum(gain if active is None else jnp.where(active, gain, 0.0), shapes))
    return _total(per_row, None if row_weights is None else (row_weights,))
