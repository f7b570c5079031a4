"""Reversible-jump MCMC over the number of classes ``K`` of a latent class model.

Whiley (1999) chapter 5 (notes §5.1-5.2), after Richardson & Green (1997), for polytomous items.
Target: ``p(K) p(pi | K) p(theta | K) p(z | pi) p(y | z, theta)`` (Whiley eq. 5.7) with
``pi | K ~ Dir(delta, .., delta)``, every ``theta_jk ~ Dir(lambda_j)`` (one ``lambda_j`` per item,
shared by the exchangeable classes), ``p(K)`` on ``1 .. max_classes``. Its marginal over ``K`` is
``p(K | y) ∝ p(K) p(y | K)`` with ``p(y | K)`` the evidence of the ``K``-class model that
:func:`lcbayes.exact_evidence` computes. Missing values are factors of one; rows with none
observed are left out (their class sums out).

A sweep (Whiley §5.2.1): (a)-(c) the Gibbs updates of :mod:`lcbayes.gibbs` at the current ``K``;
(d) split with probability ``b_K``, else merge; (e) birth with probability ``b_K``, else death.
``b_1 = 1``, ``b_max = 0``, else ``b_K = d_K = 1/2``, ``d_K = 1 - b_K``.

**Split** ``j* -> (j1, j2)``: ``j*`` uniform among the ``K`` classes; ``u1 ~ U(0, 1)`` and, per
item ``j`` and category ``r`` other than ``r_j = argmax_r theta_{j*r}`` (the *determined*
category; a function of ``theta*`` alone, so merge finds the same one), ``u2_jr ~ U(0, 1)``::

    p1 = u1 p*,  p2 = (1 - u1) p*
    theta_1jr = u2_jr theta*_jr / u1,   theta_2jr = (1 - u2_jr) theta*_jr / (1 - u1)
    theta_1j,r_j = 1 - sum_{r != r_j} theta_1jr   (likewise theta_2), rejected if <= 0,

so ``p1 theta_1 + p2 theta_2 = p* theta*``: Whiley's binary-item map (``theta > 1`` rejected)
is the case ``R = 2``. Rows in ``j*`` move to ``j1`` or ``j2`` with probability
``∝ p_i f(y | theta_i)``, ``P_alloc`` the product of the chosen probabilities (D.7). The
Jacobian (Whiley D.9, per free category; the weight block and the item blocks are triangular)::

    |d(p1, p2, theta_1, theta_2) / d(p*, u1, theta*, u2)| = p* prod_j prod_{r != r_j}
                                                           theta*_jr / (u1 (1 - u1))

**Merge** ``(j1, j2) -> j*``: an unordered pair uniform among ``C(K, 2)``; ``p* = p1 + p2``,
``theta* = (p1 theta_1 + p2 theta_2) / p*``, rows of both move to ``j*``. The inverse of split.

Acceptance of a split from ``K`` is ``min(1, A_S)`` with (Whiley eq. 5.8)::

    A_S = [p(y | z', theta') p(z' | pi') / (p(y | z, theta) p(z | pi))] [p(K+1) / p(K)]
          Γ((K+1) δ) / (Γ(δ) Γ(K δ)) (p1 p2 / p*)^(δ-1)
          prod_j Dir(theta_1j | λ_j) Dir(theta_2j | λ_j) / Dir(theta*_j | λ_j)
          d_{K+1} / (b_K P_alloc g(u)) |J|,

``g(u) = 1`` (uniform ``u``), and of a merge to ``K`` classes ``min(1, 1 / A_S)`` with ``A_S``
of the reverse split. Both choices cancel the labels: the state is a set of classes, whose
density carries ``K!``; split picks ``j*`` with ``b_K / K`` and gives the unordered pair
``{j1, j2}`` from two ``u`` (``u1 -> 1 - u1``, ``u2 -> 1 - u2`` swaps them), merge picks it with
``d_{K+1} / C(K+1, 2)``, and ``(K+1) (K / 2) (2 / (K (K+1))) = 1``. Since
``p_i f(y | theta_i) / q_i = p1 f(y | theta_1) + p2 f(y | theta_2)`` for the chosen class
``i`` of a moved row, the first factor over ``P_alloc`` is computed as
``prod_{rows in j*} [p1 f(y | theta_1) + p2 f(y | theta_2)] / [p* f(y | theta*)]``.

**Birth** of an empty class (Richardson & Green §3.2): ``w ~ Beta(1, K)``, ``theta_new`` from
the prior, the other weights scaled by ``1 - w`` (Jacobian ``(1 - w)^(K-1)``), ``z`` unchanged.
**Death**: an empty class uniform among the ``K0 + 1`` empty ones (rejected when there is
none), weights renormalised. With ``N`` the rows in the chain and ``K0`` the empty classes
before the birth, birth's ratio is (R&G's, whose ``(K+1)`` counts the orderings of the new
state, as ``K!`` does above; the ``theta_new`` prior and proposal cancel)::

    A_B = [p(K+1) / p(K)] [Γ((K+1) δ) / (Γ(K δ) Γ(δ))] w^(δ-1) (1 - w)^(N + K (δ-1))
          (K+1) / (K0 + 1) · d_{K+1} / b_K · (1 - w)^(K-1) / g_{1,K}(w),

``g_{1,K}(w) = K (1 - w)^(K-1)``, and death's is ``1 / A_B`` of the reverse birth. Whiley's
(5.10) and (5.14) omit ``(K+1) / (K0 + 1)``. It is 1 when every class is empty (no data), so
only data reveal its omission: the posterior of ``K`` then departs from the exact one (total
variation 0.24 instead of at most 0.013 in ``tests/test_rjmcmc.py``). With ``δ = 1``:
``A_B = [p(K+1) / p(K)] (K+1) / (K0 + 1) (1 - w)^N d_{K+1} / b_K``.

Padding: ``max_classes`` slots, the first ``K`` active (merge and death shift the later slots
down), so the whole sampler is one jitted ``lax.scan`` (:func:`lcbayes.gibbs.kept_counts`
sweeps per kept draw), chains vmapped, float64.

Example::

    idata = lcb.rjmcmc(data, max_classes=6, draws=5000, warmup=1000, seed=0)
    lcb.posterior_k(idata)     # {1: 0.0, 2: 0.61, 3: 0.33, ...}
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln, logsumexp
from scipy.special import gammaln as np_gammaln

from .data import Dataset
from .errors import LcbayesError
from .gibbs import (
    LCData,
    LCPrior,
    LCState,
    allocation_counts,
    check_count,
    gibbs_sweep,
    init_state,
    kept_counts,
    lc_data,
    log_joint_parts,
    pattern_log_lik,
    sweeps,
)
from .idata import lc_inference_data
from .params import PriorSpec, proper_prior_tables
from .structure import latent_class

__all__ = ["MOVES", "posterior_k", "rjmcmc"]

#: Move types, in the order of the ``proposed`` / ``accepted`` sample statistics.
MOVES = ("split", "merge", "birth", "death")


class _Hyper(NamedTuple):
    """What the dimension moves need: ``ln p(K)`` for ``K = 1..S``, ``delta``, ``lam (J, R)``
    and ``ln Γ(sum_r λ_jr) - sum_r ln Γ(λ_jr)`` per item."""

    log_prior_k: jax.Array
    delta: jax.Array
    lam: jax.Array
    log_norm: jax.Array


def _log_b(k, slots):
    """``ln b_K`` (split / birth probability)."""
    return jnp.log(jnp.where(k >= slots, 0.0, jnp.where(k <= 1, 1.0, 0.5)))


def _log_d(k, slots):
    """``ln d_K = ln(1 - b_K)``."""
    return jnp.log(jnp.where(k >= slots, 1.0, jnp.where(k <= 1, 0.0, 0.5)))


def _log_prior_k(hyper: _Hyper, k):
    """``ln p(K)`` (``-inf`` outside ``1 .. S``)."""
    slots = hyper.log_prior_k.shape[0]
    inside = (k >= 1) & (k <= slots)
    return jnp.where(inside, hyper.log_prior_k[jnp.clip(k - 1, 0, slots - 1)], -jnp.inf)


def _determined(log_theta, categories):
    """``(J, R)`` True at each item's determined category ``argmax_r theta_jr``."""
    best = jnp.argmax(jnp.where(categories, log_theta, -jnp.inf), axis=-1)
    return jax.nn.one_hot(best, categories.shape[-1], dtype=bool)


def _split_log_ratio(hyper: _Hyper, categories, slots, k, log_p1, log_p2, log_ps, lt1, lt2, lts,
                     log_u1, log_v1, free, n_p, a, b, c):
    """``ln A_S`` (module docstring) of a split from ``k`` classes. ``n_p``: rows per pattern in
    ``j*``; ``a, b, c``: per pattern ``ln p1 f(y | theta_1)``, ``ln p2 f(y | theta_2)`` and
    ``ln p* f(y | theta*)``."""
    delta = hyper.delta
    lik = n_p @ (jnp.logaddexp(a, b) - c)
    dims = _log_prior_k(hyper, k + 1) - _log_prior_k(hyper, k)
    weights = (gammaln((k + 1) * delta) - gammaln(k * delta) - gammaln(delta)
               + (delta - 1.0) * (log_p1 + log_p2 - log_ps))
    items = jnp.sum(hyper.log_norm) + jnp.sum(
        jnp.where(categories, (hyper.lam - 1.0) * (lt1 + lt2 - lts), 0.0))
    moves = _log_d(k + 1, slots) - _log_b(k, slots)
    jacobian = log_ps + jnp.sum(jnp.where(free, lts - log_u1 - log_v1, 0.0))
    return lik + dims + weights + items + moves + jacobian


def _birth_log_ratio(hyper: _Hyper, slots, n_rows, k, n_empty, log_w, log_1mw):
    """``ln A_B`` (module docstring) of a birth from ``k`` classes with ``n_empty`` empty ones;
    ``(1 - w)^(K-1) / g_{1,K}(w) = 1 / K``."""
    delta = hyper.delta
    return (_log_prior_k(hyper, k + 1) - _log_prior_k(hyper, k)
            + gammaln((k + 1) * delta) - gammaln(k * delta) - gammaln(delta)
            + (delta - 1.0) * log_w + (n_rows + k * (delta - 1.0)) * log_1mw
            + jnp.log(k + 1.0) - jnp.log(n_empty + 1.0)
            + _log_d(k + 1, slots) - _log_b(k, slots) - jnp.log(1.0 * k))


def _remove(state: LCState, slot) -> LCState:
    """Drop class ``slot``: later slots shift down one, ``k`` decreases (weights unchanged)."""
    slots = state.log_weights.shape[0]
    index = jnp.arange(slots)
    source = jnp.minimum(index + (index >= slot), slots - 1)
    k = state.k - 1
    return LCState(k, jnp.where(index < k, state.log_weights[source], -jnp.inf),
                   state.log_theta[source], state.z - (state.z > slot))


def _split(u, data: LCData, hyper: _Hyper, state: LCState, n_pk):
    """Proposed split state, whether it is feasible, and ``ln A_S``. ``u``: (pick, u1,
    u2 (J, R), rows (N,)) uniforms."""
    pick, u1, u2, u_rows = u
    slots, cats = state.log_weights.shape[0], data.categories
    k = state.k
    j = jnp.minimum(jnp.floor(pick * k).astype(jnp.int32), k - 1)
    new = jnp.minimum(k, slots - 1)
    lts, log_ps = state.log_theta[j], state.log_weights[j]
    det = _determined(lts, cats)
    free = cats & ~det
    log_u1, log_v1 = jnp.log(u1), jnp.log1p(-u1)
    parts = []
    for log_share, log_u in ((jnp.log(u2), log_u1), (jnp.log1p(-u2), log_v1)):
        lt_free = log_share + lts - log_u
        rest = 1.0 - jnp.sum(jnp.where(free, jnp.exp(lt_free), 0.0), axis=-1, keepdims=True)
        lt = jnp.where(free, lt_free, jnp.where(det, jnp.log(jnp.where(rest > 0, rest, 1.0)),
                                                -jnp.inf))
        parts.append((lt, jnp.all(rest > 0)))
    (lt1, ok1), (lt2, ok2) = parts
    log_p1, log_p2 = log_ps + log_u1, log_ps + log_v1
    lf = pattern_log_lik(data, jnp.stack([lt1, lt2, lts]))
    a, b, c = log_p1 + lf[:, 0], log_p2 + lf[:, 1], log_ps + lf[:, 2]
    to_first = u_rows < jax.nn.sigmoid(a - b)[data.rows]
    z = jnp.where(state.z == j, jnp.where(to_first, j, new), state.z)
    ratio = _split_log_ratio(hyper, cats, slots, k, log_p1, log_p2, log_ps, lt1, lt2, lts,
                             log_u1, log_v1, free, n_pk[:, j], a, b, c)
    proposal = LCState(k + 1, state.log_weights.at[j].set(log_p1).at[new].set(log_p2),
                       state.log_theta.at[j].set(lt1).at[new].set(lt2), z)
    return proposal, ok1 & ok2, ratio


def _merge(u, data: LCData, hyper: _Hyper, state: LCState, n_pk):
    """Proposed merge state, whether it is possible (``K >= 2``), and ``ln A_C = -ln A_S`` of
    the reverse split. ``u``: two uniforms picking the pair."""
    slots, cats = state.log_weights.shape[0], data.categories
    k = state.k
    first = jnp.minimum(jnp.floor(u[0] * k).astype(jnp.int32), k - 1)
    second = jnp.minimum(jnp.floor(u[1] * (k - 1)).astype(jnp.int32), jnp.maximum(k - 2, 0))
    second = second + (second >= first)
    lo, hi = jnp.minimum(first, second), jnp.maximum(first, second)
    lw, lt = state.log_weights, state.log_theta
    log_ps = jnp.logaddexp(lw[lo], lw[hi])
    log_u1, log_v1 = lw[lo] - log_ps, lw[hi] - log_ps
    lts = jnp.where(cats, jnp.logaddexp(log_u1 + lt[lo], log_v1 + lt[hi]), -jnp.inf)
    free = cats & ~_determined(lts, cats)
    lf = pattern_log_lik(data, jnp.stack([lt[lo], lt[hi], lts]))
    a, b, c = lw[lo] + lf[:, 0], lw[hi] + lf[:, 1], log_ps + lf[:, 2]
    ratio = -_split_log_ratio(hyper, cats, slots, k - 1, lw[lo], lw[hi], log_ps, lt[lo], lt[hi],
                              lts, log_u1, log_v1, free, n_pk[:, lo] + n_pk[:, hi], a, b, c)
    merged = LCState(k, lw.at[lo].set(log_ps), lt.at[lo].set(lts),
                     jnp.where(state.z == hi, lo, state.z))
    return _remove(merged, hi), k >= 2, ratio


def _birth(u_w, spare, data: LCData, hyper: _Hyper, state: LCState, n_k):
    """Proposed birth state (new class in slot ``K``) and ``ln A_B``; always possible."""
    slots = state.log_weights.shape[0]
    k = state.k
    active = jnp.arange(slots) < k
    log_1mw = jnp.log(u_w) / k                       # 1 - w = U^(1/K): w ~ Beta(1, K)
    log_w = jnp.log(-jnp.expm1(log_1mw))
    n_empty = jnp.sum(active & (n_k == 0))
    ratio = _birth_log_ratio(hyper, slots, data.row_weights.sum(), k, n_empty, log_w, log_1mw)
    new = jnp.minimum(k, slots - 1)
    weights = jnp.where(active, state.log_weights + log_1mw, -jnp.inf).at[new].set(log_w)
    proposal = LCState(k + 1, weights, state.log_theta.at[new].set(spare), state.z)
    return proposal, jnp.asarray(True), ratio


def _death(u_pick, data: LCData, hyper: _Hyper, state: LCState, n_k):
    """Proposed death state, whether an empty class exists, and ``ln A_D = -ln A_B`` of the
    reverse birth."""
    slots = state.log_weights.shape[0]
    k = state.k
    index = jnp.arange(slots)
    empty = (index < k) & (n_k == 0)
    n_empty = jnp.sum(empty)
    r = jnp.minimum(jnp.floor(u_pick * n_empty).astype(jnp.int32), n_empty - 1)
    j = jnp.argmax(jnp.cumsum(empty) > r)
    log_w = state.log_weights[j]
    log_1mw = logsumexp(jnp.where((index < k) & (index != j), state.log_weights, -jnp.inf))
    ratio = -_birth_log_ratio(hyper, slots, data.row_weights.sum(), k - 1, n_empty - 1,
                              log_w, log_1mw)
    removed = _remove(state, j)
    return removed._replace(log_weights=removed.log_weights - log_1mw), n_empty > 0, ratio


def _choose(flag, a, b):
    return jax.tree.map(lambda x, y: jnp.where(flag, x, y), a, b)


def _sweep(key, data: LCData, prior: LCPrior, hyper: _Hyper, carry):
    """(a)-(e) of the module docstring; ``carry = (state, proposed (4,), accepted (4,))``."""
    state, proposed, accepted = carry
    slots = prior.delta.shape[0]
    n_rows, width = data.rows.shape[0], data.categories.size
    k_gamma, k_uniform = jax.random.split(key)
    u = jax.random.uniform(k_uniform, (10 + width + 2 * n_rows,),
                           minval=jnp.finfo(jnp.float64).tiny)   # all of the sweep's uniforms
    u2 = u[10:10 + width].reshape(data.categories.shape)
    u_rows, u_gibbs = u[10 + width:10 + width + n_rows], u[10 + width + n_rows:]
    state, spare = gibbs_sweep(k_gamma, u_gibbs, data, prior, state, hyper.lam)

    n_pk = allocation_counts(data, state.z, slots)
    is_split = u[0] < jnp.exp(_log_b(state.k, slots))
    split, split_ok, split_ratio = _split((u[1], u[2], u2, u_rows), data, hyper, state, n_pk)
    merge, merge_ok, merge_ratio = _merge(u[3:5], data, hyper, state, n_pk)
    take_first = jnp.where(is_split, split_ok, merge_ok) & (
        jnp.log(u[5]) < jnp.where(is_split, split_ratio, merge_ratio))
    state = _choose(take_first, _choose(is_split, split, merge), state)

    n_k = jnp.zeros(slots).at[state.z].add(data.row_weights)
    is_birth = u[6] < jnp.exp(_log_b(state.k, slots))
    birth, birth_ok, birth_ratio = _birth(u[7], spare, data, hyper, state, n_k)
    death, death_ok, death_ratio = _death(u[8], data, hyper, state, n_k)
    take_second = jnp.where(is_birth, birth_ok, death_ok) & (
        jnp.log(u[9]) < jnp.where(is_birth, birth_ratio, death_ratio))
    state = _choose(take_second, _choose(is_birth, birth, death), state)

    moved = jnp.stack([is_split, ~is_split, is_birth, ~is_birth])
    took = moved & jnp.stack([take_first, take_first, take_second, take_second])
    return state, proposed + moved.astype(jnp.int32), accepted + took.astype(jnp.int32)


@partial(jax.jit, static_argnums=0)
def _run(draws: int, data: LCData, prior: LCPrior, hyper: _Hyper, keys, k0, warmup, thin):
    """``draws`` kept states of every chain (one per key, starting with ``k0`` classes): one
    ``lax.scan`` over the draws, each running :func:`~lcbayes.gibbs.kept_counts` sweeps."""
    slots = prior.delta.shape[0]

    def step(key, carry):
        return _sweep(key, data, prior, hyper, carry)

    def chain(key, k):
        def body(state, i):
            zeros = jnp.zeros(len(MOVES), dtype=jnp.int32)
            state, proposed, accepted = sweeps(kept_counts(i, warmup, thin), step,
                                               (state, zeros, zeros), jax.random.fold_in(key, i))
            loglik, log_prior = log_joint_parts(data, prior, state)
            log_joint = loglik + log_prior + _log_prior_k(hyper, state.k)
            return state, (state.k, state.log_weights, state.log_theta, loglik, log_joint,
                           proposed, accepted)

        return jax.lax.scan(body, init_state(data, slots, k), jnp.arange(draws))[1]

    return jax.vmap(chain)(keys, k0)


def _prior_k(prior_k, max_classes: int) -> np.ndarray:
    """``p(K)`` for ``K = 1 .. max_classes`` from the ``prior_k`` argument (normalised)."""
    ks = np.arange(1, max_classes + 1)
    if isinstance(prior_k, str):
        if prior_k not in ("uniform", "poisson"):
            raise LcbayesError(f"prior_k must be 'uniform', 'poisson', an array of "
                               f"{max_classes} probabilities or a function of K, got {prior_k!r}")
        p = np.ones(max_classes) if prior_k == "uniform" else np.exp(-np_gammaln(ks + 1.0))
    elif callable(prior_k):
        p = np.array([float(prior_k(int(k))) for k in ks])
    else:
        p = np.asarray(prior_k, dtype=np.float64)
        if p.shape != (max_classes,):
            raise LcbayesError(f"prior_k must hold one probability per K = 1..{max_classes}, got "
                               f"shape {p.shape}")
    if not np.all(np.isfinite(p)) or np.any(p < 0) or p.sum() <= 0:
        raise LcbayesError(f"prior_k must be finite, >= 0 and not all 0, got {p.tolist()}")
    return p / p.sum()


def _hyper(data: Dataset, prior: PriorSpec, p_k: np.ndarray, width: int) -> _Hyper:
    """Exchangeable Dirichlet pseudo-counts (``delta``, ``lam (J, R)``), resolved as for a
    1-class model (so ``prior`` is what :func:`lcbayes.params.dirichlet_prior` accepts)."""
    name = "class"
    while name in data.columns:
        name += "_"
    tables = proper_prior_tables(latent_class(data, 1, name=name), prior, "rjmcmc")
    lam = np.ones((data.n_columns, width))
    for j, table in enumerate(tables[1:]):
        lam[j, :table.shape[1]] = table[0]
    cats = np.arange(width)[None, :] < np.asarray(data.cardinalities)[:, None]
    log_norm = (np_gammaln(np.where(cats, lam, 0.0).sum(-1))
                - np.where(cats, np_gammaln(lam), 0.0).sum(-1))
    return _Hyper(jnp.log(jnp.asarray(p_k)), jnp.asarray(float(tables[0][0, 0])),
                  jnp.asarray(lam), jnp.asarray(log_norm))


def rjmcmc(data: Dataset, max_classes: int = 10, draws: int = 10_000, warmup: int = 2_000,
           chains: int = 4, prior_k: str | np.ndarray | Callable[[int], float] = "uniform",
           seed: int = 0, prior: PriorSpec = "dirichlet", thin: int = 1) -> az.InferenceData:
    """Posterior over the number of classes and the parameters by reversible jump.

    Args:
        data: the data (every column an item); missing values are summed out.
        max_classes: largest ``K`` (>= 2); the state is padded to this many classes.
        draws: kept draws per chain.
        warmup: sweeps discarded before the first kept draw.
        chains: independent chains (vmapped); each starts with ``K`` drawn from ``prior_k``
            and the rows dealt to the classes in turn (:func:`lcbayes.gibbs.init_state`).
        prior_k: ``p(K)`` on ``1 .. max_classes``: ``"uniform"``, ``"poisson"`` (Poisson(1)
            truncated, ``∝ 1 / K!``), an array of ``max_classes`` weights or a function of ``K``.
        seed: random seed; the same seed gives the same draws.
        prior: Dirichlet pseudo-counts of an exchangeable prior, as for a 1-class model: one
            number for everything, or ``{"class": delta, column: number or (r,) array}``.
        thin: keep every ``thin``-th sweep.

    Returns:
        An ``arviz.InferenceData`` (:mod:`lcbayes.idata`) whose posterior holds ``k`` and the
        active classes in the first ``k`` slots (NaN after them); ``sample_stats`` add
        ``proposed`` and ``accepted`` counts per move type (:data:`MOVES`) since the previous
        draw; ``posterior.attrs`` hold ``acceptance_json`` (rate per move) and
        ``posterior_k_json`` (:func:`posterior_k`).
    """
    start = time.perf_counter()
    if not isinstance(data, Dataset):
        raise LcbayesError(f"data must be an lcbayes Dataset, got {type(data).__name__}")
    counts = {name: check_count(name, value, minimum) for name, value, minimum in
              (("max_classes", max_classes, 2), ("draws", draws, 1), ("warmup", warmup, 0),
               ("chains", chains, 1), ("seed", seed, 0), ("thin", thin, 1))}
    slots = counts["max_classes"]
    p_k = _prior_k(prior_k, slots)
    lc = lc_data(data)
    hyper = _hyper(data, prior, p_k, lc.categories.shape[1])
    k0 = np.random.default_rng(counts["seed"]).choice(np.arange(1, slots + 1),
                                                      size=counts["chains"], p=p_k)
    prior_tables = LCPrior(jnp.full(slots, hyper.delta),
                           jnp.broadcast_to(hyper.lam, (slots, *hyper.lam.shape)))
    keys = jax.random.split(jax.random.PRNGKey(counts["seed"]), counts["chains"])
    k, log_w, log_theta, loglik, log_joint, proposed, accepted = map(np.asarray, _run(
        counts["draws"], LCData(*map(jnp.asarray, lc)), prior_tables, hyper, keys,
        jnp.asarray(k0, dtype=jnp.int32), counts["warmup"], counts["thin"]))
    tried, took = proposed.sum(axis=(0, 1)), accepted.sum(axis=(0, 1))
    acceptance = {m: float(took[i] / tried[i]) if tried[i] else None   # None: never proposed
                  for i, m in enumerate(MOVES)}
    idata = lc_inference_data(
        data, np.exp(log_w), np.exp(log_theta), loglik, log_joint, k=k,
        stats={"proposed": (("move",), proposed), "accepted": (("move",), accepted)},
        stat_coords={"move": list(MOVES)},
        attrs={"engine": "rjmcmc", **counts,
               "prior_k_json": json.dumps({i + 1: float(v) for i, v in enumerate(p_k)}),
               "acceptance_json": json.dumps(acceptance)})
    idata.posterior.attrs["posterior_k_json"] = json.dumps(posterior_k(idata))
    idata.posterior.attrs["seconds"] = time.perf_counter() - start
    return idata


def posterior_k(idata: az.InferenceData) -> dict[int, float]:
    """``{K: share of draws with K classes}`` over all chains and draws of an RJMCMC run
    (``K = 1 .. max_classes``)."""
    if "posterior" not in idata.groups() or "k" not in idata.posterior:
        raise LcbayesError("posterior_k needs the InferenceData of lcbayes.rjmcmc (a posterior "
                           "with a 'k' variable)")
    k = np.asarray(idata.posterior["k"]).ravel()
    top = int(idata.posterior.attrs.get("max_classes", k.max()))
    shares = np.bincount(k, minlength=top + 1)[1:top + 1] / k.size
    return {K: float(v) for K, v in enumerate(shares, start=1)}
