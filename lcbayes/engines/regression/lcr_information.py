"""Standard errors of a latent class regression: empirical or observed information.

The free parameters are every item row's log-ratios to its first category (as
:mod:`lcbayes.information`) and the membership coefficients ``beta_r`` of classes ``2..K``
(class 1 the reference). With the per-cell scores ``g_u = d ln p(y_u | x_u) / d theta``
(``jax.jacfwd`` of the exact per-cell log-likelihood) and counts ``n_u``:

* ``"empirical"`` (default; poLCA's ``poLCA.se``, Bandeen-Roche et al. 1997):
  ``I = sum_u n_u g_u g_u^T``;
* ``"observed"``: ``I = -d^2/d theta^2 sum_u n_u ln p(y_u | x_u)``.

The covariance is ``I^+`` (``MASS::ginv``'s pseudo-inverse, :func:`lcbayes.information.ginv`);
the coefficients' standard errors are the square roots of its diagonal, the item
probabilities' and the mean class shares' ``P_r = (1/N) sum_i softmax(x_i' beta)_r`` (poLCA's
``P``) come by the delta method. Wald ``z = beta / se`` and two-sided ``p = 2 Phi(-|z|)``.
A continuous distal outcome adds its class means ``mu_r`` and ``ln sigma_r`` to the free
parameters; its standard errors are those of ``mu_r`` and (delta method) ``sigma_r``, and the
means' covariance gives the Wald test of equal means (:mod:`.result`).
"""

from __future__ import annotations

from functools import partial
from typing import Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ...information import ginv
from .cells import Cells, cell_logliks, log_prevalence, normalise_log_items
from .lcr_em import LCRShape

__all__ = ["RegressionErrors", "regression_errors"]


class RegressionErrors(NamedTuple):
    """Standard errors: ``coef`` ``(P, K)`` (column 1 zero), ``coef_cov`` the covariance of
    the free coefficients ``(P (K-1), P (K-1))`` (row-major ``(P, K-1)`` order), ``items``
    ``(J, K, C)``, ``shares`` ``(K,)``, ``score_statistic`` ``g^T I^+ g`` (about 0 at a
    maximum), and for a continuous outcome ``gauss`` ``(2, K)`` (the means' and standard
    deviations' standard errors) and ``mean_cov`` ``(K, K)`` (the means' covariance)."""

    coef: np.ndarray
    coef_cov: np.ndarray
    items: np.ndarray
    shares: np.ndarray
    score_statistic: float
    gauss: np.ndarray | None
    mean_cov: np.ndarray | None


def _positions(shape: LCRShape) -> np.ndarray:
    """Flat ``(J, K, C)`` positions of the free log-ratios (category >= 2, valid)."""
    valid = np.asarray(shape.valid, dtype=bool)
    return np.asarray([(j * shape.n_classes + k) * shape.n_categories + c
                       for j in range(shape.n_items) for k in range(shape.n_classes)
                       for c in range(1, shape.n_categories) if valid[j, c]], dtype=np.int64)


def _theta(log_items, coef, gauss, positions) -> jax.Array:
    """The free parameters at an estimate (module docstring)."""
    logratio = (log_items - log_items[:, :, :1]).ravel()[positions]
    return jnp.concatenate([logratio, coef[:, 1:].ravel(),
                            *(() if gauss is None else (gauss[0], gauss[1]))])


@partial(jax.jit, static_argnames=("shape", "method"))
def _information(log_items, coef, gauss, cells: Cells, shape: LCRShape, method: str):
    """The information, the total score and the Jacobians of the item probabilities, the mean
    shares and the outcome's standard deviations with respect to the free parameters."""
    positions = jnp.asarray(_positions(shape))
    n_items = positions.shape[0]
    k, p = shape.n_classes, shape.n_design
    n_coef = n_items + p * (k - 1)

    def split(theta):
        u = jnp.zeros(shape.n_items_flat, theta.dtype).at[positions].set(theta[:n_items])
        items = normalise_log_items(u.reshape(shape.n_items, k, shape.n_categories), shape.mask)
        free = theta[n_items:n_coef].reshape(p, k - 1)
        g = (theta[n_coef:n_coef + k], theta[n_coef + k:]) if shape.gaussian else None
        return items, jnp.concatenate([jnp.zeros((p, 1), theta.dtype), free], axis=1), g

    def per_cell(theta):
        items, c, g = split(theta)
        return cell_logliks(items, c, cells, g)

    def shares_of(theta):
        prev = jnp.exp(log_prevalence(split(theta)[1], cells.design))
        return cells.counts @ prev / cells.counts.sum()

    theta = _theta(log_items, coef, gauss, positions)
    scores = jax.jacfwd(per_cell)(theta)
    total = cells.counts @ scores
    if method == "empirical":
        info = (scores * cells.counts[:, None]).T @ scores
    else:
        info = -jax.hessian(lambda t: cells.counts @ per_cell(t))(theta)
    jac_items = jax.jacfwd(lambda t: jnp.exp(split(t)[0]).ravel())(theta)
    jac_shares = jax.jacfwd(shares_of)(theta)
    jac_sds = jax.jacfwd(lambda t: jnp.exp(t[n_coef + k:]))(theta) if shape.gaussian else None
    return info, total, jac_items, jac_shares, jac_sds


def regression_errors(log_items: jax.Array, coef: jax.Array, gauss, cells: Cells,
                      shape: LCRShape, method: Literal["empirical", "observed"] = "empirical"
                      ) -> RegressionErrors:
    """Standard errors at ``(log_items, coef, gauss)`` (module docstring)."""
    k, p = shape.n_classes, shape.n_design
    n_items = len(_positions(shape))
    n_coef = n_items + p * (k - 1)
    info, total, jac_items, jac_shares, jac_sds = _information(log_items, coef, gauss, cells,
                                                               shape, method)
    total = np.asarray(total)
    cov = ginv(np.asarray(info))
    statistic = float(total @ cov @ total)

    def delta(jac):
        jac = np.asarray(jac)
        return np.sqrt(np.maximum(np.einsum("ad,de,ae->a", jac, cov, jac), 0.0))

    coef_cov = cov[n_items:n_coef, n_items:n_coef]
    gauss_se = mean_cov = None
    if shape.gaussian:
        mean_cov = cov[n_coef:n_coef + k, n_coef:n_coef + k]
        gauss_se = np.stack([np.sqrt(np.maximum(np.diag(mean_cov), 0.0)),
                             delta(np.asarray(jac_sds))])
    coef_se = np.zeros((p, k))
    coef_se[:, 1:] = np.sqrt(np.maximum(np.diag(coef_cov), 0.0)).reshape(p, k - 1)
    items_se = delta(jac_items).reshape(shape.n_items, k, shape.n_categories)
    return RegressionErrors(coef=coef_se, coef_cov=coef_cov,
                            items=np.where(np.asarray(shape.valid)[:, None, :], items_se, 0.0),
                            shares=delta(jac_shares), score_statistic=statistic,
                            gauss=gauss_se, mean_cov=mean_cov)
