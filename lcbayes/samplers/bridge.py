"""Bridge sampling of ``ln p(y | K)`` from posterior draws of a latent class model.

Meng & Wong (1996) with Frühwirth-Schnatter's (2004, "Estimating marginal likelihoods for
mixture and Markov switching models using bridge sampling techniques", §3) importance density
for mixtures: the Rao-Blackwellised posterior, a mixture of the complete-data posteriors of
``L`` allocation draws ``z_l``, symmetrised over the ``K!`` relabellings ``sigma``,

    q(theta) = 1 / (L K!) sum_l sum_sigma p(sigma(theta) | z_l, y),

``p(theta | z, y) = Dir(pi | delta + N_k) prod_jk Dir(theta_jk | lambda_jk + N_jk)``. Since both
the weights' and the tables' densities factor over the classes, the inner sum over ``sigma``
is the permanent of the ``K x K`` matrix ``A[k, c] = p(class c of theta | class k's counts of
z_l)``; it is computed exactly as a sum over subsets of columns (``K 2^(K-1)`` terms, every
one positive, so no cancellation; in log space), not over ``K!`` permutations.

With ``p~(theta) = p(y | theta) p(theta)`` (classes summed out) and draws ``theta_i`` from the
posterior (``n_1``) and ``theta~_j`` from ``q`` (``n_2``; a component, its Dirichlet draws, then a
uniformly random relabelling), the optimal bridge estimate ``r = p(y | K)`` solves (Meng & Wong
eq. 4.1, iterated from the importance sampling estimate)::

    r = mean_j [ p~ / (s_1 p~ + s_2 r q) ](theta~_j) / mean_i [ q / (s_1 p~ + s_2 r q) ](theta_i),

``s_i = n_i / (n_1 + n_2)``. The allocation draws and the posterior draws come from different halves
of Gibbs chains (:mod:`lcbayes.samplers.gibbs_bridge`), so ``q`` is not fitted to the draws it
is bridged with; independent runs give independent estimates, whose spread is the error bar.
"""

from __future__ import annotations

import functools
import itertools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln, logsumexp

from ..engines.dirichlet import log_normaliser
from .gibbs import LCPrior, draw_dirichlets
from .particle_weights import ess
from .particles import Particles, pattern_loglik

__all__ = ["BRIDGE_ITERATIONS", "Components", "batch_size", "bridge_fixed_point",
           "bridge_relative_error",
           "components_of", "draw_q", "log_permanent", "log_prior", "log_q", "log_target"]

#: Fixed-point iterations of the bridge equation (it converges in a few dozen).
BRIDGE_ITERATIONS = 200
#: Points whose ``ln q`` are computed at once: about this many subset terms per batch.
BATCH_TERMS = 2 ** 22


@functools.cache
def _subset_plan(k: int) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """For rows ``0 .. k-1`` of the subset sum: the column sets ``T`` of size ``row + 1``
    (``columns (C(k, row+1), row+1)``) and, per column ``c`` of ``T``, the index of
    ``T - c`` among the sets of the row before (``before``, same shape)."""
    plan = []
    earlier: dict[tuple[int, ...], int] = {(): 0}
    for size in range(1, k + 1):
        sets = list(itertools.combinations(range(k), size))
        before = [[earlier[tuple(x for x in t if x != c)] for c in t] for t in sets]
        plan.append((np.asarray(before, dtype=np.int32), np.asarray(sets, dtype=np.int32)))
        earlier = {t: i for i, t in enumerate(sets)}
    return tuple(plan)


def log_permanent(log_a: jax.Array) -> jax.Array:
    """``ln perm(A) = ln sum_sigma prod_k A[k, sigma(k)]`` of a square matrix given as
    ``ln A`` (``-inf`` allowed), by the sum over subsets: ``f_k(T) = sum_{c in T}
    f_{k-1}(T - c) A[k, c]`` over the sets ``T`` of ``k`` columns, ``perm = f_K(all)``.

    Row ``k`` visits only the ``C(K, k)`` sets of its size (``K 2^(K-1)`` terms in all: 192 at
    ``K = 6``), in log space (a log-sum-exp per set): the entries of ``A`` span thousands of
    nats (the weights' Dirichlet puts ``(delta_k + N_k - 1) ln pi_c`` in every entry), so the
    matching that carries the permanent can use entries far below their row's largest, which
    a fixed scaling in linear space underflows."""
    f = jnp.zeros(1)
    for row, (before, columns) in enumerate(_subset_plan(log_a.shape[0])):
        f = logsumexp(f[before] + log_a[row][columns], axis=1)
    return f[0]


def _log_dirichlet_parts(prior: LCPrior, categories, n_k, n_kjr, k):
    """Per class slot of one allocation draw: ``(shape - 1)`` of the weights and tables and the
    log normalisers, on the active slots."""
    weight_shape = prior.delta + n_k
    table_shape = jnp.where(categories, prior.lam + n_kjr, 1.0)
    table_norm = jnp.sum(log_normaliser(table_shape, categories), -1)
    active = jnp.arange(n_k.shape[0]) < k
    total = gammaln(jnp.sum(jnp.where(active, weight_shape, 0.0)))
    return weight_shape - 1.0, table_shape - 1.0, table_norm - gammaln(weight_shape), total


class Components(NamedTuple):
    """The complete-data posteriors of ``L`` allocation draws, as ``q`` needs them (computed
    once, not per point): ``w_shape (L, S)`` and ``t_shape (L, S, J, R)`` the Dirichlet shapes
    less one (zero on padded categories), ``norm (L, S)`` the per-class log normalisers and
    ``total (L,)`` the weights' ``ln Gamma(sum shape)``."""

    w_shape: jax.Array
    t_shape: jax.Array
    norm: jax.Array
    total: jax.Array


def components_of(prior: LCPrior, categories, k, draws: Particles) -> Components:
    """:class:`Components` of the allocation counts ``draws.n_k``, ``draws.n_kjr``."""
    w_shape, t_shape, norm, total = jax.vmap(
        lambda n_k, n_kjr: _log_dirichlet_parts(prior, categories, n_k, n_kjr, k))(
        draws.n_k, draws.n_kjr)
    return Components(w_shape, jnp.where(categories, t_shape, 0.0), norm, total)


def log_q(categories, k, components: Components, log_weights, log_theta) -> jax.Array:
    """``ln q(theta)`` of one point ``(ln pi (S,), ln theta (S, J, R))`` under the symmetrised
    mixture of the components' complete-data posteriors (module docstring); only the first
    ``k`` slots are classes (the others are matched to themselves with factor one)."""
    slots = log_weights.shape[0]
    active = jnp.arange(slots) < k
    safe_w = jnp.where(active, log_weights, 0.0)
    safe_t = jnp.where(categories, log_theta, 0.0)
    both = active[:, None] & active[None, :]
    idle = jnp.where(~active[:, None] & ~active[None, :] & jnp.eye(slots, dtype=bool), 0.0,
                     -jnp.inf)
    log_a = (components.w_shape[:, :, None] * safe_w[None, None, :]
             + jnp.einsum("lkjr,cjr->lkc", components.t_shape, safe_t)
             + components.norm[:, :, None])
    log_a = jnp.where(both[None], log_a, idle[None])
    per = components.total + jax.vmap(log_permanent)(log_a)
    return logsumexp(per) - jnp.log(per.shape[0]) - jax.lax.lgamma(k + 1.0)


def log_prior(prior: LCPrior, categories, k, log_weights, log_theta) -> jax.Array:
    """``ln p(pi, theta)``: Dirichlet densities (simplex basis) of the active slots."""
    active = jnp.arange(log_weights.shape[0]) < k
    zeros_n = jnp.zeros(log_weights.shape)
    w_shape, t_shape, norm, total = _log_dirichlet_parts(prior, categories, zeros_n,
                                                         jnp.zeros(log_theta.shape), k)
    rows = norm + gammaln(w_shape + 1.0) + jnp.sum(
        jnp.where(categories, t_shape * log_theta, 0.0), axis=(-2, -1))
    weights = total - jnp.sum(jnp.where(active, gammaln(w_shape + 1.0), 0.0)) + jnp.sum(
        jnp.where(active, w_shape * log_weights, 0.0))
    return weights + jnp.sum(jnp.where(active, rows, 0.0))


def draw_q(key, prior: LCPrior, categories, k, components: Particles):
    """One draw from ``q``: a component, its Dirichlet draws, a random relabelling of the
    active classes."""
    slots = prior.delta.shape[0]
    k_pick, k_dir, k_perm = jax.random.split(key, 3)
    pick = jax.random.randint(k_pick, (), 0, components.n_k.shape[0])
    active = jnp.arange(slots) < k
    log_w, log_t = draw_dirichlets(k_dir, prior.delta + components.n_k[pick],
                                   prior.lam + components.n_kjr[pick], categories, active)
    noise = jnp.where(active, jax.random.uniform(k_perm, (slots,)), 2.0 + jnp.arange(slots))
    relabel = jnp.argsort(noise)
    return log_w[relabel], log_t[relabel]


def bridge_fixed_point(l1: jax.Array, l2: jax.Array, log_w1: jax.Array | None = None,
                       iterations: int = BRIDGE_ITERATIONS) -> tuple[jax.Array, jax.Array]:
    """``(ln r, ln IS)``: Meng & Wong's (1996, eq. 4.1) optimal bridge estimate of the
    normaliser of an unnormalised density ``f`` from ``l1 = ln f - ln q`` at draws from
    ``f / r`` and ``l2 = ln f - ln q`` at draws from the normalised ``q``, iterated from the
    importance sampling estimate ``ln IS = ln mean exp(l2)``::

        r = mean_j [f / (s_1 f + s_2 r q)](q draws) / E_f[q / (s_1 f + s_2 r q)],

    ``s_i = n_i / (n_1 + n_2)``. ``log_w1``: log importance weights of the draws from ``f``
    where they come from another density (the expectation over ``f`` is then their weighted
    mean, and ``n_1`` their effective number)."""
    if log_w1 is None:
        log_w1 = jnp.zeros(l1.shape)
    log_w1 = log_w1 - logsumexp(log_w1)
    n1 = ess(log_w1)          # effective number of the f draws
    n2 = l2.shape[0]
    log_s1, log_s2 = jnp.log(n1 / (n1 + n2)), jnp.log(n2 / (n1 + n2))
    log_is = logsumexp(l2) - jnp.log(n2)

    def iterate(log_r, _):
        num = logsumexp(l2 - jnp.logaddexp(log_s1 + l2, log_s2 + log_r)) - jnp.log(n2)
        den = logsumexp(log_w1 - jnp.logaddexp(log_s1 + l1, log_s2 + log_r))
        return num - den, None

    return jax.lax.scan(iterate, log_is, None, length=iterations)[0], log_is


def bridge_relative_error(l1: np.ndarray, l2: np.ndarray, log_r: float,
                          chains: int) -> tuple[float, float]:
    """``(RE, ESS)``: Frühwirth-Schnatter's (2004, eq. 14) relative mean squared error of a
    bridge estimate ``r`` (:func:`bridge_fixed_point`), as Gronau et al. (2017, "A tutorial on
    bridge sampling", eq. 17) compute it::

        RE^2 = Var_q(f_2) / (n_2 E_q(f_2)^2) + rho_f1(0) Var(f_1) / (n_1 E(f_1)^2),
        f_1 = q / (s_1 f/r + s_2 q)  at the draws from f,
        f_2 = (f/r) / (s_1 f/r + s_2 q)  at the draws from q,

    ``rho_f1(0) = n_1 / ESS(f_1)`` the normalised spectral density at frequency zero of the
    autocorrelated ``f_1`` (ArviZ's effective sample size of the mean over ``chains`` chains,
    ``l1`` chain after chain). The standard error of ``ln r`` is ``RE`` (delta method)."""
    from .idata import arviz
    n1, n2 = l1.size, l2.size
    log_s1, log_s2 = np.log(n1 / (n1 + n2)), np.log(n2 / (n1 + n2))
    f1 = np.exp(-np.logaddexp(log_s1 + l1 - log_r, log_s2))
    f2 = np.exp(l2 - log_r - np.logaddexp(log_s1 + l2 - log_r, log_s2))
    ess = float(arviz().ess(f1.reshape(chains, -1), method="mean"))
    re2 = (f2.var(ddof=1) / (n2 * f2.mean() ** 2)
           + f1.var(ddof=1) / (min(ess, n1) * f1.mean() ** 2))
    return float(np.sqrt(re2)), ess


def log_target(one_hot, counts, categories, prior: LCPrior, k, log_w, log_t) -> jax.Array:
    """``ln p(y | pi, theta) + ln p(pi, theta)`` of one point (classes summed out)."""
    return (counts @ pattern_loglik(one_hot, categories, log_w, log_t)
            + log_prior(prior, categories, k, log_w, log_t))


def batch_size(components: int, slots: int) -> int:
    """Points whose ``ln q`` are computed at once (about :data:`BATCH_TERMS` subset terms)."""
    return max(1, BATCH_TERMS // (components * slots * 2 ** slots))
