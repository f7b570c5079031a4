"""The importance density of one posterior mode of a latent class model, symmetrised over the
``K!`` relabellings of its classes: what :mod:`lcbayes.samplers.gibbs_bridge` bridges with.

A warp density in the spirit of Meng & Schilling (2002) and the R package bridgesampling
(Gronau et al. 2017), made to factor over the classes so that its symmetrisation stays exact:

    q_L(theta) = Dir(pi | a) prod_k [N(u_k; mu_k, Sigma_k) J_k + prod_j Dir(theta_kj | b_kj)] / 2,

``u_k`` the additive log-ratio coordinates of class ``k``'s item tables (``ln theta_kjr -
ln theta_kj,last`` for every item ``j`` and category ``r`` but the last), ``J_k = prod_jr
theta_kjr^-1`` the Jacobian from those coordinates to the tables' simplices (the density is
then in the simplex basis, as the prior's). ``mu_k``, ``Sigma_k`` are the mean and covariance of
a mode's draws after their classes are matched to the mode's optimum (:func:`fit`, the
Hungarian method on the draws' item tables), ``a`` the Dirichlet with the draws' mean weights
and their pooled precision (moments), ``b_kj = lambda_kj + E[N_kjr]`` the complete-data
posterior at the draws' mean counts: the defensive half, which holds a class that is empty or
nearly so (an over-fitted ``K``), whose tables are near the prior and far from Gaussian. Both
factors are products over the classes, so

    q(theta) = (1/K!) sum_sigma q_L(sigma theta) = perm(exp A) / (K! B(a)),
    A[k, c] = (a_c - 1) ln pi_k + ln [N(u(theta_k); mu_c, Sigma_c) J(theta_k)
                                      + prod_j Dir(theta_kj | b_cj)] - ln 2,

the permanent of a ``K x K`` matrix (:func:`lcbayes.samplers.bridge.log_permanent`): ``K^2``
Gaussian densities and ``K 2^(K-1)`` terms a point, cheap at any ``K`` that a data set supports.
Inactive class slots (padding) are matched to themselves.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp

from ..engines.dirichlet import log_normaliser
from ..engines.gamma_sampler import log_gamma
from ..jax_setup import on_device
from .bridge import log_permanent

__all__ = ["RIDGE", "ModeDensity", "coordinates", "draw", "fit", "log_density"]

#: Added to the covariance's diagonal (log-ratio units squared): classes whose draws barely
#: move (a category never seen in a large class) keep a proper Gaussian.
RIDGE = 1e-6


class ModeDensity(NamedTuple):
    """``q`` of one mode on ``S`` slots: Dirichlet ``alpha (S,)`` of the weights, ``mu (S, D)``
    and the Cholesky factors ``chol (S, D, D)`` of the class blocks (``D`` log-ratio
    coordinates a class) with their inverses ``whiten`` (a matrix product, not a triangular
    solve: jaxlib's batched LAPACK calls can deadlock inside ``lax.map`` on a CPU), the
    defensive Dirichlets ``shapes (S, J, R)`` (1 in padded categories), and the
    coordinates' layout: ``items``, ``cats`` ``(D,)`` the item and category of each
    coordinate, ``last (D,)`` its item's last category."""

    alpha: jax.Array
    mu: jax.Array
    chol: jax.Array
    whiten: jax.Array
    shapes: jax.Array
    items: jax.Array
    cats: jax.Array
    last: jax.Array


def _layout(categories: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(items, cats, last)`` of the coordinates (:class:`ModeDensity`)."""
    categories = np.asarray(categories)
    last = categories.sum(1) - 1
    items, cats = np.nonzero(categories & (np.arange(categories.shape[1])[None, :]
                                           < last[:, None]))
    return items, cats, last[items]


def coordinates(layout, log_theta) -> jax.Array:
    """``(..., S, D)`` the log-ratio coordinates of tables ``log_theta (..., S, J, R)``;
    ``layout`` is ``(items, cats, last)`` (:class:`ModeDensity`'s)."""
    items, cats, last = layout
    return log_theta[..., items, cats] - log_theta[..., items, last]


def _tables(q: ModeDensity, categories, u: jax.Array) -> jax.Array:
    """``(S, J, R)`` log tables of coordinates ``u (S, D)`` (the inverse of
    :func:`coordinates`)."""
    full = jnp.zeros((u.shape[0], *categories.shape)).at[:, q.items, q.cats].set(u)
    full = jnp.where(categories, full, -jnp.inf)
    return full - logsumexp(full, axis=-1, keepdims=True)


def _match(draws: np.ndarray, pivot: np.ndarray, k: int) -> np.ndarray:
    """``(n, S)`` the permutation of every draw's active classes matching ``pivot``'s."""
    from scipy.optimize import linear_sum_assignment  # loaded here: the CLI loads no optimiser
    n, slots = draws.shape[:2]
    cost = np.abs(draws[:, :k, None] - pivot[None, None, :k]).sum(axis=(-2, -1))
    perms = np.tile(np.arange(slots), (n, 1))
    for i in range(n):
        rows, cols = linear_sum_assignment(cost[i])
        perms[i, cols] = rows
    return perms


def fit(categories, k: int, log_weights: np.ndarray, log_theta: np.ndarray, n_kjr: np.ndarray,
        lam: np.ndarray, pivot_theta: np.ndarray) -> ModeDensity:
    """``q`` of one mode (module docstring) from its draws ``log_weights (n, S)``, ``log_theta
    (n, S, J, R)`` and their allocations' class counts ``n_kjr (n, S, J, R)``, their classes
    matched to ``pivot_theta (S, J, R)`` (probabilities) first; ``lam (S, J, R)`` the prior."""
    categories = np.asarray(categories)
    theta = np.where(categories, np.exp(log_theta), 0.0)
    perms = _match(theta, np.where(categories, pivot_theta, 0.0), k)
    rows = np.arange(perms.shape[0])[:, None]
    log_theta, log_weights = log_theta[rows, perms], log_weights[rows, perms]
    shapes = np.where(categories, np.asarray(lam) + n_kjr[rows, perms].mean(0), 1.0)
    layout = _layout(categories)
    u = np.asarray(coordinates(layout, on_device(log_theta)))           # (n, S, D)
    mu = u.mean(0)
    centred = u - mu
    cov = np.einsum("nsd,nse->sde", centred, centred) / max(u.shape[0] - 1, 1)
    cov += RIDGE * np.eye(u.shape[-1])
    weights = np.exp(log_weights[:, :k])
    mean, var = weights.mean(0), weights.var(0, ddof=1) + 1e-12
    precision = float(np.median(mean * (1.0 - mean) / var - 1.0)) if k > 1 else 1.0
    alpha = np.ones(log_weights.shape[1])
    alpha[:k] = np.maximum(mean * max(precision, 1.0), 1e-3)
    chol = np.linalg.cholesky(cov)
    whiten = np.linalg.inv(chol)
    return ModeDensity(on_device(alpha), on_device(mu), on_device(chol),
                       on_device(whiten), on_device(shapes), *map(on_device, layout))


def _log_normal(u, mu, chol, whiten) -> jax.Array:
    """``ln N(u; mu, L L')`` with ``whiten = L^-1``."""
    z = whiten @ (u - mu)
    return (-0.5 * z @ z - jnp.sum(jnp.log(jnp.diagonal(chol)))
            - 0.5 * u.shape[-1] * jnp.log(2.0 * jnp.pi))


def log_density(q: ModeDensity, categories, k, log_weights, log_theta) -> jax.Array:
    """``ln q(theta)`` of one point, symmetrised over the relabellings of the first ``k`` slots
    (module docstring)."""
    slots = log_weights.shape[0]
    active = jnp.arange(slots) < k
    u = coordinates((q.items, q.cats, q.last), log_theta)                 # (S, D)
    gauss = jax.vmap(lambda uk: jax.vmap(lambda m, c, w: _log_normal(uk, m, c, w))(
        q.mu, q.chol, q.whiten))(u)
    safe_t = jnp.where(categories, log_theta, 0.0)
    jacobian = -jnp.sum(safe_t, axis=(-2, -1))                             # (S,)
    shapes = jnp.where(categories, q.shapes, 1.0)
    norm = jnp.sum(log_normaliser(shapes, categories), -1)                  # (S,)
    dirichlet = norm[None, :] + jnp.einsum("cjr,kjr->kc", jnp.where(categories, shapes - 1.0,
                                                                      0.0), safe_t)
    safe_w = jnp.where(active, log_weights, 0.0)
    log_a = ((q.alpha[None, :] - 1.0) * safe_w[:, None]
             + jnp.logaddexp(gauss + jacobian[:, None], dirichlet) - jnp.log(2.0))
    both = active[:, None] & active[None, :]
    idle = jnp.where(~active[:, None] & ~active[None, :] & jnp.eye(slots, dtype=bool), 0.0,
                     -jnp.inf)
    log_a = jnp.where(both, log_a, idle)
    alpha = jnp.where(active, q.alpha, 1.0)
    weights_norm = log_normaliser(alpha, active)
    return weights_norm + log_permanent(log_a) - jax.lax.lgamma(k + 1.0)


def draw(key, q: ModeDensity, categories, k) -> tuple[jax.Array, jax.Array]:
    """One draw ``(ln pi, ln theta)`` from the symmetrised ``q``: the labelled density (each
    class's tables from its Gaussian block or its Dirichlets, even odds), then a uniformly
    random relabelling of the active classes."""
    slots = q.alpha.shape[0]
    active = jnp.arange(slots) < k
    k_w, k_u, k_d, k_pick, k_perm = jax.random.split(key, 5)
    g = jnp.where(active, log_gamma(k_w, q.alpha), -jnp.inf)
    log_w = g - logsumexp(g)
    u = q.mu + jnp.einsum("sde,se->sd", q.chol, jax.random.normal(k_u, q.mu.shape))
    d = jnp.where(categories, log_gamma(k_d, jnp.where(categories, q.shapes, 1.0)), -jnp.inf)
    gaussian = jax.random.bernoulli(k_pick, 0.5, (slots,))[:, None, None]
    log_t = jnp.where(gaussian, _tables(q, categories, u),
                      d - logsumexp(d, axis=-1, keepdims=True))
    noise = jnp.where(active, jax.random.uniform(k_perm, (slots,)), 2.0 + jnp.arange(slots))
    relabel = jnp.argsort(noise)
    return log_w[relabel], log_t[relabel]
