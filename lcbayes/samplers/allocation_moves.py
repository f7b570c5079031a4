"""The moves of the collapsed allocation sampler (:mod:`lcbayes.samplers.allocation`, whose
module docstring states the target and derives the acceptance ratios): the Gibbs update of
every row's class, a uniformly random relabelling of the active classes, and one
ejection / absorption move. Pure functions of one chain's :class:`AllocState` at one heat,
jitted inside the sampler's scan and vmapped over heats and chains."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln, logsumexp

from .gibbs import LCData
from .loops import padded_size

__all__ = ["AllocData", "AllocPrior", "AllocState", "alloc_data", "collapsed_loglik",
           "gibbs_allocations", "initial_state", "log_allocation_prior", "p_eject",
           "permute_labels", "sweep", "trimmed_rows"]

#: Smallest padded row axis of the allocation sampler (data sets of similar size share one
#: compiled sampler; every padded row costs a step of the sequential Gibbs scan).
MIN_ROWS = 16


class AllocData(NamedTuple):
    """The rows as the moves read them: ``x (N, J, R)`` one-hot values (zeros for a missing
    value and for padding rows), ``w (N,)`` 1 for a row, 0 for padding, ``n_rows`` their
    sum."""

    x: jax.Array
    w: jax.Array
    n_rows: jax.Array


class AllocPrior(NamedTuple):
    """``ln p(K)`` for ``K = 1..S``, the weights' ``alpha``, the items' ``lam (J, R)`` (1 in
    padded categories) and ``lam_total (J,)``, and the ejection's Beta shape ``a``."""

    log_prior_k: jax.Array
    alpha: jax.Array
    lam: jax.Array
    lam_total: jax.Array
    a: jax.Array


class AllocState(NamedTuple):
    """One chain at one heat: ``k`` active classes (the first ``k`` of ``S`` slots), ``z (N,)``
    every row's class, ``n (S,)`` rows per class, ``nr (S, J, R)`` rows per class and value of
    every item (missing values count nowhere)."""

    k: jax.Array
    z: jax.Array
    n: jax.Array
    nr: jax.Array


def alloc_data(lc: LCData) -> AllocData:
    """:class:`AllocData` of the rows of :func:`lcbayes.samplers.gibbs.lc_data` (padded
    rows included: the caller trims them, :func:`trimmed_rows`)."""
    w = jnp.asarray(lc.row_weights)
    x = jnp.asarray(lc.one_hot)[jnp.asarray(lc.rows)] * w[:, None, None]
    return AllocData(x, w, w.sum())


def trimmed_rows(lc: LCData) -> LCData:
    """``lc`` with its row axis padded to at least :data:`MIN_ROWS` instead of
    :data:`lcbayes.samplers.gibbs.MIN_ROWS` (the rows are a sequential scan here)."""
    n = padded_size(int(np.asarray(lc.row_weights).sum()), MIN_ROWS)
    return lc._replace(rows=lc.rows[:n], row_weights=lc.row_weights[:n])


def initial_state(data: AllocData, slots: int, k) -> AllocState:
    """Rows dealt to the first ``k`` classes in turn."""
    z = (jnp.arange(data.w.shape[0]) % k).astype(jnp.int32)
    onehot = jax.nn.one_hot(z, slots) * data.w[:, None]
    return AllocState(jnp.asarray(k, dtype=jnp.int32), z, onehot.sum(axis=0),
                      jnp.einsum("ns,njr->sjr", onehot, data.x))


def collapsed_loglik(prior: AllocPrior, nr: jax.Array) -> jax.Array:
    """``ln p(y | z, K)``: per class and item ``ln B(lam + n_kj) - ln B(lam)`` (Dirichlet-
    multinomial; an empty class adds 0)."""
    per_value = gammaln(prior.lam + nr) - gammaln(prior.lam)
    per_item = gammaln(prior.lam_total + nr.sum(-1)) - gammaln(prior.lam_total)
    return per_value.sum() - per_item.sum()


def log_allocation_prior(prior: AllocPrior, k, n: jax.Array, n_rows) -> jax.Array:
    """``ln p(K) + ln p(z | K)`` with ``p(z | K) = Γ(K a) / Γ(K a + N) prod_k Γ(a + n_k) /
    Γ(a)`` (``a = alpha``; empty slots add 0)."""
    ka = k * prior.alpha
    return (prior.log_prior_k[k - 1] + gammaln(ka) - gammaln(ka + n_rows)
            + jnp.sum(gammaln(prior.alpha + n) - gammaln(prior.alpha)))


def _log_target(prior: AllocPrior, data: AllocData, k, n, nr, heat) -> jax.Array:
    return log_allocation_prior(prior, k, n, data.n_rows) + heat * collapsed_loglik(prior, nr)


def gibbs_allocations(key, data: AllocData, prior: AllocPrior, state: AllocState, heat
                      ) -> AllocState:
    """Every row's class in turn from ``p(z_i = k | z_-i, y) ∝ (alpha + n_k^-i)
    prod_{j seen} [(lam_jy + n_kjy^-i) / (sum lam_j + n_kj^-i)]^heat`` (one ``lax.scan`` over
    the rows). The logs come from tables over the possible counts ``0 .. N`` (half the time
    of taking them afresh), the class counts are updated by dense one-hot arithmetic (cheaper
    than scatters under ``vmap``)."""
    slots, n_items = state.n.shape[0], data.x.shape[1]
    active = jnp.arange(slots) < state.k
    observed = data.x.sum(-1)  # (N, J)
    values = jnp.argmax(data.x, axis=-1)  # (N, J); 0 where missing (then not observed)
    possible = jnp.arange(data.x.shape[0] + 1)
    log_num = jnp.log(prior.lam[:, :, None] + possible)  # (J, R, N + 1)
    log_den = jnp.log(prior.lam_total[:, None] + possible)  # (J, N + 1)
    slot, item = jnp.arange(slots), jnp.arange(n_items)[None, :]

    def row(carry, inputs):
        n, nr = carry
        x, seen, y, w, s, u = inputs
        out = (slot == s) * w
        n, nr = n - out, nr - out[:, None, None] * x
        same = jnp.sum(nr * x, axis=-1).astype(jnp.int32)  # (S, J) rows sharing y_ij
        total = nr.sum(-1).astype(jnp.int32)  # (S, J) rows with item j seen
        predictive = (log_num[item, y[None, :], same] - log_den[item, total]) @ seen
        logits = jnp.where(active, jnp.log(prior.alpha + n) + heat * predictive, -jnp.inf)
        cdf = jnp.cumsum(jnp.exp(logits - logits.max()))
        new = jnp.minimum((u * cdf[-1] > cdf).sum(), slots - 1).astype(jnp.int32)
        new = jnp.where(w > 0, new, s)
        into = (slot == new) * w
        return (n + into, nr + into[:, None, None] * x), new

    u = jax.random.uniform(key, state.z.shape)
    (n, nr), z = jax.lax.scan(row, (state.n, state.nr),
                              (data.x, observed, values, data.w, state.z, u))
    return AllocState(state.k, z, n, nr)


def permute_labels(key, state: AllocState) -> AllocState:
    """The active classes relabelled by a uniformly random permutation (the target is
    symmetric in the labels, so the move is always accepted)."""
    slots = state.n.shape[0]
    order = jax.random.uniform(key, (slots,)) + (jnp.arange(slots) >= state.k) * 2.0
    perm = jnp.argsort(order)            # new slot i holds old slot perm[i]
    inverse = jnp.argsort(perm)
    return AllocState(state.k, inverse[state.z].astype(jnp.int32), state.n[perm],
                      state.nr[perm])


def p_eject(k, slots: int) -> jax.Array:
    """Probability of proposing an ejection with ``k`` classes: 1 at ``k = 1``, 0 at
    ``k = slots``, else 1/2 (absorption otherwise)."""
    return jnp.where(k == 1, 1.0, jnp.where(k >= slots, 0.0, 0.5))


def _log_q_eject(prior: AllocPrior, n_small, stay, m, k, slots: int) -> jax.Array:
    """``ln q(z -> z')`` of the ejection from ``k`` classes (counts ``n_small``) to ``k + 1``
    whose new last class holds ``m`` rows of one class (``stay`` of its rows remain): one source
    class when ``m > 0``; with ``m = 0``, every class could have ejected nothing."""
    a = prior.a
    log_beta_aa = 2.0 * gammaln(a) - gammaln(2.0 * a)

    def log_beta(x, y):
        return gammaln(x) + gammaln(y) - gammaln(x + y)

    none = logsumexp(jnp.where(jnp.arange(slots) < k, log_beta(a, a + n_small), -jnp.inf))
    chosen = jnp.where(m > 0, log_beta(a + m, a + stay), none)
    return jnp.log(p_eject(k, slots)) - jnp.log(k) + chosen - log_beta_aa


def _log_q_absorb(m, k_big, slots: int) -> jax.Array:
    """``ln q(z' -> z)`` of absorbing the last of ``k_big`` classes (``m`` rows) into one of
    the others, chosen uniformly: one choice gives ``z`` when ``m > 0``, all do when
    ``m = 0``."""
    small = k_big - 1
    return (jnp.log1p(-p_eject(k_big, slots)) + jnp.where(m > 0, 0.0, jnp.log(small))
            - jnp.log(small))


def eject_absorb(key, data: AllocData, prior: AllocPrior, state: AllocState, heat
                 ) -> tuple[AllocState, jax.Array, jax.Array]:
    """One ejection (probability :func:`p_eject`) or absorption, accepted by Metropolis-
    Hastings; returns ``(state, ejection proposed, accepted)``."""
    k, z, n, nr = state
    slots = n.shape[0]
    k_move, k_j, k_p, k_u, k_acc = jax.random.split(key, 5)
    eject = jax.random.uniform(k_move) < p_eject(k, slots)
    current = _log_target(prior, data, k, n, nr, heat)
    # ejection: rows of class j move to the new class k with probability p ~ Beta(a, a)
    j = jax.random.randint(k_j, (), 0, k)
    new = jnp.minimum(k, slots - 1)
    p = jax.random.beta(k_p, prior.a, prior.a)
    moved = ((z == j) & (jax.random.uniform(k_u, z.shape) < p)) * data.w
    m, mx = moved.sum(), jnp.einsum("n,njr->jr", moved, data.x)
    e_state = AllocState(k + 1, jnp.where(moved > 0, new, z).astype(jnp.int32),
                         n.at[j].add(-m).at[new].add(m), nr.at[j].add(-mx).at[new].add(mx))
    e_ratio = (_log_target(prior, data, k + 1, e_state.n, e_state.nr, heat) - current
               + _log_q_absorb(m, k + 1, slots)
               - _log_q_eject(prior, n, n[j] - m, m, k, slots))
    # absorption: the last class (k - 1) joins class i, uniform among the others
    last = jnp.maximum(k - 1, 0)
    i = jax.random.randint(k_j, (), 0, jnp.maximum(k - 1, 1))
    m_last = n[last]
    a_state = AllocState(k - 1, jnp.where(z == last, i, z).astype(jnp.int32),
                         n.at[i].add(m_last).at[last].set(0.0),
                         nr.at[i].add(nr[last]).at[last].set(0.0))
    a_ratio = (_log_target(prior, data, k - 1, a_state.n, a_state.nr, heat) - current
               + _log_q_eject(prior, a_state.n, n[i], m_last, k - 1, slots)
               - _log_q_absorb(m_last, k, slots))
    ratio = jnp.where(eject, e_ratio, a_ratio)
    accepted = jnp.log(jax.random.uniform(k_acc)) < ratio
    proposal = jax.tree_util.tree_map(lambda e, a: jnp.where(eject, e, a), e_state, a_state)
    state = jax.tree_util.tree_map(lambda p_, s: jnp.where(accepted, p_, s), proposal, state)
    return state, eject, accepted


def sweep(key, data: AllocData, prior: AllocPrior, state: AllocState, heat
          ) -> tuple[AllocState, jax.Array, jax.Array]:
    """Gibbs updates of every row's class, a random relabelling, one ejection or absorption
    (at ``heat``); returns ``(state, ejection proposed, accepted)``."""
    k_gibbs, k_perm, k_move = jax.random.split(key, 3)
    state = gibbs_allocations(k_gibbs, data, prior, state, heat)
    state = permute_labels(k_perm, state)
    return eject_absorb(k_move, data, prior, state, heat)
