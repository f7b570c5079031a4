"""The data of a latent class regression as *cells*: unique (response pattern, design row)
pairs with counts, and the exact per-cell likelihood.

Rows that share both their item responses and their covariate values have the same likelihood
and the same class posterior, so a fit works on cells (patterns compressed within covariate
cells, DESIGN.md) with their counts as weights. Item tables are held as ``(J, K, C)`` log
probabilities, ``C`` the largest cardinality, padded entries 0 (never read: the one-hot codes
are 0 there) and a missing item a row of zeros, so that it contributes a factor of one:

    ln p(y_u | x_u) = logsumexp_r [ ln softmax(x_u' beta)_r + sum_j ln theta_{j r y_uj} ]

(Linzer & Lewis 2011, eq. 4; the classes are summed out exactly). ``coef`` is the ``(P, K)``
matrix ``beta`` with its first column (class 1, the reference) zero.

A continuous distal outcome ``z`` (one step: a class-dependent variable reported apart from
the indicators) adds ``ln N(z_u | mu_r, sigma_r^2)`` to class ``r``'s term when ``z_u`` is
observed (``gauss = (mu, ln sigma)``); a missing ``z`` contributes a factor of one, as a
missing item does. A categorical distal outcome is one more column of ``onehot``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp

__all__ = [
    "TINY",
    "Cells",
    "cell_logliks",
    "gaussian_log",
    "joint_log",
    "log_prevalence",
    "make_cells",
    "normalise_log_items",
    "one_hot",
    "padded_size",
    "softmax",
    "valid_mask",
]

#: Floor of probabilities before their logs (an exact zero stays finite: 0 * log stays 0).
TINY = 1e-300


class Cells(NamedTuple):
    """Unique (pattern, design row, outcome) triples: ``onehot`` ``(U, J, C)`` codes (a missing
    item is a zero row), ``design`` ``(U, P)``, ``counts`` ``(U,)``, and a continuous
    outcome's ``outcome`` ``(U,)`` (0 where missing) with ``seen`` ``(U,)`` (1 where observed;
    all 0 without an outcome)."""

    onehot: jax.Array
    design: jax.Array
    counts: jax.Array
    outcome: jax.Array
    seen: jax.Array


def softmax(eta: np.ndarray) -> np.ndarray:
    """Row-wise softmax of a NumPy array (last axis)."""
    z = np.exp(eta - eta.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def valid_mask(cardinalities) -> np.ndarray:
    """``(J, C)`` whether category ``c`` exists for item ``j``."""
    c = max(cardinalities)
    return np.arange(c)[None, :] < np.asarray(cardinalities)[:, None]


def one_hot(codes: np.ndarray, n_categories: int) -> np.ndarray:
    """``(n, J, C)`` indicators of ``codes`` (``-1``: all zero)."""
    out = (codes[:, :, None] == np.arange(n_categories)[None, None, :])
    return out.astype(np.float64)


def padded_size(n: int) -> int:
    """``n`` rounded up to a multiple of a quarter of its power of two (at least 16): cells
    padded to it let data sets of similar size share one compiled program (a bootstrap's
    draws), at most a quarter more work."""
    step = max(4, 1 << max(int(n - 1).bit_length() - 3, 0))
    return max(16, -(-n // step) * step)


def make_cells(codes: np.ndarray, matrix: np.ndarray, cardinalities,
               outcome: np.ndarray | None = None, *, pad: bool = False
               ) -> tuple[Cells, np.ndarray]:
    """Cells of the rows ``codes`` ``(N, J)`` with designs ``matrix`` ``(N, P)`` and a
    continuous ``outcome`` ``(N,)`` (NaN: missing; ``None``: no outcome), and each row's cell
    index. ``pad``: cells of count zero (copies of the first) appended up to
    :func:`padded_size`; they add nothing to any count-weighted sum."""
    n = codes.shape[0]
    seen = np.zeros(n) if outcome is None else (~np.isnan(outcome)).astype(np.float64)
    value = np.zeros(n) if outcome is None else np.where(seen > 0, outcome, 0.0)
    key = np.concatenate([codes.astype(np.float64), matrix, value[:, None], seen[:, None]],
                         axis=1)
    unique, index, counts = np.unique(key, axis=0, return_inverse=True, return_counts=True)
    if pad:
        extra = padded_size(len(unique)) - len(unique)
        unique = np.concatenate([unique, np.repeat(unique[:1], extra, axis=0)])
        counts = np.concatenate([counts, np.zeros(extra, dtype=counts.dtype)])
    j = codes.shape[1]
    cells = Cells(onehot=jnp.asarray(one_hot(unique[:, :j].astype(np.int64),
                                             max(cardinalities))),
                  design=jnp.asarray(unique[:, j:-2]),
                  counts=jnp.asarray(counts, dtype=jnp.float64),
                  outcome=jnp.asarray(unique[:, -2]), seen=jnp.asarray(unique[:, -1]))
    return cells, index.reshape(-1)


def normalise_log_items(u: jax.Array, valid) -> jax.Array:
    """Rows of ``u`` ``(J, K, C)`` as log probabilities over the valid categories (padded
    entries 0)."""
    masked = jnp.where(valid[:, None, :], u, -jnp.inf)
    return jnp.where(valid[:, None, :], masked - logsumexp(masked, axis=-1, keepdims=True), 0.0)


def log_prevalence(coef: jax.Array, design: jax.Array) -> jax.Array:
    """``(U, K)`` ``ln softmax(x_u' beta)``."""
    return jax.nn.log_softmax(design @ coef, axis=-1)


def gaussian_log(gauss: tuple[jax.Array, jax.Array], cells: Cells) -> jax.Array:
    """``(U, K)`` ``ln N(z_u | mu_r, sigma_r^2)`` where ``z_u`` is observed, else 0."""
    mu, log_sd = gauss
    z = (cells.outcome[:, None] - mu[None, :]) * jnp.exp(-log_sd)[None, :]
    density = -0.5 * jnp.log(2 * jnp.pi) - log_sd[None, :] - 0.5 * z * z
    return cells.seen[:, None] * density


def joint_log(log_items: jax.Array, coef: jax.Array, cells: Cells,
              gauss: tuple[jax.Array, jax.Array] | None = None) -> jax.Array:
    """``(U, K)`` ``ln P(class = r | x_u) + ln p(y_u, z_u | class = r)``."""
    items = jnp.einsum("ujc,jkc->uk", cells.onehot, log_items)
    joint = log_prevalence(coef, cells.design) + items
    return joint if gauss is None else joint + gaussian_log(gauss, cells)


def cell_logliks(log_items: jax.Array, coef: jax.Array, cells: Cells,
                 gauss: tuple[jax.Array, jax.Array] | None = None) -> jax.Array:
    """``(U,)`` ``ln p(y_u, z_u | x_u)`` (module docstring)."""
    return logsumexp(joint_log(log_items, coef, cells, gauss), axis=-1)
