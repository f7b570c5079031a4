"""Steps 2 and 3 of the bias-adjusted three-step approach as JAX functions (float64): the class
posteriors as a function of the step-1 parameters, the classification-error matrix ``D`` and
the step-3 weights, the step-3 objectives, their maximiser and the standard errors. The
equations and their sources are in :mod:`.three_step`'s docstring; this module is their
arithmetic, written once so that every derivative (the Newton steps, the sandwich's scores, the
step-1 correction's cross derivatives) is an exact JAX derivative of the same expression.

Parameters are flat vectors:

* ``phi`` (step 1): the class log-odds against class 1, then every item row's log-ratios of
  categories 2.. against category 1 (``(item, class, category)`` order);
* ``rho`` (step 3, as reported): the free coefficients ``beta_r`` of classes ``2..K``
  (row-major ``(P, K - 1)``, the order of :class:`~lcbayes.RegressionResult`'s ``coef_cov``),
  then a continuous outcome's class means and variances, or a categorical outcome's
  probabilities of categories ``2..C`` per class (row-major ``(K, C - 1)``);
* ``psi`` (step 3, ML): ``rho`` with log variances and log-odds against category 1 instead,
  so that the ML correction is maximised without constraints.

Rows are padded to a power of two with rows of weight 0 (``Rows.mask``), so that data sets of
similar size share one compiled program.
"""

from __future__ import annotations

import math
import warnings
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp
from scipy.optimize import minimize

from ... import jax_setup  # noqa: F401  (64-bit floats)
from ...information import ginv
from .cells import TINY, normalise_log_items

__all__ = ["MAX_CONDITION", "Layout", "Maximum", "Rows", "admissible", "classification",
           "closed_form_distal", "covariance", "distal_estimate", "estimate_step3",
           "log_posteriors", "maximise", "ml_objective", "psi_to_rho", "rho_to_psi",
           "weighted_objective"]

#: ``D`` more ill-conditioned than this cannot be inverted for BCH weights.
MAX_CONDITION = 1e10
#: Newton steps after the trust region stops (module :func:`maximise`).
POLISH = 3
#: The smallest gradient per row that ``converged`` asks for, whatever ``tol``: rounding.
GRADIENT_FLOOR = 1e-11
#: Log of the normal density's constant.
HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


class Layout(NamedTuple):
    """Static sizes: classes ``K``, design columns ``P``, the outcome's ``kind`` (``"none"``,
    ``"continuous"``, ``"categorical"``) and a categorical outcome's number of categories."""

    n_classes: int
    n_design: int
    kind: str
    n_levels: int

    @property
    def n_beta(self) -> int:
        return self.n_design * (self.n_classes - 1)

    @property
    def n_distal(self) -> int:
        if self.kind == "continuous":
            return 2 * self.n_classes
        if self.kind == "categorical":
            return self.n_classes * (self.n_levels - 1)
        return 0


class Rows(NamedTuple):
    """The rows used, padded: ``onehot`` ``(n, J, C)`` item codes (a missing item a zero row),
    ``valid`` ``(J, C)`` the categories each item has, ``positions`` the flat ``(J, K, C)``
    places of ``phi``'s item log-ratios, ``mask`` ``(n,)`` 1 for a row used, ``assigned``
    ``(n, K)`` the modal assignment, ``design`` ``(n, P)``, ``outcome`` ``(n,)`` a continuous
    outcome (0 otherwise) and ``levels`` ``(n, C_d)`` a categorical outcome one-hot."""

    onehot: jax.Array
    valid: jax.Array
    positions: jax.Array
    mask: jax.Array
    assigned: jax.Array
    design: jax.Array
    outcome: jax.Array
    levels: jax.Array


# ---------------------------------------------------------------------- step 1 and step 2
def _step1_joint(phi: jax.Array, rows: Rows, k: int) -> jax.Array:
    """``(n, K)`` ``ln pi_t + sum_j ln theta_{j t y_ij}`` at ``phi``."""
    log_prior = jax.nn.log_softmax(jnp.concatenate([jnp.zeros(1), phi[:k - 1]]))
    n_items, n_categories = rows.valid.shape
    free = jnp.zeros(n_items * k * n_categories).at[rows.positions].set(phi[k - 1:])
    log_items = normalise_log_items(free.reshape(n_items, k, n_categories), rows.valid)
    return log_prior + jnp.einsum("njc,jkc->nk", rows.onehot, log_items)


@partial(jax.jit, static_argnames=("k",))
def log_posteriors(phi: jax.Array, rows: Rows, k: int) -> jax.Array:
    """``(n, K)`` ``ln P(X = t | y_i)`` of the measurement model at ``phi``."""
    joint = _step1_joint(phi, rows, k)
    return joint - logsumexp(joint, axis=1, keepdims=True)


def _classification(phi: jax.Array, rows: Rows, k: int, modal, bch
                    ) -> tuple[jax.Array, jax.Array, jax.Array]:
    post = jnp.exp(log_posteriors(phi, rows, k))
    w = jnp.where(modal, rows.assigned, post)
    d = (post * rows.mask[:, None]).T @ w / (rows.mask @ post)[:, None]
    return w, d, jnp.where(bch, w @ jnp.linalg.inv(d), w)


#: The assignment ``W`` ``(n, K)``, ``D`` ``(K, K)`` with ``D_ts = P(W = s | X = t)`` and the
#: step-3 class weights ``A`` (``W``, or ``W D^-1`` where ``bch``) at ``phi``; ``modal`` and
#: ``bch`` are booleans (traced, so that every choice shares one compiled program).
classification = jax.jit(_classification, static_argnames=("k",))


# ---------------------------------------------------------------------- step 3
def _coef(beta: jax.Array, layout: Layout) -> jax.Array:
    free = beta.reshape(layout.n_design, layout.n_classes - 1)
    return jnp.concatenate([jnp.zeros((layout.n_design, 1)), free], axis=1)


def _categorical_log(log_p: jax.Array, rows: Rows) -> jax.Array:
    """``(n, K)`` the log probabilities ``(K, C)`` of each row's category."""
    return jnp.where(rows.levels[:, None, :] > 0, log_p[None], 0.0).sum(axis=-1)


def _distal_rho(x: jax.Array, rows: Rows, layout: Layout) -> jax.Array:
    """``(n, K)`` ``ln f(d_i | theta_t)`` in ``rho``'s coordinates, with ``ln |.|`` in place
    of ``ln``: the same value inside the parameter space, and derivatives that are the
    weighted moment equations outside it (a BCH estimate may lie there)."""
    k = layout.n_classes
    if layout.kind == "continuous":
        mean, var = x[:k], x[k:]
        return (-HALF_LOG_2PI - 0.5 * jnp.log(jnp.abs(var))
                - (rows.outcome[:, None] - mean) ** 2 / (2 * var))
    if layout.kind == "categorical":
        free = x.reshape(k, layout.n_levels - 1)
        p = jnp.concatenate([1 - free.sum(axis=1, keepdims=True), free], axis=1)
        return _categorical_log(jnp.log(jnp.abs(p)), rows)
    return jnp.zeros((rows.mask.shape[0], k))


def _distal_psi(x: jax.Array, rows: Rows, layout: Layout) -> jax.Array:
    """``(n, K)`` ``ln f(d_i | theta_t)`` in ``psi``'s coordinates."""
    k = layout.n_classes
    if layout.kind == "continuous":
        mean, log_var = x[:k], x[k:]
        return (-HALF_LOG_2PI - 0.5 * log_var
                - (rows.outcome[:, None] - mean) ** 2 / (2 * jnp.exp(log_var)))
    if layout.kind == "categorical":
        logits = jnp.concatenate([jnp.zeros((k, 1)), x.reshape(k, layout.n_levels - 1)], axis=1)
        return _categorical_log(jax.nn.log_softmax(logits, axis=1), rows)
    return jnp.zeros((rows.mask.shape[0], k))


def weighted_objective(x: jax.Array, w: jax.Array, d: jax.Array, rows: Rows, layout: Layout
                       ) -> jax.Array:
    """``(n,)`` per row ``sum_t A_it [ln P(X = t | z_i) + ln f(d_i | theta_t)]`` at ``rho``
    (no correction: ``A = W``; BCH: ``A = W D^-1``, passed as ``w``; ``d`` is unused)."""
    del d
    nb = layout.n_beta
    term = (jax.nn.log_softmax(rows.design @ _coef(x[:nb], layout), axis=1)
            + _distal_rho(x[nb:], rows, layout))
    return rows.mask * jnp.where(w != 0, w * term, 0.0).sum(axis=1)


_weighted_value = jax.jit(weighted_objective, static_argnames=("layout",))


def ml_objective(x: jax.Array, w: jax.Array, d: jax.Array, rows: Rows, layout: Layout
                 ) -> jax.Array:
    """``(n,)`` per row ``sum_s W_is ln sum_t P(X = t | z_i) f(d_i | theta_t) D_ts`` at
    ``psi`` (Vermunt 2010's ML correction; Bakk, Tekle & Vermunt 2013 for the outcome)."""
    nb = layout.n_beta
    joint = (jax.nn.log_softmax(rows.design @ _coef(x[:nb], layout), axis=1)
             + _distal_psi(x[nb:], rows, layout))
    log_q = logsumexp(joint[:, :, None] + jnp.log(jnp.maximum(d, TINY))[None], axis=1)
    return rows.mask * jnp.where(w > 0, w * log_q, 0.0).sum(axis=1)


def psi_to_rho(psi: jax.Array, layout: Layout) -> jax.Array:
    """``rho`` of ``psi``: variances from log variances, probabilities from log-odds."""
    nb, k = layout.n_beta, layout.n_classes
    if layout.kind == "continuous":
        return jnp.concatenate([psi[:nb + k], jnp.exp(psi[nb + k:])])
    if layout.kind == "categorical":
        logits = jnp.concatenate([jnp.zeros((k, 1)), psi[nb:].reshape(k, -1)], axis=1)
        return jnp.concatenate([psi[:nb], jax.nn.softmax(logits, axis=1)[:, 1:].ravel()])
    return psi


def rho_to_psi(rho: np.ndarray, layout: Layout) -> np.ndarray:
    """``psi`` of an admissible ``rho`` (a start for the ML correction; variances and
    probabilities floored at ``1e-6``)."""
    nb, k = layout.n_beta, layout.n_classes
    if layout.kind == "continuous":
        return np.concatenate([rho[:nb + k], np.log(np.maximum(rho[nb + k:], 1e-6))])
    if layout.kind == "categorical":
        free = rho[nb:].reshape(k, -1)
        p = np.maximum(np.concatenate([1 - free.sum(axis=1, keepdims=True), free], axis=1),
                       1e-6)
        return np.concatenate([rho[:nb], np.log(p[:, 1:] / p[:, :1]).ravel()])
    return rho


def closed_form_distal(a: np.ndarray, rows: Rows, layout: Layout) -> np.ndarray:
    """The outcome's part of ``rho`` maximising the weighted objective: weighted means and
    variances, or weighted proportions (BCH: Bakk, Tekle & Vermunt 2013 §3.2)."""
    weights = np.asarray(a) * np.asarray(rows.mask)[:, None]
    total = weights.sum(axis=0)
    if layout.kind == "continuous":
        y = np.asarray(rows.outcome)[:, None]
        mean = (weights * y).sum(axis=0) / total
        return np.concatenate([mean, (weights * (y - mean) ** 2).sum(axis=0) / total])
    if layout.kind == "categorical":
        p = weights.T @ np.asarray(rows.levels) / total[:, None]
        return p[:, 1:].ravel()
    return np.zeros(0)


# ---------------------------------------------------------------------- the maximiser
@partial(jax.jit, static_argnames=("objective", "layout"))
def _derivatives(x, w, d, rows: Rows, objective, layout: Layout):
    def total(y):
        return objective(y, w, d, rows, layout).sum()

    return total(x), jax.grad(total)(x), jax.hessian(total)(x)


class Maximum(NamedTuple):
    """A maximiser's end: the point, the objective, the largest absolute gradient entry per
    row, trust-region iterations, and whether it converged (gradient at most ``tol`` per row
    and the Hessian negative definite)."""

    x: np.ndarray
    value: float
    gradient: float
    n_iter: int
    converged: bool


def maximise(x0: np.ndarray, w, d, rows: Rows, layout: Layout, *, ml: bool, tol: float,
             max_iter: int) -> Maximum:
    """Maximise the ML objective over ``psi`` (``ml``) or the weighted one over the
    coefficients alone (the outcome's part has a closed form), by Newton's method in a trust
    region (SciPy's ``trust-exact``: exact JAX gradients and Hessians, indefinite Hessians
    handled; the objective scaled per row) and up to :data:`POLISH` plain Newton steps;
    converged: the largest gradient entry per row at most ``max(tol, GRADIENT_FLOOR)`` and
    the Hessian negative definite."""
    objective, layout = (ml_objective, layout) if ml else (
        weighted_objective, layout._replace(kind="none", n_levels=0))
    n = max(float(np.asarray(rows.mask).sum()), 1.0)
    cache: dict[bytes, tuple[float, np.ndarray, np.ndarray]] = {}

    def at(x: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        key = np.asarray(x, dtype=np.float64).tobytes()
        if key not in cache:
            value, grad, hess = _derivatives(jnp.asarray(x), w, d, rows, objective, layout)
            cache.clear()
            cache[key] = (float(value), np.asarray(grad), np.asarray(hess))
        return cache[key]

    done = minimize(lambda x: -at(x)[0] / n, np.asarray(x0, dtype=np.float64),
                    jac=lambda x: -at(x)[1] / n, hess=lambda x: -at(x)[2] / n,
                    method="trust-exact", options={"gtol": tol, "maxiter": max_iter})
    x, n_iter = np.asarray(done.x), int(done.nit)
    value, grad, hess = at(x)
    # the trust region stops once the objective's changes fall below its rounding, which can
    # be before the gradient meets tol: plain Newton steps, kept while the gradient shrinks
    for _ in range(POLISH):
        if not np.isfinite(hess).all() or np.abs(grad).max() / n <= tol:
            break
        step = x - np.linalg.lstsq(hess, grad, rcond=None)[0]
        if not np.abs(at(step)[1]).max() < np.abs(grad).max():
            break
        x, n_iter = step, n_iter + 1
        value, grad, hess = at(x)
    gradient = float(np.abs(grad).max() / n)
    negative = bool(np.linalg.eigvalsh(hess).max() < 0) if np.isfinite(hess).all() else False
    return Maximum(x, value, gradient, n_iter, bool(
        np.isfinite(value) and gradient <= max(tol, GRADIENT_FLOOR) and negative))


# ---------------------------------------------------------------------- standard errors
def _objective(ml: bool):
    return ml_objective if ml else weighted_objective


@partial(jax.jit, static_argnames=("layout", "ml"))
def _scores(x, w, d, rows: Rows, layout: Layout, ml: bool):
    """The rows' score products ``B``, the Hessian ``H`` and ``d rho / d x``."""
    def per_row(y):
        return _objective(ml)(y, w, d, rows, layout)

    scores = jax.jacfwd(per_row)(x)
    jac = jax.jacfwd(lambda y: psi_to_rho(y, layout))(x) if ml else jnp.eye(x.shape[0])
    return scores.T @ scores, jax.hessian(lambda y: per_row(y).sum())(x), jac


@partial(jax.jit, static_argnames=("layout", "ml"))
def _cross(x, phi, rows: Rows, layout: Layout, modal, bch, ml: bool):
    """``d^2 Q / d x d phi``: step 3's score moved by step 1's parameters through the
    posteriors, ``D`` and the weights."""
    def score(p):
        w, d, a = _classification(p, rows, layout.n_classes, modal, bch)
        return jax.grad(lambda y: _objective(ml)(y, w if ml else a, d, rows, layout).sum())(x)

    return jax.jacfwd(score)(phi)


@partial(jax.jit, static_argnames=("k",))
def _step1_information(phi, rows: Rows, k: int):
    """The observed information of step 1's log-likelihood in ``phi``."""
    return -jax.hessian(lambda p: (rows.mask * logsumexp(_step1_joint(p, rows, k), axis=1))
                        .sum())(phi)


def covariance(x: np.ndarray, phi: np.ndarray, rows: Rows, layout: Layout, *, modal: bool,
               bch: bool, ml: bool, sandwich: bool, corrected: bool) -> np.ndarray:
    """The covariance of ``rho`` (:mod:`.three_step`, "Standard errors"): the inverse of the
    step-3 information, or the sandwich ``H^-1 B H^-1``; with ``corrected`` plus
    ``G V_1 G^T``, ``G = d rho / d phi`` by the implicit function theorem and ``V_1`` the
    inverse observed information of step 1. ``x`` is ``psi`` for the ML correction, ``rho``
    otherwise."""
    at, phi_at = jnp.asarray(x), jnp.asarray(phi)
    flags = jnp.asarray(modal), jnp.asarray(bch)
    w, d, a = classification(phi_at, rows, k=layout.n_classes, modal=flags[0], bch=flags[1])
    meat, hess, jac = (np.asarray(v) for v in _scores(at, w if ml else a, d, rows, layout, ml))
    bread = ginv(-hess)
    cov = bread @ meat @ bread if sandwich else bread
    if corrected:
        g = bread @ np.asarray(_cross(at, phi_at, rows, layout, *flags, ml))
        info = np.asarray(_step1_information(phi_at, rows, k=layout.n_classes))
        cov = cov + g @ ginv(info) @ g.T
    return jac @ cov @ jac.T


def admissible(rho: np.ndarray, layout: Layout) -> bool:
    """Whether the outcome's part of ``rho`` is inside the parameter space."""
    distal = distal_estimate(rho[layout.n_beta:], layout)
    if distal is None:
        return True
    return bool((distal[:, 1] > 0).all() if layout.kind == "continuous"
                else (distal >= 0).all())


def distal_estimate(free: np.ndarray, layout: Layout) -> np.ndarray | None:
    """``(K, 2)`` means and variances or ``(K, C)`` probabilities of the outcome's ``rho``."""
    k = layout.n_classes
    if layout.kind == "continuous":
        return np.stack([free[:k], free[k:]], axis=1)
    if layout.kind == "categorical":
        free = free.reshape(k, layout.n_levels - 1)
        return np.concatenate([1 - free.sum(axis=1, keepdims=True), free], axis=1)
    return None


def estimate_step3(rows: Rows, layout: Layout, w: np.ndarray, d: np.ndarray, correction: str,
                   tol: float, max_iter: int) -> tuple[np.ndarray, np.ndarray, Maximum, float]:
    """Step 3's estimate: the maximiser's point (``rho``, or ``psi`` for ML), ``rho``, the
    maximiser's end and the objective there."""
    def weighted(a: np.ndarray) -> tuple[np.ndarray, Maximum]:
        shares = (a * np.asarray(rows.mask)[:, None]).sum(axis=0)
        start = np.zeros((layout.n_design, layout.n_classes - 1))
        if (shares > 0).all():
            start[0] = np.log(shares[1:] / shares[0])
        best = maximise(start.ravel(), jnp.asarray(a), jnp.asarray(d), rows, layout, ml=False,
                        tol=tol, max_iter=max_iter)
        return np.concatenate([best.x, closed_form_distal(a, rows, layout)]), best

    if correction != "ml":
        a = w if correction == "none" else w @ np.linalg.inv(d)
        rho, best = weighted(a)
        if correction == "bch" and not admissible(rho, layout):
            warnings.warn("BCH puts the outcome's variance or a probability outside the "
                          "parameter space (negative weighted counts: the classes are poorly "
                          "separated); correction='ml' cannot leave it", stacklevel=3)
        value = float(_weighted_value(jnp.asarray(rho), jnp.asarray(a), jnp.asarray(d), rows,
                                      layout).sum())
        return rho, rho, best, value
    starts = [weighted(w)[0]]
    if np.linalg.cond(d) < MAX_CONDITION:
        bch = weighted(w @ np.linalg.inv(d))[0]
        if admissible(bch, layout):
            starts.append(bch)
    fits = [maximise(rho_to_psi(s, layout), jnp.asarray(w), jnp.asarray(d), rows, layout,
                     ml=True, tol=tol, max_iter=max_iter) for s in starts]
    best = max(fits, key=lambda f: f.value if np.isfinite(f.value) else -np.inf)
    return best.x, np.asarray(psi_to_rho(jnp.asarray(best.x), layout)), best, best.value
