"""The moves of the reversible jump sampler (:mod:`lcbayes.samplers.rjmcmc`, whose module
docstring derives them): split and merge, birth and death of an empty class, and one sweep of
the Gibbs updates followed by one move of each pair (Whiley §5.2.1 (a)-(e)). Pure functions of
the chain's :class:`~lcbayes.samplers.gibbs.LCState`, jitted inside the sampler's scan."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.special import gammaln, logsumexp

from .gibbs import (
    LCData,
    LCPrior,
    LCState,
    allocation_counts,
    gibbs_sweep,
    pattern_log_lik,
)

__all__ = ["Hyper", "log_prior_k", "sweep"]


class Hyper(NamedTuple):
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


def log_prior_k(hyper: Hyper, k):
    """``ln p(K)`` (``-inf`` outside ``1 .. S``)."""
    slots = hyper.log_prior_k.shape[0]
    inside = (k >= 1) & (k <= slots)
    return jnp.where(inside, hyper.log_prior_k[jnp.clip(k - 1, 0, slots - 1)], -jnp.inf)


def _determined(log_theta, categories):
    """``(J, R)`` True at each item's determined category ``argmax_r theta_jr``."""
    best = jnp.argmax(jnp.where(categories, log_theta, -jnp.inf), axis=-1)
    return jax.nn.one_hot(best, categories.shape[-1], dtype=bool)


def _split_log_ratio(hyper: Hyper, categories, slots, k, log_p1, log_p2, log_ps, lt1, lt2, lts,
                     log_u1, log_v1, free, n_p, a, b, c):
    """``ln A_S`` (module docstring) of a split from ``k`` classes. ``n_p``: rows per pattern in
    ``j*``; ``a, b, c``: per pattern ``ln p1 f(y | theta_1)``, ``ln p2 f(y | theta_2)`` and
    ``ln p* f(y | theta*)``."""
    delta = hyper.delta
    lik = n_p @ (jnp.logaddexp(a, b) - c)
    dims = log_prior_k(hyper, k + 1) - log_prior_k(hyper, k)
    weights = (gammaln((k + 1) * delta) - gammaln(k * delta) - gammaln(delta)
               + (delta - 1.0) * (log_p1 + log_p2 - log_ps))
    items = jnp.sum(hyper.log_norm) + jnp.sum(
        jnp.where(categories, (hyper.lam - 1.0) * (lt1 + lt2 - lts), 0.0))
    moves = _log_d(k + 1, slots) - _log_b(k, slots)
    jacobian = log_ps + jnp.sum(jnp.where(free, lts - log_u1 - log_v1, 0.0))
    return lik + dims + weights + items + moves + jacobian


def _birth_log_ratio(hyper: Hyper, slots, n_rows, k, n_empty, log_w, log_1mw):
    """``ln A_B`` (module docstring) of a birth from ``k`` classes with ``n_empty`` empty ones;
    ``(1 - w)^(K-1) / g_{1,K}(w) = 1 / K``."""
    delta = hyper.delta
    return (log_prior_k(hyper, k + 1) - log_prior_k(hyper, k)
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


def _split(u, data: LCData, hyper: Hyper, state: LCState, n_pk):
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


def _merge(u, data: LCData, hyper: Hyper, state: LCState, n_pk):
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


def _birth(u_w, spare, data: LCData, hyper: Hyper, state: LCState, n_k):
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


def _death(u_pick, data: LCData, hyper: Hyper, state: LCState, n_k):
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


def sweep(key, data: LCData, prior: LCPrior, hyper: Hyper, carry):
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
