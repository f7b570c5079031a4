"""EM for latent class regression (one step): item tables and membership coefficients jointly.

The E step is exact (:mod:`.cells`). The M step of the item tables is the weighted-count ML
update ``theta_jrc = sum_u n_u h_ur 1[y_uj = c] / sum_u n_u h_ur 1[y_uj observed]`` (``h`` the
class posteriors); the coefficients take one Newton-Raphson step on the expected complete-data
log-likelihood of the multinomial logit, ``Q(beta) = sum_u n_u sum_r h_ur ln softmax(x_u'
beta)_r`` (Bandeen-Roche et al. 1997; poLCA's M step, Linzer & Lewis 2011 §2.2), with step
halving (the best of the steps 1, 1/2, ..., 1/16 and 0), so every iteration is a generalised EM
step and the log-likelihood never decreases. Iterations run as SQUAREM cycles
(:mod:`lcbayes.engines.squarem`, extrapolating the log tables and the coefficients) in one
``lax.while_loop``; restarts are vmapped (``batch_size``) or mapped.

A continuous distal outcome (:mod:`.cells`) has the weighted-moment M step
``mu_r = sum_u n_u h_ur z_u / sum_u n_u h_ur`` and ``sigma_r^2`` the weighted variance about
it (over the cells where ``z`` is observed), floored at :data:`VARIANCE_FLOOR` times the
outcome's variance: a class that sits on one value would otherwise have an unbounded
likelihood.

A random start gives every cell Dirichlet(1) class responsibilities and takes one M step from
them (coefficients: the intercepts of the start's class shares, slopes 0).
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import squarem
from .cells import TINY, Cells, cell_logliks, joint_log, log_prevalence, normalise_log_items

__all__ = ["VARIANCE_FLOOR", "LCRRuns", "LCRShape", "m_step", "pack", "run_lcr", "unpack"]

#: Step lengths tried in the Newton step of the coefficients (0: keep them).
STEPS = (1.0, 0.5, 0.25, 0.125, 0.0625, 0.0)
#: Smallest class variance of a continuous outcome, relative to the outcome's variance.
VARIANCE_FLOOR = 1e-6

Gauss = tuple[jax.Array, jax.Array] | None


class LCRShape(NamedTuple):
    """Static sizes: items ``J``, classes ``K``, categories ``C`` (the largest), design ``P``,
    the valid-category mask as a tuple of tuples (hashable for ``jit``), and whether there is
    a continuous outcome (``gaussian``)."""

    n_items: int
    n_classes: int
    n_categories: int
    n_design: int
    valid: tuple[tuple[bool, ...], ...]
    gaussian: bool = False

    @property
    def mask(self) -> jax.Array:
        return jnp.asarray(np.asarray(self.valid, dtype=bool))

    @property
    def n_items_flat(self) -> int:
        return self.n_items * self.n_classes * self.n_categories


class LCRRuns(NamedTuple):
    """Restarts' outcomes (leading axis: restart)."""

    x: jax.Array
    loglik: jax.Array
    history: jax.Array
    n_iter: jax.Array
    converged: jax.Array


def pack(log_items: jax.Array, coef: jax.Array, gauss: Gauss = None) -> jax.Array:
    """Flat state: the log tables, the free coefficients ``beta_2..K`` (row-major), then a
    continuous outcome's ``mu`` and ``ln sigma``."""
    parts = [log_items.ravel(), coef[:, 1:].ravel()]
    return jnp.concatenate(parts if gauss is None else [*parts, gauss[0], gauss[1]])


def unpack(x: jax.Array, shape: LCRShape) -> tuple[jax.Array, jax.Array, Gauss]:
    """``(log_items (J, K, C), coef (P, K), (mu, ln sigma) or None)`` from :func:`pack`'s
    vector."""
    n, k = shape.n_items_flat, shape.n_classes
    log_items = x[:n].reshape(shape.n_items, k, shape.n_categories)
    m = n + shape.n_design * (k - 1)
    free = x[n:m].reshape(shape.n_design, k - 1)
    coef = jnp.concatenate([jnp.zeros((shape.n_design, 1), x.dtype), free], axis=1)
    return log_items, coef, (x[m:m + k], x[m + k:m + 2 * k]) if shape.gaussian else None


def _item_update(weighted: jax.Array, cells: Cells, shape: LCRShape) -> jax.Array:
    """ML log tables from weighted class responsibilities ``(U, K)``; a class with no count on
    an item keeps a uniform row."""
    counts = jnp.einsum("uk,ujc->jkc", weighted, cells.onehot)
    total = counts.sum(axis=-1, keepdims=True)
    mask = shape.mask[:, None, :]
    uniform = mask / mask.sum(axis=-1, keepdims=True)
    probs = jnp.where(total > 0, counts / jnp.where(total > 0, total, 1.0), uniform)
    return jnp.where(mask, jnp.log(jnp.maximum(probs, TINY)), 0.0)


def _newton(coef: jax.Array, weighted: jax.Array, cells: Cells) -> jax.Array:
    """One safeguarded Newton-Raphson step on ``Q(beta)`` (module docstring)."""
    k = coef.shape[1]
    if k == 1:
        return coef
    design, counts = cells.design, cells.counts

    def q(c):
        return jnp.sum(weighted * log_prevalence(c, design))

    prev = jnp.exp(log_prevalence(coef, design))
    grad = (design.T @ (weighted - counts[:, None] * prev))[:, 1:]
    p = prev[:, 1:]
    curvature = counts[:, None, None] * (jax.vmap(jnp.diag)(p) - p[:, :, None] * p[:, None, :])
    info = jnp.einsum("ua,ub,urs->arbs", design, design, curvature)
    size = design.shape[1] * (k - 1)
    info = info.reshape(size, size)
    ridge = 1e-12 * jnp.maximum(jnp.max(jnp.diag(info)), 1.0)
    delta = jnp.linalg.solve(info + ridge * jnp.eye(size), grad.ravel()).reshape(grad.shape)
    delta = jnp.concatenate([jnp.zeros((design.shape[1], 1)), delta], axis=1)
    steps = jnp.asarray(STEPS)
    candidates = coef[None] + steps[:, None, None] * delta[None]
    values = jax.vmap(q)(candidates)
    values = jnp.where(jnp.isfinite(values), values, -jnp.inf)
    return candidates[jnp.argmax(values)]


def _gauss_update(weighted: jax.Array, cells: Cells, shape: LCRShape) -> Gauss:
    """Weighted class means and (floored) log standard deviations of the outcome."""
    if not shape.gaussian:
        return None
    w = weighted * cells.seen[:, None]
    total = jnp.maximum(w.sum(axis=0), TINY)
    mu = (w * cells.outcome[:, None]).sum(axis=0) / total
    var = (w * (cells.outcome[:, None] - mu[None, :]) ** 2).sum(axis=0) / total
    n = cells.counts * cells.seen
    grand = n @ cells.outcome / jnp.maximum(n.sum(), TINY)
    spread = n @ (cells.outcome - grand) ** 2 / jnp.maximum(n.sum(), TINY)
    return mu, 0.5 * jnp.log(jnp.maximum(var, VARIANCE_FLOOR * jnp.maximum(spread, TINY)))


def m_step(weighted: jax.Array, coef: jax.Array, cells: Cells, shape: LCRShape):
    """Item tables, one Newton step of the coefficients and the outcome's class moments from
    weighted responsibilities."""
    return (_item_update(weighted, cells, shape), _newton(coef, weighted, cells),
            _gauss_update(weighted, cells, shape))


def _step(x: jax.Array, cells: Cells, shape: LCRShape):
    log_items, coef, gauss = unpack(x, shape)
    joint = joint_log(log_items, coef, cells, gauss)
    ll = jax.scipy.special.logsumexp(joint, axis=-1)
    weighted = cells.counts[:, None] * jnp.exp(joint - ll[:, None])
    return cells.counts @ ll, pack(*m_step(weighted, coef, cells, shape))


def _start(key: jax.Array, cells: Cells, shape: LCRShape) -> jax.Array:
    resp = jax.random.dirichlet(key, jnp.ones(shape.n_classes), (cells.counts.shape[0],))
    weighted = cells.counts[:, None] * resp
    shares = weighted.sum(axis=0) / cells.counts.sum()
    coef = jnp.zeros((shape.n_design, shape.n_classes)).at[0].set(
        jnp.log(shares) - jnp.log(shares[0]))
    return pack(_item_update(weighted, cells, shape), coef,
                _gauss_update(weighted, cells, shape))


def _from_free(x: jax.Array, shape: LCRShape) -> jax.Array:
    n = shape.n_items_flat
    items = x[:n].reshape(shape.n_items, shape.n_classes, shape.n_categories)
    return jnp.concatenate([normalise_log_items(items, shape.mask).ravel(), x[n:]])


@partial(jax.jit, static_argnames=("shape", "max_iter", "batch_size", "accelerate"))
def run_lcr(cells: Cells, shape: LCRShape, keys: jax.Array, init: jax.Array | None,
            tol_total: float, max_iter: int, batch_size: int, accelerate: bool = True
            ) -> LCRRuns:
    """EM from a random start per key (and from ``init``, a packed state, appended last)."""
    starts = jax.vmap(lambda k: _start(k, cells, shape))(keys)
    if init is not None:
        starts = jnp.concatenate([starts, init[None]])

    def run(x0):
        x, history, n_iter, done = squarem.iterate(
            lambda x: _step(x, cells, shape), x0, lambda x: x,
            lambda x: _from_free(x, shape), tol_total, max_iter, max_iter, accelerate)
        log_items, coef, gauss = unpack(x, shape)
        return LCRRuns(x, cells.counts @ cell_logliks(log_items, coef, cells, gauss), history,
                       n_iter, done)

    return squarem.map_restarts(run, starts, batch_size)
